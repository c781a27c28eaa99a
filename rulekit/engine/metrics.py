"""Metric rules over metric series: `evaluate(rule, samples)` (pure) and
`MetricPhase`, which adds the events of every rule that fires to a job's store.

A rule selects series by metric name and labels (every label the rule names
must be equal on the series).  Per sample it computes the aggregate:
- `value`: the sample's value;
- `increase`: how much the counter grew over the window (a drop is a counter
  reset: the new value counts as growth, as Prometheus' `increase()` does);
- `rate`: that increase divided by the seconds it spans.
Without a window, rate and increase look back to the previous sample.  The
condition holds while `aggregate op threshold`; the rule fires, once per
series, at the first sample where it has held for `for` seconds (0: at once).
When the job has a start and an end, only samples inside [start, end] are
evaluated.  The event lands on the series' node, with the firing time as its
timestamp and the aggregate, threshold and labels in its fields.

Does no parsing of rule files and no I/O beyond the event store.
"""
from __future__ import annotations

import operator
from datetime import datetime, timezone
from typing import Callable, Sequence

from rulekit.rules.records import dataclass
from rulekit.rules.corpus import RuleEngine
from rulekit.rules.model import MetricCondition, MetricRule, event_type_name
from rulekit.inputs.jobinfo import JobInfo
from rulekit.inputs.metrics import MetricSeries
from rulekit.engine.store import EventManager

_OPS: dict[str, Callable[[float, float], bool]] = {
    ">": operator.gt, ">=": operator.ge, "<": operator.lt, "<=": operator.le, "==": operator.eq, "!=": operator.ne}


@dataclass(frozen=True)
class Firing:
    """Where a rule fired on one series: the sample index and time, the aggregate's
    value there, the peak while the condition held, and since when it held."""

    index: int
    time: float
    value: float
    peak: float
    since: float


def selects(rule: MetricRule, name: str, labels: dict[str, str]) -> bool:
    return rule.metric == name and all(labels.get(k) == v for k, v in rule.labels)


def aggregate(cond: MetricCondition, samples: Sequence[tuple[float, float]]) -> list[float | None]:
    """The aggregate at each sample (None where it is undefined: rate/increase at the first sample)."""
    if cond.aggregate == "value":
        return [v for _, v in samples]
    out: list[float | None] = [None] * len(samples)
    # growth[i]: counter growth from sample i-1 to i (a reset counts the new value)
    growth = [0.0] * len(samples)
    for i in range(1, len(samples)):
        prev, cur = samples[i - 1][1], samples[i][1]
        growth[i] = cur - prev if cur >= prev else cur
    prefix = [0.0] * len(samples)
    for i in range(1, len(samples)):
        prefix[i] = prefix[i - 1] + growth[i]
    j = 0
    for i in range(1, len(samples)):
        t = samples[i][0]
        if cond.window_s is None:
            j = i - 1
        else:
            while j < i - 1 and samples[j][0] < t - cond.window_s:
                j += 1
        dt = t - samples[j][0]
        inc = prefix[i] - prefix[j]
        if cond.aggregate == "increase":
            out[i] = inc
        elif dt > 0:
            out[i] = inc / dt
    return out


def evaluate(rule: MetricRule, samples: Sequence[tuple[float, float]]) -> Firing | None:
    """The first place the rule's condition has held for its `for` duration, or None."""
    cond = rule.condition
    test = _OPS[cond.op]
    values = aggregate(cond, samples)
    since: float | None = None
    peak = 0.0
    for i, v in enumerate(values):
        if v is None or not test(v, cond.threshold):
            since = None
            continue
        t = samples[i][0]
        if since is None:
            since, peak = t, v
        peak = max(peak, v) if cond.op in (">", ">=") else min(peak, v) if cond.op in ("<", "<=") else v
        if t - since >= cond.for_s:
            return Firing(i, t, v, peak, since)
    return None


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, timezone.utc).isoformat().replace("+00:00", "Z")


def _fmt(x: float) -> str:
    return f"{x:.6g}"


class MetricPhase:
    """Runs the corpus's metric rules over one series and adds their events."""

    def __init__(self, engine: RuleEngine, manager: EventManager, context_id: int, job: JobInfo):
        self.engine = engine
        self.manager = manager
        self.context_id = context_id
        self.job = job

    def window(self, samples: list[tuple[float, float]]) -> list[tuple[float, float]]:
        lo = self.job.start.timestamp() if self.job.start else None
        hi = self.job.end.timestamp() if self.job.end else None
        if lo is None and hi is None:
            return samples
        return [p for p in samples if (lo is None or p[0] >= lo) and (hi is None or p[0] <= hi)]

    def apply(self, series: MetricSeries, rules: Sequence[MetricRule] | None = None) -> int:
        rules = [r for r in (self.engine.metric_rules if rules is None else rules)
                 if selects(r, series.name, series.labels)]
        if not rules:
            return 0
        samples = self.window(sorted(series.samples, key=lambda p: p[0]))
        if not samples:
            return 0
        node = (self.engine.config.canonical_node(series.node) or series.node) if series.node else None
        oc = self.manager.observation_context(self.context_id, "metric", "metric", _iso(samples[0][0]),
                                              _iso(samples[-1][0]), series.label)
        added = 0
        for rule in rules:
            f = evaluate(rule, samples)
            if f is None:
                continue
            c = rule.condition
            symptom = self.engine.registry.canonical(rule.emit.symptom) if rule.emit.symptom else None
            fields = {**dict(series.labels), "metric": series.name, "aggregate": c.aggregate, "value": f.value,
                      "peak": f.peak, "threshold": c.threshold, "since": _iso(f.since), **dict(rule.emit.fields)}
            datum = (f"{series.label} {c.aggregate}={_fmt(f.value)} {c.op} {_fmt(c.threshold)}"
                     f" for {_fmt(f.time - f.since)}s (peak {_fmt(f.peak)})")
            m = self.manager
            m.add(m.row(self.context_id, event_type_name(rule.emit.type), rule.name, oc, _iso(f.time),
                        f.index + 1, datum, node, symptom, fields))
            added += 1
        self.manager.flush()
        return added
