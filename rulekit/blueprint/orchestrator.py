"""The orchestrator: attempts -> collectors -> engine -> enriched result -> outputs.

For each attempt the execution-context connectors establish (deduplicated by
`job_id#attempt`), every log and metric connector runs; a connector that fails
is recorded in the coverage and the rest goes on.  Attribution runs embedded
(a `Session` per attempt) or through a running Service (`POST /v1/attribute`).
The verdict is enriched with the attempt, the coverage and whether the
evidence was complete, and handed to every output.  Prints nothing.
"""
from __future__ import annotations

import dataclasses
import json
import time
import urllib.error
import urllib.request
from dataclasses import field
from datetime import datetime, timezone
from typing import Any, Callable, Iterator, Sequence

from rulekit.rules.records import dataclass
from rulekit.blueprint.config import BlueprintConfig
from rulekit.blueprint.connectors.base import Output
from rulekit.blueprint.linecontext import evidence_context
from rulekit.blueprint.metrics_shape import series_dict
from rulekit.blueprint.model import Attempt, ConnectorError, Coverage, Window, iso
from rulekit.engine.session import Session
from rulekit.inputs.observation import Observation
from rulekit.inputs.jobrecord import JobRecordError, parse_job_record

SCHEMA = "rulekit.blueprint.result/1"


@dataclass
class RunReport:
    results: list[dict[str, Any]] = field(default_factory=list)
    context_failures: list[dict[str, Any]] = field(default_factory=list)
    failed: list[dict[str, Any]] = field(default_factory=list)  # {"key", "error"}: attempts a worker could not finish


def _run_collector(conn: Any, kind: str, attempt: Attempt) -> tuple[list[Any], Coverage]:
    cov = Coverage(collector=conn.name, kind=kind, type=getattr(conn, "TYPE", type(conn).__name__))
    t0 = time.monotonic()
    items: list[Any] = []
    try:
        items = list(conn.collect(attempt) or [])
    except ConnectorError as e:
        cov.status, cov.error = "failed", str(e)
    except Exception as e:  # a connector's bug must not lose the other evidence
        cov.status, cov.error = "failed", f"internal error in connector: {type(e).__name__}: {e}"
    cov.seconds = round(time.monotonic() - t0, 3)
    if hasattr(conn, "take_notes"):
        cov.details = conn.take_notes()
    if kind == "logs":
        cov.observations = len(items)
        cov.lines = sum(len(o.lines) if o.lines is not None else _count_lines(o) for o in items)
    else:
        cov.series = len(items)
    if cov.status == "ok" and not items:
        cov.status = "empty"
    return items, cov


def _count_lines(o: Observation) -> int:
    n = 0
    last = b"\n"
    for chunk in o.chunks():
        n += chunk.count(b"\n")
        last = chunk[-1:] or last
    return n + (0 if last == b"\n" else 1)


def observation_payload(o: Observation) -> dict[str, Any]:
    text = b"".join(o.chunks()).decode("utf-8", "replace") if o.lines is None else None
    lines = list(o.lines) if o.lines is not None else text.splitlines()  # type: ignore[union-attr]
    return {"source": o.source, "format": o.format, "node": o.node, "label": o.name, "lines": lines}


class Attributor:
    """Embedded engine or a Service URL; `attribute(attempt, observations, metrics)` -> verdict."""

    def __init__(self, engine: Any = None, service_url: str | None = None, timeout: float = 300.0):
        self.engine, self.service_url, self.timeout = engine, service_url, timeout

    @property
    def mode(self) -> dict[str, Any]:
        return {"mode": "service", "url": self.service_url} if self.service_url else {"mode": "embedded"}

    def attribute(self, attempt: Attempt, observations: list[Observation], metrics: list[Any]) -> dict[str, Any]:
        if self.service_url:
            return self._post(attempt, observations, metrics)
        try:
            job = parse_job_record(attempt.job_record())  # the one job-record schema (job.toml, the Service)
        except JobRecordError as e:
            raise ConnectorError(f"the attempt's job record is invalid: {e}") from None
        # the payload reader keeps no times; the engine dates year-less syslog lines from the start
        job = dataclasses.replace(job, start=attempt.start, end=attempt.end)
        with Session(self.engine, job) as s:
            s.ingest_batch(observations)
            ingest_metrics = getattr(s, "ingest_metrics", None)
            if metrics and ingest_metrics is not None:
                ingest_metrics(metrics)
            return s.attribute()

    def _post(self, attempt: Attempt, observations: list[Observation], metrics: list[Any]) -> dict[str, Any]:
        body = json.dumps({"job": attempt.job_record(), "observations": [observation_payload(o) for o in observations],
                           "metrics": [series_dict(m) for m in metrics]}).encode()
        url = self.service_url.rstrip("/") + "/v1/attribute"  # type: ignore[union-attr]
        req = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"}, method="POST")
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as r:
                return json.loads(r.read())
        except urllib.error.HTTPError as e:
            detail = e.read()[:500].decode("utf-8", "replace")
            raise ConnectorError(f"the Service answered {e.code}: {detail}") from None
        except (urllib.error.URLError, TimeoutError, OSError) as e:
            raise ConnectorError(f"the Service at {url} is unreachable: {getattr(e, 'reason', e)}") from None
        except json.JSONDecodeError:
            raise ConnectorError(f"the Service at {url} answered something that is not JSON") from None


