"""The Service path: attribution of normalized observations sent as JSON.

`attribute_payload(engine, payload)` is the pure function behind
`rulekit serve` (HTTP): a job record plus observations in, one verdict out.
Payload:
    {"job": {"id": "1234", "state": "FAILED", "nodes": [...], "tasks_per_node": 8,
             "failed_node": ..., "exit_code": ..., "ranks": {...},
             "allocation_failure": {...}, "execution_cancellation": {...}},
     "observations": [{"source": "syslog", "node": "n1", "format": "text", "lines": ["..."]}, ...]}
Bad payloads raise PayloadError with a message naming the field; nothing here
knows HTTP.
"""
from __future__ import annotations

from datetime import datetime
from typing import Any

from rulekit.diagnostics import RulekitError
from rulekit.rules.corpus import RuleEngine
from rulekit.inputs.jobinfo import ExecutionCancellation, JobInfoBuilder, SchedulerFailure
from rulekit.inputs.observation import Observation
from rulekit.engine.session import Session


class PayloadError(ValueError):
    pass


def _time(v: Any, where: str) -> datetime | None:
    if v is None:
        return None
    if not isinstance(v, str):
        raise PayloadError(f"{where} must be an RFC 3339 string")
    try:
        return datetime.fromisoformat(v.replace("Z", "+00:00"))
    except ValueError:
        raise PayloadError(f"{where} is not an RFC 3339 timestamp: {v!r}") from None


def build_job(job: Any):
    if not isinstance(job, dict) or not job.get("id"):
        raise PayloadError("`job` must be an object with an `id`")
    nodes = job.get("nodes", [])
    if not isinstance(nodes, list) or not all(isinstance(n, str) for n in nodes):
        raise PayloadError("`job.nodes` must be a list of node names")
    try:
        ranks = {int(k): str(v) for k, v in (job.get("ranks") or {}).items()}
    except (AttributeError, ValueError):
        raise PayloadError("`job.ranks` must map rank numbers to node names") from None
    b = JobInfoBuilder(str(job["id"]), job.get("state"), tuple(nodes), failed_node=job.get("failed_node"),
                       exit_code=None if job.get("exit_code") is None else str(job["exit_code"]),
                       tasks_per_node=job.get("tasks_per_node"), ranks=ranks)
    af = job.get("allocation_failure")
    if af is not None:
        if not isinstance(af, dict):
            raise PayloadError("`job.allocation_failure` must be an object")
        b.allocation_failure(SchedulerFailure(str(af.get("allocation_id", "")), str(af.get("state", "")),
                                              af.get("failed_node"), str(af.get("source", "scheduler")),
                                              _time(af.get("time"), "allocation_failure.time")))
    ec = job.get("execution_cancellation")
    if ec is not None:
        if not isinstance(ec, dict):
            raise PayloadError("`job.execution_cancellation` must be an object")
        b.execution_cancellation(ExecutionCancellation(str(ec.get("record_id", "")), str(ec.get("cancelled_by", "")),
                                                       _time(ec.get("source_time"), "execution_cancellation.source_time")))
    return b.build()


def build_observations(items: Any) -> list[Observation]:
    if not isinstance(items, list):
        raise PayloadError("`observations` must be a list")
    out = []
    for i, o in enumerate(items):
        if not isinstance(o, dict) or not isinstance(o.get("source"), str):
            raise PayloadError(f"observations[{i}] needs a string `source`")
        lines = o.get("lines")
        if not isinstance(lines, list) or not all(isinstance(x, str) for x in lines):
            raise PayloadError(f"observations[{i}].lines must be a list of strings")
        out.append(Observation(source=o["source"], format=str(o.get("format", "text")), node=o.get("node"),
                               label=str(o.get("label") or f"observations[{i}]"), lines=lines))
    return out


def attribute_payload(engine: RuleEngine, payload: Any) -> dict[str, Any]:
    if not isinstance(payload, dict):
        raise PayloadError("the request body must be a JSON object")
    try:
        job = build_job(payload.get("job"))
    except RulekitError as e:
        raise PayloadError(str(e)) from None
    observations = build_observations(payload.get("observations", []))
    with Session(engine, job) as s:
        s.ingest_batch(observations)
        return s.attribute()
