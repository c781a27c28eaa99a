"""One metric series in the shape the engine's metric input takes.

`rulekit.inputs.metrics.MetricSeries(node, name, labels, samples)` when this
checkout has it; otherwise a plain dict {"kind": "metric", "node", "name",
"labels", "samples": [[unix_s, value], ...]}.  `series_dict` reads either.
"""
from __future__ import annotations

from typing import Any

try:  # defined by the Service issue; absent on older checkouts
    from rulekit.inputs.metrics import MetricSeries  # type: ignore
except ImportError:  # pragma: no cover - depends on the checkout
    MetricSeries = None  # type: ignore[assignment,misc]


def make_series(node: str | None, name: str, labels: dict[str, str], samples: list[tuple[float, float]]) -> Any:
    if MetricSeries is not None:
        return MetricSeries(node=node, name=name, labels=labels, samples=samples)
    return {"kind": "metric", "node": node, "name": name, "labels": labels, "samples": samples}


def series_dict(s: Any) -> dict[str, Any]:
    if isinstance(s, dict):
        return {"kind": "metric", "node": s.get("node"), "name": s.get("name"), "labels": dict(s.get("labels") or {}),
                "samples": [[float(t), float(v)] for t, v in s.get("samples") or []]}
    return {"kind": "metric", "node": s.node, "name": s.name, "labels": dict(s.labels),
            "samples": [[float(t), float(v)] for t, v in s.samples]}
