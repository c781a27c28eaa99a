"""The one job-record schema: what a job record may hold, wherever it comes from.

`JobRecord` (pydantic) is read by the CLI's `job.toml` reader
(`rulekit.inputs.jobdir`), the Service's payload (`rulekit.service.schema`) and
job-level test cases, so all of them accept and reject exactly the same
records.  `parse_job_record(mapping)` returns a `JobInfo` or raises
`JobRecordError`, whose `problems` are `(loc, msg)` pairs: `loc` is the path of
the offending field (`("nodes", 1)`, `("allocation_failure", "time")`), for the
caller to turn into a file position or a JSON error body.

Rules of the record:
- `id`: a non-empty string;  `state`: a known Slurm-like state (SLURM_STATES;
  `CANCELLED by 123` and `FAILED+` are read as their base state);
- `nodes`: a list of strings;  `tasks_per_node`: an integer >= 1;
- `ranks`: rank number (>= 0) -> node name, every node among `nodes`;
- `start` / `end`: RFC 3339 timestamps with an offset (end not before start);
  they reach `JobInfo` (year of year-less syslog stamps, metric windows);
- `failed_node`: a string;  `exit_code`: an integer (or Slurm's `code:signal`
  string, as sacct prints it: "1:0");
- `allocation_failure` / `execution_cancellation`: the spec's two scheduler
  inputs (their consistency checks are `JobInfoBuilder`'s, reported at the table).

Validates only; reads no file and knows no HTTP.
"""
from __future__ import annotations

import re
from datetime import date, datetime, time, timezone
from typing import Any, Mapping, Optional

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr, ValidationError, ValidationInfo, field_validator

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


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class AllocationFailureRecord(_Strict):
    """The allocation's failure as the scheduler reported it."""

    allocation_id: StrictStr = Field(min_length=1)
    state: StrictStr = Field(min_length=1)
    failed_node: Optional[StrictStr] = None
    source: StrictStr = "scheduler"
    time: Optional[datetime] = None

    @field_validator("time", mode="before")
    @classmethod
    def _rfc3339(cls, v: Any) -> datetime | None:
        return parse_time(v)


class ExecutionCancellationRecord(_Strict):
    """A cancellation the caller established for this record."""

    record_id: StrictStr = Field(min_length=1)
    cancelled_by: StrictStr = Field(min_length=1)
    source_time: datetime

    @field_validator("source_time", mode="before")
    @classmethod
    def _rfc3339(cls, v: Any) -> datetime | None:
        return parse_time(v)


class JobRecord(_Strict):
    """One scheduler job record (see the module docstring for the rules)."""

    id: StrictStr = Field(min_length=1, max_length=256)
    state: Optional[StrictStr] = None
    nodes: list[StrictStr] = Field(default_factory=list, max_length=100_000)
    start: Optional[datetime] = None
    end: Optional[datetime] = None
    failed_node: Optional[StrictStr] = None
    exit_code: Optional[str] = None
    tasks_per_node: Optional[StrictInt] = Field(default=None, ge=1, le=1_000_000)
    ranks: dict[StrictStr, StrictStr] = Field(default_factory=dict)
    allocation_failure: Optional[AllocationFailureRecord] = None
    execution_cancellation: Optional[ExecutionCancellationRecord] = None

    @field_validator("state")
    @classmethod
    def _known_state(cls, v: str | None) -> str | None:
        if v is None:
            return None
        parts = v.upper().split()
        base = parts[0].rstrip("+") if parts else ""
        if base not in SLURM_STATES:
            raise ValueError(f"unknown job state {v[:40]!r}; expected one of {', '.join(sorted(SLURM_STATES))}")
        return base

    @field_validator("exit_code", mode="before")
    @classmethod
    def _exit_code(cls, v: Any) -> str | None:
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

    @field_validator("start", "end", mode="before")
    @classmethod
    def _rfc3339(cls, v: Any) -> datetime | None:
        return parse_time(v)

    @field_validator("ranks", mode="before")
    @classmethod
    def _rank_keys(cls, v: Any) -> Any:
        if isinstance(v, Mapping):
            return {str(k) if isinstance(k, int) and not isinstance(k, bool) else k: x for k, x in v.items()}
        return v

    @field_validator("ranks")
    @classmethod
    def _rank_numbers(cls, v: dict[str, str], info: ValidationInfo) -> dict[str, str]:
        known = set(info.data.get("nodes") or ())
        for k, n in v.items():
            if not (k.isascii() and k.isdigit() and len(k) <= 9):
                raise ValueError(f"rank {k[:20]!r} is not a rank number (0, 1, 2, ...)")
            if n not in known:
                raise ValueError(f"rank {k} is mapped to {n[:60]!r}, which is not in `nodes`")
        return v

    @field_validator("end")
    @classmethod
    def _after_start(cls, v: datetime | None, info: ValidationInfo) -> datetime | None:
        start = info.data.get("start")
        if v is not None and start is not None and v < start:
            raise ValueError("`end` is before `start`")
        return v

    def to_jobinfo(self) -> JobInfo:
        b = JobInfoBuilder(self.id, self.state, tuple(self.nodes), start=self.start, end=self.end,
                           failed_node=self.failed_node,
                           exit_code=self.exit_code,
                           tasks_per_node=self.tasks_per_node, ranks={int(k): v for k, v in self.ranks.items()})
        af, ec = self.allocation_failure, self.execution_cancellation
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


# what a type error on a field says (pydantic's own words otherwise)
FIELD_HINTS = {
    "id": "must be a non-empty string",
    "state": "must be a string such as FAILED",
    "nodes": "must be a list of node names (strings)",
    "failed_node": "must be a node name (a string)",
    "tasks_per_node": "must be a positive integer",
    "ranks": "must map rank numbers to node names",
}
_TYPE_ERRORS = {"string_type", "list_type", "int_type", "int_parsing", "dict_type", "greater_than_equal",
                "less_than_equal", "string_too_short", "model_type", "too_long", "string_too_long"}


def problems_of(e: ValidationError, skip: int = 0) -> list[tuple[Loc, str]]:
    """pydantic's errors as (loc, message) pairs, with our wording.  `skip`: how many
    leading loc parts lead to the job record (1 for a Service body's `job`)."""
    out: list[tuple[Loc, str]] = []
    for err in e.errors(include_url=False):
        loc = tuple(err.get("loc", ()))
        msg = err.get("msg", "invalid")
        kind = err.get("type")
        if msg.startswith("Value error, "):
            msg = msg[len("Value error, "):]
        elif kind == "extra_forbidden":
            msg = f"unknown key `{loc[-1]}`" if loc else "unknown key"
        elif kind == "missing":
            msg = "is required"
        elif kind in _TYPE_ERRORS and len(loc) > skip and isinstance(loc[skip], str) and loc[skip] in FIELD_HINTS:
            msg = FIELD_HINTS[loc[skip]] + ("" if kind.endswith("_type") else f" ({msg[0].lower()}{msg[1:]})")
        out.append((loc, msg))
    return out


def parse_job_record(data: Any) -> JobInfo:
    """A mapping (a job.toml's merged tables, a JSON object) -> a validated JobInfo."""
    if not isinstance(data, Mapping):
        raise JobRecordError([((), "the job record must be an object / table")])
    try:
        rec = JobRecord.model_validate(dict(data))
    except ValidationError as e:
        raise JobRecordError(problems_of(e)) from None
    return rec.to_jobinfo()
