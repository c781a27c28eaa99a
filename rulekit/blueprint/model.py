"""The records the Blueprint passes around: a workload `Attempt`, a time `Window`,
one collector's `Coverage`, and `ConnectorError`.

An Attempt is what an execution-context connector establishes about one try of
one workload; `job_record()` turns it into the Service's job payload so one
parser (`rulekit.inputs.jobrecord.parse_job_record`, the one job-record schema) reads it.  No I/O here.
"""
from __future__ import annotations

import re
import time as _time
from dataclasses import asdict, field
from datetime import datetime, timedelta, timezone
from typing import Any

from rulekit.rules.records import dataclass


class ConnectorError(Exception):
    """A connector could not deliver (server down, timeout, bad status, malformed answer)."""


@dataclass
class Attempt:
    job_id: str
    attempt: int = 0
    nodes: tuple[str, ...] = ()
    start: datetime | None = None
    end: datetime | None = None
    state: str | None = None
    exit_code: str | None = None
    name: str | None = None
    user: str | None = None
    partition: str | None = None
    cluster: str | None = None
    tasks_per_node: int | None = None
    ranks: dict[int, str] = field(default_factory=dict)
    failed_node: str | None = None
    allocation_failure: dict[str, Any] | None = None
    execution_cancellation: dict[str, Any] | None = None
    steps: list[dict[str, Any]] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)  # connector specifics (array task, het offset, namespace...)
    source: str = "static"  # the connector that established it

    @property
    def key(self) -> str:
        return f"{self.job_id}#{self.attempt}"

    def job_record(self) -> dict[str, Any]:
        """The Service's `job` payload for this attempt."""
        rec: dict[str, Any] = {"id": self.job_id, "state": self.state, "nodes": list(self.nodes)}
        for k in ("failed_node", "exit_code", "tasks_per_node", "allocation_failure", "execution_cancellation"):
            v = getattr(self, k)
            if v is not None:
                rec[k] = v
        if self.ranks:
            rec["ranks"] = {str(k): v for k, v in self.ranks.items()}
        if self.start:
            rec["start"] = iso(self.start)
        if self.end:
            rec["end"] = iso(self.end)
        return rec

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["nodes"] = list(self.nodes)
        d["start"] = iso(self.start)
        d["end"] = iso(self.end)
        d["ranks"] = {str(k): v for k, v in self.ranks.items()}
        d["key"] = self.key
        return d


@dataclass
class Window:
    since: datetime | None = None
    until: datetime | None = None

    def contains(self, a: Attempt) -> bool:
        t = a.end or a.start
        if t is None:
            return True
        return (self.since is None or t >= self.since) and (self.until is None or t <= self.until)


@dataclass
class Coverage:
    """What one collector did for one attempt."""

    collector: str  # the configured name
    kind: str  # context | logs | metrics | attribution
    type: str  # connector type (local, loki, prometheus, ...)
    status: str = "ok"  # ok | empty | failed
    observations: int = 0
    lines: int = 0
    series: int = 0
    seconds: float = 0.0
    error: str | None = None
    details: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def iso(t: datetime | None) -> str | None:
    return t.astimezone(timezone.utc).isoformat().replace("+00:00", "Z") if t else None


_DUR = re.compile(r"^(\d+)([smhdw])$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_time(text: str, now: float | None = None) -> datetime:
    """RFC 3339 / ISO 8601 (naive means UTC), epoch seconds, or a duration ago (`24h`, `7d`)."""
    s = text.strip()
    m = _DUR.match(s)
    if m:
        now = _time.time() if now is None else now
        return datetime.fromtimestamp(now - int(m.group(1)) * _UNITS[m.group(2)], timezone.utc)
    if re.fullmatch(r"\d+(\.\d+)?", s):
        return datetime.fromtimestamp(float(s), timezone.utc)
    try:
        t = datetime.fromisoformat(s.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"not a time: {text!r} (use RFC 3339, epoch seconds, or a duration ago like 24h)") from None
    return t if t.tzinfo else t.replace(tzinfo=timezone.utc)


def parse_duration(text: str | int | float) -> float:
    if isinstance(text, (int, float)):
        return float(text)
    m = _DUR.match(text.strip())
    if not m:
        raise ValueError(f"not a duration: {text!r} (use 30s, 5m, 1h)")
    return float(int(m.group(1)) * _UNITS[m.group(2)])


def as_datetime(v: Any) -> datetime | None:
    """A TOML datetime/date, an RFC 3339 string or epoch seconds -> aware datetime."""
    if v is None:
        return None
    if isinstance(v, datetime):
        return v if v.tzinfo else v.replace(tzinfo=timezone.utc)
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return datetime.fromtimestamp(v, timezone.utc)
    if isinstance(v, str):
        return parse_time(v)
    raise ValueError(f"not a timestamp: {v!r}")


_PLACEHOLDER = re.compile(r"\{(node|job_id|attempt|job_name|user|namespace|start|end|start_s|end_s)\}")


def template_values(attempt: Attempt, node: str | None = None) -> dict[str, str]:
    """What each placeholder stands for, for this attempt (and node)."""
    return {"node": node or "", "job_id": attempt.job_id, "attempt": str(attempt.attempt),
            "job_name": attempt.name or "", "user": attempt.user or "",
            "namespace": str(attempt.extra.get("namespace", "")),
            "start": iso(attempt.start) or "", "end": iso(attempt.end) or "",
            "start_s": str(int(attempt.start.timestamp())) if attempt.start else "",
            "end_s": str(int(attempt.end.timestamp())) if attempt.end else ""}


def render(template: str, attempt: Attempt, node: str | None = None, values: dict[str, str] | None = None) -> str:
    """Fill `{node}`, `{job_id}`, `{attempt}`, ... ; other braces (PromQL, LogQL) stay as written.
    Untrusted values reach a path, a query or a URL only through `rulekit.blueprint.names`,
    which checks them and passes them here as `values`."""
    vals = template_values(attempt, node) if values is None else values
    return _PLACEHOLDER.sub(lambda m: vals[m.group(1)], template)


def per_node(template: str) -> bool:
    return "{node}" in template


def pad(window_start: datetime | None, window_end: datetime | None, before: float, after: float,
        fallback_hours: float = 1.0) -> tuple[datetime, datetime]:
    end = window_end or datetime.now(timezone.utc)
    start = window_start or end - timedelta(hours=fallback_hours)
    return start - timedelta(seconds=before), end + timedelta(seconds=after)
