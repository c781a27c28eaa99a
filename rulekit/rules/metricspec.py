"""The small languages inside a metric rule, shared by the TOML and DSL front-ends:
a condition (`rate > 10`, `value >= 90`, `increase > 0`) and a duration
(`60`, `"90s"`, `"5m"`, `"1h"`).

Pure functions returning a value or an error message; no spans (the front-end
places the message at the key), no evaluation (that is `rulekit.engine.metrics`).
"""
from __future__ import annotations

import math
import re

from rulekit.rules.model import METRIC_AGGREGATES, METRIC_OPS

_WHEN = re.compile(r"^\s*([A-Za-z_]+)\s*(>=|<=|==|!=|>|<)\s*(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)\s*$")
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$")
_UNIT = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, None: 1.0}
MAX_DURATION = 366 * 86400.0


def parse_condition(text: str) -> tuple[str, str, float] | str:
    """`AGGREGATE OP NUMBER` -> (aggregate, op, threshold), or an error message."""
    m = _WHEN.match(text)
    if not m:
        return (f"condition {text[:60]!r} is not `AGGREGATE OP NUMBER` (e.g. `rate > 10`); "
                f"aggregates: {', '.join(METRIC_AGGREGATES)}; operators: {' '.join(METRIC_OPS)}")
    agg, op, num = m.group(1), m.group(2), float(m.group(3))
    if agg not in METRIC_AGGREGATES:
        return f"unknown aggregate `{agg}` in condition; use one of {', '.join(METRIC_AGGREGATES)}"
    if not math.isfinite(num):
        return f"threshold {m.group(3)[:30]} is not a finite number"
    return agg, op, num


def parse_duration(v: object) -> float | str:
    """Seconds (a number) or a string with a unit (ms s m h d) -> seconds, or an error message."""
    if isinstance(v, bool):
        return "a duration must be seconds (a number) or a string like \"90s\", \"5m\", \"1h\""
    if isinstance(v, (int, float)):
        secs = float(v)
    elif isinstance(v, str):
        m = _DURATION.match(v)
        if not m:
            return f"duration {v[:40]!r} is not a number with a unit (ms, s, m, h, d), e.g. \"90s\" or \"5m\""
        secs = float(m.group(1)) * _UNIT[m.group(2)]
    else:
        return "a duration must be seconds (a number) or a string like \"90s\", \"5m\", \"1h\""
    if not math.isfinite(secs) or secs < 0 or secs > MAX_DURATION:
        return f"duration must be between 0 and {int(MAX_DURATION)} seconds"
    return secs
