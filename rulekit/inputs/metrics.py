"""Metric observations: one node's named time series of (unix seconds, value) samples.

`MetricSeries` is what a metric source hands the engine (`Session.ingest_metrics`):
the Service payload's `"metrics": [...]`, `observations.jsonl` records of
`"kind": "metric"`, and the Blueprint's Prometheus connector all produce it.
Metric rules (`[[metric_rule]]`, DSL `metric_rule`) turn series into events.

    MetricSeries(node="node0017", name="roce_adp_retrans", labels={"device": "mlx5_0"},
                 samples=[(1780283700.0, 0.0), (1780283760.0, 4200.0)])

- `node`: the node the series was measured on (events land on it; None when the
  source does not say, and the events then name no node);
- `name`: the metric name a rule selects (`metric = "..."`);
- `labels`: string labels a rule may also select on (`labels = { device = "mlx5_0" }`);
- `samples`: (unix seconds, value) pairs; `MetricSeries.of(...)` sorts them by time.

`MetricRecord` is the JSON / JSONL wire form, validated by pydantic (finite
numbers, bounded sizes); `to_series()` gives the plain class.  It lives in
`rulekit.inputs.metrics_model` (which imports this module, not the other way):
pydantic costs a start-up ~0.1 s, which a job without metric records does not
pay.  No rule evaluation here (that is `rulekit.engine.metrics`); must not import
pydantic at import time.
"""
from __future__ import annotations

from dataclasses import field

from rulekit.rules.records import dataclass

MAX_SAMPLES = 1_000_000
MAX_LABELS = 64


@dataclass(frozen=True)
class MetricSeries:
    """One node's series of one metric (see the module docstring)."""

    node: str | None
    name: str
    labels: dict[str, str] = field(default_factory=dict)
    samples: list[tuple[float, float]] = field(default_factory=list)

    @staticmethod
    def of(node: str | None, name: str, samples: list[tuple[float, float]] | list[list[float]],
           labels: dict[str, str] | None = None) -> "MetricSeries":
        """A series with samples sorted by time (ties keep their order)."""
        pts = sorted(((float(t), float(v)) for t, v in samples), key=lambda p: p[0])
        return MetricSeries(node=node, name=name, labels=dict(labels or {}), samples=pts)

    @property
    def label(self) -> str:
        """`name{k="v",...}@node`: the series' provenance in evidence."""
        lab = ",".join(f'{k}="{v}"' for k, v in sorted(self.labels.items()))
        where = f"@{self.node}" if self.node else ""
        return f"{self.name}{{{lab}}}{where}" if lab else f"{self.name}{where}"
