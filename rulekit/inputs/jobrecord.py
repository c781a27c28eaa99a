"""The one job-record schema: what a job record may hold, wherever it comes from.

`JobRecord` (pydantic, `rulekit.inputs.jobrecord_model`, re-exported here) is
read by the CLI's `job.toml` reader (`rulekit.inputs.jobdir`), the Service's
payload (`rulekit.service.schema`) and job-level test cases, so all of them
accept and reject exactly the same records.  `parse_job_record(mapping)` returns
a `JobInfo` or raises `JobRecordError`, whose `problems` are `(loc, msg)` pairs:
`loc` is the path of the offending field (`("nodes", 1)`,
`("allocation_failure", "time")`), for the caller to turn into a file position
or a JSON error body.

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

The field checks are plain functions (`rulekit.inputs.jobrecord_rules`, re-exported
here); the pydantic model calls them.
`parse_job_record` first reads a record with `plain_record`, which accepts only
a record every rule of the model accepts, giving the same values, without
importing pydantic (a start-up cost of ~0.1 s for `rulekit attribute`); any
record it does not accept whole goes to the pydantic model, so every rejection,
and its wording, is pydantic's (tests/test_jobrecord_plain.py checks the two
agree).  Validates only; reads no file and knows no HTTP.  Must not import
pydantic at import time.
"""
from __future__ import annotations

from datetime import datetime
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, Mapping

from rulekit.inputs.jobinfo import JobInfo
from rulekit.inputs.jobrecord_rules import (  # noqa: F401 - re-exported: this module is the schema's public face
    EXIT_CODE_RANGE,
    ID_MAX,
    NODE_MAX,
    NODES_MAX,
    TASKS_PER_NODE_RANGE,
    JobRecordError,
    Loc,
    end_after_start,
    exit_code_text,
    known_state,
    parse_time,
    rank_keys,
    rank_numbers,
    to_jobinfo,
)

if TYPE_CHECKING:
    from pydantic import ValidationError

    from rulekit.inputs.jobrecord_model import AllocationFailureRecord, ExecutionCancellationRecord, JobRecord

# the pydantic models, defined in rulekit.inputs.jobrecord_model on first use (PEP 562)
_MODELS = ("JobRecord", "AllocationFailureRecord", "ExecutionCancellationRecord")


def __getattr__(name: str) -> Any:
    if name in _MODELS:
        from rulekit.inputs import jobrecord_model

        return getattr(jobrecord_model, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# --- the plain reader: a record the model surely accepts, read without pydantic ---

class _Declined(Exception):
    """plain_record does not take this record whole: the model decides."""


_JOB_KEYS = frozenset({"id", "state", "nodes", "start", "end", "failed_node", "exit_code", "tasks_per_node", "ranks",
                       "allocation_failure", "execution_cancellation"})
_ALLOC_KEYS = frozenset({"allocation_id", "state", "failed_node", "source", "time"})
_CANCEL_KEYS = frozenset({"record_id", "cancelled_by", "source_time"})


def _str(v: Any, min_len: int = 0, max_len: int | None = None) -> str:
    if type(v) is not str or len(v) < min_len or (max_len is not None and len(v) > max_len):
        raise _Declined
    return v


def _opt_str(v: Any, max_len: int | None = None) -> str | None:
    return None if v is None else _str(v, 0, max_len)


def _time(v: Any) -> datetime | None:
    try:
        t = parse_time(v)
    except ValueError:
        raise _Declined from None
    if t is not None and type(t) is not datetime:
        raise _Declined  # a datetime subclass: the model says what it makes of it
    return t


def _checked(check: Any, *args: Any) -> Any:
    try:
        return check(*args)
    except ValueError:
        raise _Declined from None


def _plain_exit_code(v: Any) -> Any:
    if v is not None and type(v) not in (int, str):
        raise _Declined  # a subclass (an enum, a str subclass): the model says what it makes of it
    return v


def _table(v: Any, keys: frozenset[str]) -> dict[str, Any]:
    if type(v) is not dict or not keys.issuperset(v):
        raise _Declined
    return v


def plain_record(data: Mapping[str, Any]) -> SimpleNamespace | None:
    """The record as the model would read it (the same field values, as a namespace), or
    None when any field is not plainly valid: missing, of another type (a tuple for a
    list, a str subclass), out of range, or rejected by a check.  Never rejects: a None
    sends the record to the model, which accepts or explains."""
    try:
        d = _table(dict(data), _JOB_KEYS)
        nodes = d.get("nodes", [])
        if type(nodes) is not list or len(nodes) > NODES_MAX:
            raise _Declined
        nodes = [_str(n, 0, NODE_MAX) for n in nodes]
        start, end = _time(d.get("start")), _time(d.get("end"))
        tpn = d.get("tasks_per_node")
        if tpn is not None and (type(tpn) is not int or not TASKS_PER_NODE_RANGE[0] <= tpn <= TASKS_PER_NODE_RANGE[1]):
            raise _Declined
        ranks = _checked(rank_keys, d.get("ranks", {}))
        if type(ranks) is not dict:
            raise _Declined
        ranks = {_str(k): _str(v, 0, NODE_MAX) for k, v in ranks.items()}
        alloc = cancel = None
        if d.get("allocation_failure") is not None:
            a = _table(d["allocation_failure"], _ALLOC_KEYS)
            alloc = SimpleNamespace(allocation_id=_str(a.get("allocation_id"), 1), state=_str(a.get("state"), 1),
                                    failed_node=_opt_str(a.get("failed_node"), NODE_MAX),
                                    source=_str(a.get("source", "scheduler")), time=_time(a.get("time")))
        if d.get("execution_cancellation") is not None:
            c = _table(d["execution_cancellation"], _CANCEL_KEYS)
            source_time = _time(c.get("source_time"))
            if source_time is None:
                raise _Declined
            cancel = SimpleNamespace(record_id=_str(c.get("record_id"), 1), cancelled_by=_str(c.get("cancelled_by"), 1),
                                     source_time=source_time)
        return SimpleNamespace(
            id=_str(d.get("id"), 1, ID_MAX), state=_checked(known_state, _opt_str(d.get("state"))), nodes=nodes,
            start=start, end=_checked(end_after_start, end, start),
            failed_node=_opt_str(d.get("failed_node"), NODE_MAX),
            exit_code=_checked(exit_code_text, _plain_exit_code(d.get("exit_code"))), tasks_per_node=tpn,
            ranks=_checked(rank_numbers, ranks, nodes), allocation_failure=alloc, execution_cancellation=cancel)
    except _Declined:
        return None


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
    plain = plain_record(data)
    if plain is not None:
        return to_jobinfo(plain)
    from pydantic import ValidationError

    from rulekit.inputs.jobrecord_model import JobRecord

    try:
        rec = JobRecord.model_validate(dict(data))
    except ValidationError as e:
        raise JobRecordError(problems_of(e)) from None
    return rec.to_jobinfo()
