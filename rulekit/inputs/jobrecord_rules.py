"""The field rules of the one job-record schema (`rulekit.inputs.jobrecord` describes
them), as plain functions and constants: the pydantic model (`jobrecord_model`) and
the plain reader (`jobrecord.plain_record`) both call these, so the two readers
cannot drift, and neither imports the other for them.  Also `JobRecordError` and
`to_jobinfo`, which both readers end with.  Validates only; no pydantic, no I/O.
"""
from __future__ import annotations

import re
from datetime import date, datetime, time, timezone
from typing import Any, Mapping

from rulekit.inputs.jobinfo import (
    SLURM_STATES,
    ExecutionCancellation,
    JobInfo,
    JobInfoBuilder,
    JobInfoError,
    SchedulerFailure,
)

Loc = tuple[Any, ...]
EXIT_CODE_RANGE = (-(2**31), 2**31 - 1)
ID_MAX = 256
NODE_MAX = 256  # characters of a node name (nodes, failed_node, ranks): scheduler data is untrusted
NODES_MAX = 100_000
TASKS_PER_NODE_RANGE = (1, 1_000_000)
_SLURM_EXIT = re.compile(r"^-?\d{1,10}(:\d{1,10})?$")
_RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")


class JobRecordError(ValueError):
    """A rejected job record: every problem, each with the path of its field."""

    def __init__(self, problems: list[tuple[Loc, str]]):
        self.problems = problems
        super().__init__("; ".join(f"{_dotted(loc)}: {msg}" if loc else msg for loc, msg in problems))


def _dotted(loc: Loc) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def parse_time(v: Any) -> datetime | None:
    """An RFC 3339 timestamp (a string, or a TOML offset date-time) -> an aware datetime."""
    if v is None:
        return None
    if isinstance(v, datetime):
        if v.tzinfo is None or v.tzinfo.utcoffset(v) is None:
            raise ValueError("must be an RFC 3339 timestamp with an offset (e.g. 2026-06-01T03:14:02Z), not a local time")
        return v
    if isinstance(v, date):
        return datetime.combine(v, time(), tzinfo=timezone.utc)
    if not isinstance(v, str):
        raise ValueError(f"must be an RFC 3339 timestamp string, not {type(v).__name__}")
    if not _RFC3339.match(v):
        raise ValueError(f"is not an RFC 3339 timestamp with an offset: {v[:60]!r}")
    try:
        return datetime.fromisoformat(v.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise ValueError(f"is not a valid date and time: {v[:60]!r}") from None


# --- the field checks: the model's validators call these, and so does plain_record ---

def known_state(v: str | None) -> str | None:
    """`state` -> its base state (`CANCELLED by 123` -> CANCELLED); ValueError if unknown."""
    if v is None:
        return None
    parts = v.upper().split()
    base = parts[0].rstrip("+") if parts else ""
    if base not in SLURM_STATES:
        raise ValueError(f"unknown job state {v[:40]!r}; expected one of {', '.join(sorted(SLURM_STATES))}")
    return base


def exit_code_text(v: Any) -> str | None:
    """`exit_code` (an integer, or Slurm's `code:signal`) -> its text; ValueError otherwise."""
    if v is None:
        return None
    if isinstance(v, int) and not isinstance(v, bool):
        if not EXIT_CODE_RANGE[0] <= v <= EXIT_CODE_RANGE[1]:
            raise ValueError("must be a 32-bit integer")
        return str(v)
    if isinstance(v, str) and _SLURM_EXIT.match(v):
        return v
    shown = repr(v[:40]) if isinstance(v, str) else type(v).__name__
    raise ValueError(f"must be an integer (or Slurm's `code:signal` string, e.g. \"1:0\"), not {shown}")


def rank_keys(v: Any) -> Any:
    """`ranks` with integer keys written as text (a JSON object's keys are text already)."""
    if isinstance(v, Mapping):
        return {str(k) if isinstance(k, int) and not isinstance(k, bool) else k: x for k, x in v.items()}
    return v


def rank_numbers(v: dict[str, str], nodes: Any) -> dict[str, str]:
    """Every key of `ranks` a rank number and every node among `nodes`; ValueError otherwise."""
    known = set(nodes or ())
    for k, n in v.items():
        if not (k.isascii() and k.isdigit() and len(k) <= 9):
            raise ValueError(f"rank {k[:20]!r} is not a rank number (0, 1, 2, ...)")
        if n not in known:
            raise ValueError(f"rank {k} is mapped to {n[:60]!r}, which is not in `nodes`")
    return v


def end_after_start(v: datetime | None, start: datetime | None) -> datetime | None:
    if v is not None and start is not None and v < start:
        raise ValueError("`end` is before `start`")
    return v


def to_jobinfo(rec: Any) -> JobInfo:
    """A validated record (the model, or `plain_record`'s namespace) -> JobInfo; JobRecordError
    when the builder rejects a scheduler table."""
    b = JobInfoBuilder(rec.id, rec.state, tuple(rec.nodes), start=rec.start, end=rec.end,
                       failed_node=rec.failed_node,
                       exit_code=rec.exit_code,
                       tasks_per_node=rec.tasks_per_node, ranks={int(k): v for k, v in rec.ranks.items()})
    af, ec = rec.allocation_failure, rec.execution_cancellation
    try:
        if af is not None:
            b.allocation_failure(SchedulerFailure(af.allocation_id, af.state, af.failed_node, af.source, af.time))
    except JobInfoError as e:
        raise JobRecordError([(("allocation_failure",), d.message) for d in e.diagnostics]) from None
    try:
        if ec is not None:
            b.execution_cancellation(ExecutionCancellation(ec.record_id, ec.cancelled_by, ec.source_time))
    except JobInfoError as e:
        raise JobRecordError([(("execution_cancellation",), d.message) for d in e.diagnostics]) from None
    return b.build()
