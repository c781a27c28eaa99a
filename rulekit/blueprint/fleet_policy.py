"""The fleet policy as data: defaults from `rulekit/data/fleet_policy.toml` (each with
the peer it came from), overridden by a Blueprint config's `[fleet]` section.

`FleetPolicy.defaults()`, `FleetPolicy.from_section(sec)` (a config `Section`:
every bad key or value is a located RK602, collected, the default kept) and
`FleetPolicy.from_table(dict)`.  Durations are seconds.  Reads that one data file;
decides nothing.
"""
from __future__ import annotations

import tomllib
from dataclasses import fields, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

from rulekit.blueprint.model import parse_duration
from rulekit.rules.records import dataclass

DEFAULTS_FILE = Path(__file__).resolve().parent.parent / "data" / "fleet_policy.toml"
DURATIONS = ("window", "episode_gap", "clear_after_runtime", "clear_after_quiet", "breaker_window")
COUNTS = ("suspect_after", "min_users", "quarantine_after", "escalate_after_resets", "clear_after_clean",
          "max_new_drains")


@dataclass(frozen=True)
class FleetPolicy:
    window: float
    episode_gap: float
    suspect_after: int
    min_users: int
    quarantine_after: int
    escalate_after_resets: int
    clear_after_clean: int
    clear_after_runtime: float
    clear_after_quiet: float
    breaker_share: float
    breaker_window: float
    max_new_drains: int
    use_in_verdicts: bool
    ambiguous: tuple[str, ...]
    classes: tuple[tuple[str, tuple[str, ...]], ...]  # (class, symptom prefixes / names)
    fleet_size: int | None = None  # the fleet's node count; None: the nodes the store saw in the window

    @staticmethod
    def defaults() -> "FleetPolicy":
        return _defaults()

    @staticmethod
    def from_table(table: dict[str, Any]) -> "FleetPolicy":
        """Defaults overridden by a plain table (ValueError on a bad key or value)."""
        errors: list[str] = []
        pol = _apply(_defaults(), table, lambda msg, key=None: errors.append(msg))
        if errors:
            raise ValueError("; ".join(errors))
        return pol

    @staticmethod
    def from_section(sec: Any, base: "FleetPolicy | None" = None) -> "FleetPolicy":
        """`base` (default: the defaults) overridden by a config `Section` (errors recorded at their key)."""
        return _apply(base or _defaults(), sec.table, sec.error)

    def fault_class(self, symptom: str) -> str:
        for name, members in self.classes:
            if any(symptom == m or (m.endswith(("-", "_")) and symptom.startswith(m)) for m in members):
                return name
        return symptom

    def is_ambiguous(self, symptom: str | None) -> bool:
        exact, prefixes = _matcher(self.ambiguous)
        return bool(symptom) and (symptom in exact or symptom.startswith(prefixes))  # type: ignore[union-attr]

    def to_dict(self) -> dict[str, Any]:
        d = {f.name: getattr(self, f.name) for f in fields(self)}
        d["ambiguous"] = list(self.ambiguous)
        d["classes"] = {k: list(v) for k, v in self.classes}
        return d


KEYS = {f.name for f in fields(FleetPolicy)}


@lru_cache(maxsize=64)
def _matcher(names: tuple[str, ...]) -> tuple[frozenset[str], tuple[str, ...]]:
    """(exact names, prefixes): an entry ending in `-` or `_` is a prefix."""
    return frozenset(n for n in names if not n.endswith(("-", "_"))), tuple(n for n in names if n.endswith(("-", "_")))


@lru_cache(maxsize=1)
def _defaults() -> FleetPolicy:
    data = tomllib.loads(DEFAULTS_FILE.read_text(encoding="utf-8"))
    kw: dict[str, Any] = {k: parse_duration(data[k]) for k in DURATIONS}
    kw.update({k: int(data[k]) for k in COUNTS})
    kw.update(breaker_share=float(data["breaker_share"]), use_in_verdicts=bool(data["use_in_verdicts"]),
              ambiguous=tuple(data["ambiguous"]),
              classes=tuple((k, tuple(v)) for k, v in data.get("classes", {}).items()))
    return FleetPolicy(**kw)


def _apply(pol: FleetPolicy, table: dict[str, Any], error: Any) -> FleetPolicy:
    changes: dict[str, Any] = {}
    for key, v in table.items():
        if key not in KEYS:
            error(f"unknown key `{key}` in [fleet]; known keys: {', '.join(sorted(KEYS))}", key)
        elif key in DURATIONS:
            try:
                d = parse_duration(v) if isinstance(v, (str, int, float)) and not isinstance(v, bool) else None
            except ValueError as e:
                error(f"`{key}` in [fleet]: {e}", key)
                continue
            if d is None or d <= 0:
                error(f"`{key}` in [fleet] must be a positive duration (seconds, or 30m, 24h, 14d)", key)
            else:
                changes[key] = d
        elif key in COUNTS or key == "fleet_size":
            if isinstance(v, bool) or not isinstance(v, int) or v < (0 if key in ("max_new_drains",) else 1):
                error(f"`{key}` in [fleet] must be a {'non-negative' if key == 'max_new_drains' else 'positive'} "
                      "integer", key)
            else:
                changes[key] = v
        elif key == "breaker_share":
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v <= 1:
                error("`breaker_share` in [fleet] must be a number in (0, 1]", key)
            else:
                changes[key] = float(v)
        elif key == "use_in_verdicts":
            if not isinstance(v, bool):
                error("`use_in_verdicts` in [fleet] must be true or false", key)
            else:
                changes[key] = v
        elif key == "ambiguous":
            if not isinstance(v, list) or not all(isinstance(x, str) and x for x in v):
                error("`ambiguous` in [fleet] must be a list of symptom names (a trailing `-` or `_`: a prefix)", key)
            else:
                changes[key] = tuple(v)
        elif key == "classes":
            if not isinstance(v, dict) or not all(isinstance(x, list) and all(isinstance(y, str) and y for y in x)
                                                   for x in v.values()):
                error("`[fleet.classes]` must map a class name to a list of symptom names or prefixes", key)
            else:
                changes[key] = tuple((k, tuple(x)) for k, x in v.items())
    if "quarantine_after" in changes or "suspect_after" in changes:
        q = changes.get("quarantine_after", pol.quarantine_after)
        s = changes.get("suspect_after", pol.suspect_after)
        if q < s:
            error(f"`quarantine_after` ({q}) in [fleet] must not be below `suspect_after` ({s})", "quarantine_after")
            changes.pop("quarantine_after", None)
    return replace(pol, **changes)