def attribute_attempt(cfg: BlueprintConfig, attributor: Attributor, attempt: Attempt,
                      context_name: str = "context", context_notes: list[str] | None = None) -> dict[str, Any]:
    """Collect, attribute and enrich one attempt: the AttributionBlueprintResult."""
    # the execution context's own evidence (e.g. Kueue conditions) is the first observation
    records = attempt.extra.get("observations") or []
    observations: list[Observation] = [
        Observation(source=r["source"], node=r.get("node"), label=r.get("label"), lines=list(r["lines"]))
        for r in records]
    ctx_cov = Coverage(collector=context_name, kind="context", type=attempt.source, observations=len(observations),
                       lines=sum(len(r["lines"]) for r in records), details=list(context_notes or []))
    coverage: list[Coverage] = [ctx_cov]
    metrics: list[Any] = []
    for conn in cfg.logs:
        items, cov = _run_collector(conn, "logs", attempt)
        observations += items
        coverage.append(cov)
    for conn in cfg.metrics:
        items, cov = _run_collector(conn, "metrics", attempt)
        metrics += items
        coverage.append(cov)
    attr = Coverage(collector="engine", kind="attribution", type=attributor.mode["mode"])
    t0 = time.monotonic()
    verdict: dict[str, Any] | None
    try:
        verdict = attributor.attribute(attempt, observations, metrics)
    except ConnectorError as e:
        verdict, attr.status, attr.error = None, "failed", str(e)
    attr.seconds = round(time.monotonic() - t0, 3)
    attr.observations = len(observations)
    attr.series = len(metrics)
    if metrics and attributor.service_url is None and verdict is not None and not _engine_takes_metrics():
        attr.details.append(f"{len(metrics)} metric series collected; this engine has no metric input, "
                            "they are stored with the result but not evaluated")
    coverage.append(attr)
    failed = [c for c in coverage if c.status == "failed"]
    complete = not failed
    if verdict is not None:
        verdict["evidence_complete"] = complete
        if not complete:
            verdict.setdefault("notes", [])
            verdict["notes"].append({"code": "evidence-incomplete", "message": "evidence was incomplete: " + "; ".join(
                f"{c.collector} ({c.type}) failed: {c.error}" for c in failed)})
    return {
        "schema": SCHEMA,
        "key": attempt.key,
        "job_id": attempt.job_id,
        "attempt": attempt.attempt,
        "context": {k: v for k, v in attempt.to_dict().items() if k != "extra"} | {
            "extra": {k: v for k, v in attempt.extra.items() if k != "observations"}},
        "verdict": verdict,
        "coverage": {"complete": complete, "collectors": [c.to_dict() for c in coverage]},
        "metrics": [summarize(series_dict(m)) for m in metrics],
        # the raw lines around each piece of evidence, for the dashboard (served from the store)
        "evidence_context": evidence_context(verdict, observations),
        "engine": attributor.mode,
        "attributed_at": iso(datetime.now(timezone.utc)),
    }


def _engine_takes_metrics() -> bool:
    return hasattr(Session, "ingest_metrics")


def summarize(s: dict[str, Any]) -> dict[str, Any]:
    vals = [v for _, v in s["samples"]]
    return {"node": s["node"], "name": s["name"], "labels": s["labels"], "samples": s["samples"],
            "min": min(vals) if vals else None, "max": max(vals) if vals else None}


def discover(cfg: BlueprintConfig, report: RunReport, window: Window | None = None,
             job_id: str | None = None) -> Iterator[tuple[Any, Attempt, list[str]]]:
    """(context connector, attempt, its notes) for every distinct attempt (`job_id#attempt`),
    context by context; a context connector that fails is recorded in `report` and skipped."""
    window = window or Window()
    seen: set[str] = set()
    for ctx in cfg.contexts:
        try:
            attempts = list(ctx.attempts(window, job_id))
        except ConnectorError as e:
            report.context_failures.append({"collector": ctx.name, "type": ctx.TYPE, "error": str(e)})
            continue
        except Exception as e:
            report.context_failures.append({"collector": ctx.name, "type": ctx.TYPE,
                                            "error": f"internal error in connector: {type(e).__name__}: {e}"})
            continue
        notes = ctx.take_notes() if hasattr(ctx, "take_notes") else []
        for a in attempts:
            if a.key in seen:
                continue
            seen.add(a.key)
            yield ctx, a, notes


def run(cfg: BlueprintConfig, attributor: Attributor, outputs: Sequence[Output], window: Window | None = None,
        job_id: str | None = None, on_result: Callable[[dict[str, Any]], None] | None = None) -> RunReport:
    """Every attempt, one after another, in this process."""
    report = RunReport()
    for ctx, a, notes in discover(cfg, report, window, job_id):
        result = attribute_attempt(cfg, attributor, a, ctx.name, notes)
        result["context"]["collector"] = ctx.name
        for out in outputs:
            out.write(result)
        report.results.append(result)
        if on_result:
            on_result(result)
    return report
