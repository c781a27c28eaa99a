"""The orchestrator: attempts -> collectors -> engine -> enriched result -> outputs.

For each attempt the execution-context connectors establish (deduplicated by
`job_id#attempt`), every log and metric connector runs; a connector that fails
is recorded in the coverage and the rest goes on.  Attribution runs embedded
(a `Session` per attempt) or through a running Service (`POST /v1/attribute`).
The verdict is enriched with the attempt, the coverage and whether the
evidence was complete, and handed to every output.  With a fleet memory (the
store the results go to), each attempt is attributed with the `FleetContext`
of its nodes as of its end (`rulekit.blueprint.fleet_memory`).  Prints nothing.
"""
from __future__ import annotations

import contextvars
import dataclasses
import json
import threading
import time
import urllib.error
import urllib.request
from dataclasses import field
from datetime import datetime, timezone
from typing import Any, Callable, Iterator, Sequence

from rulekit.rules.records import dataclass
from rulekit.blueprint import limits
from rulekit.blueprint.config import BlueprintConfig
from rulekit.blueprint.limits import CONNECTOR_DEADLINE_S, Deadline
from rulekit.blueprint.connectors.base import Output
from rulekit.blueprint.keptlogs import keep
from rulekit.blueprint.linecontext import evidence_context
from rulekit.blueprint.metrics_shape import series_dict
from rulekit.blueprint.model import Attempt, ConnectorError, Coverage, Window, iso
from rulekit.engine.session import Session
from rulekit.inputs.fleet import FleetContext
from rulekit.inputs.observation import Observation
from rulekit.inputs.jobrecord import JobRecordError, parse_job_record

SCHEMA = "rulekit.blueprint.result/1"
KEPT_LOGS = "kept_logs"  # the result's key holding the kept lines; outputs write it apart or drop it


@dataclass
class RunReport:
    results: list[dict[str, Any]] = field(default_factory=list)
    context_failures: list[dict[str, Any]] = field(default_factory=list)
    failed: list[dict[str, Any]] = field(default_factory=list)  # {"key", "error"}: attempts a worker could not finish


def _run_collector(conn: Any, kind: str, attempt: Attempt, budget: Deadline | None = None) -> tuple[list[Any], Coverage]:
    """One connector for one attempt, under its deadline (the earlier of its own
    `deadline` and the attempt's collection `budget`)."""
    cov = Coverage(collector=conn.name, kind=kind, type=getattr(conn, "TYPE", type(conn).__name__))
    t0 = time.monotonic()
    deadline = Deadline(getattr(conn, "deadline_s", CONNECTOR_DEADLINE_S), f"the deadline of {conn.name}")
    if budget is not None:
        deadline = deadline.earlier(budget)
    grace = ABANDON_GRACE_S if budget is None or budget.seconds is None else min(ABANDON_GRACE_S, budget.seconds / 4)
    items, error = collect_within(lambda: conn.collect(attempt), deadline, grace)
    if error is not None:
        cov.status, cov.error = "failed", error
    cov.seconds = round(time.monotonic() - t0, 3)
    if hasattr(conn, "take_notes"):
        cov.details = conn.take_notes()
    faults = conn.take_faults() if hasattr(conn, "take_faults") else list(getattr(conn, "faults", []) or [])
    if faults:
        shown = "; ".join(faults[:MAX_FAULTS_SHOWN]) + (
            f"; and {len(faults) - MAX_FAULTS_SHOWN} more" if len(faults) > MAX_FAULTS_SHOWN else "")
        if cov.status == "failed":
            cov.error = f"{cov.error}; {shown}"
        else:  # it delivered part of the evidence (or none of it)
            cov.status, cov.error = ("partial" if items else "failed"), shown
        cov.details += faults[MAX_FAULTS_SHOWN:]
    if kind == "logs":
        cov.observations = len(items)
        cov.lines = sum(len(o.lines) if o.lines is not None else _count_lines(o) for o in items)
    else:
        cov.series = len(items)
    if cov.status == "ok" and not items:
        cov.status = "empty"
    return items, cov


MAX_FAULTS_SHOWN = 5
ABANDON_GRACE_S = 5.0  # a connector still running this long after its deadline is left behind


def collect_within(fn: Callable[[], Any], deadline: Deadline,
                   grace: float = ABANDON_GRACE_S) -> tuple[list[Any], str | None]:
    """`fn()` (a connector's collect) in a thread of its own, its deadline current there:
    (items, None), or ([], why) when it raised or did not return by its deadline plus a
    grace (a connector that ignores its deadline is left running; its answer is dropped)."""
    box: dict[str, Any] = {}
    ctx = contextvars.copy_context()

    def run() -> None:
        try:
            with limits.running_until(deadline):
                box["items"] = list(fn() or [])
        except ConnectorError as e:
            box["error"] = str(e)
        except Exception as e:  # a connector's bug must not lose the other evidence
            box["error"] = f"internal error in connector: {type(e).__name__}: {e}"
        except BaseException as e:  # noqa: BLE001 - SystemExit and the like from a user's connector
            box["error"] = f"the connector raised {type(e).__name__}: {e}"

    t = threading.Thread(target=ctx.run, args=(run,), name="rulekit-connector", daemon=True)
    t.start()
    left = deadline.left()
    t.join(None if left is None else max(0.0, left) + grace)
    if t.is_alive():
        return [], (f"did not finish within {deadline.what} of {deadline.seconds:g} s "
                    f"(+{grace:g} s grace); left running, its evidence is not used")
    if "error" in box:
        return box.get("items", []), box["error"]
    return box["items"], None


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

    def attribute(self, attempt: Attempt, observations: list[Observation], metrics: list[Any],
                  fleet: FleetContext | None = None) -> dict[str, Any]:
        if self.service_url:
            return self._post(attempt, observations, metrics, fleet)
        try:
            job = parse_job_record(attempt.job_record())  # the one job-record schema (job.toml, the Service)
        except JobRecordError as e:
            raise ConnectorError(f"the attempt's job record is invalid: {e}") from None
        # the payload reader keeps no times; the engine dates year-less syslog lines from the start
        job = dataclasses.replace(job, start=attempt.start, end=attempt.end)
        with Session(self.engine, job, fleet=fleet) as s:
            s.ingest_batch(observations)
            ingest_metrics = getattr(s, "ingest_metrics", None)
            if metrics and ingest_metrics is not None:
                ingest_metrics(metrics)
            return s.attribute()

    def _post(self, attempt: Attempt, observations: list[Observation], metrics: list[Any],
              fleet: FleetContext | None = None) -> dict[str, Any]:
        payload = {"job": attempt.job_record(), "observations": [observation_payload(o) for o in observations],
                   "metrics": [series_dict(m) for m in metrics]}
        if fleet is not None:
            payload["fleet"] = fleet.to_dict()
        body = json.dumps(payload).encode()
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
                      context_name: str = "context", context_notes: list[str] | None = None,
                      collect_s: float | None = None, fleet: FleetContext | None = None,
                      fleet_note: str | None = None) -> dict[str, Any]:
    """Collect, attribute and enrich one attempt: the AttributionBlueprintResult.
    `collect_s`: seconds all its connectors together may take (each also has its own
    deadline); what they gathered by then is attributed and stored.  `fleet`: its nodes'
    records (None: judged on its own evidence; `fleet_note` says why, if it failed)."""
    budget = Deadline(collect_s, "the attempt's collection budget") if collect_s else None
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
        items, cov = _run_collector(conn, "logs", attempt, budget)
        observations += items
        coverage.append(cov)
    for conn in cfg.metrics:
        items, cov = _run_collector(conn, "metrics", attempt, budget)
        metrics += items
        coverage.append(cov)
    attr = Coverage(collector="engine", kind="attribution", type=attributor.mode["mode"])
    t0 = time.monotonic()
    verdict: dict[str, Any] | None
    try:
        verdict = attributor.attribute(attempt, observations, metrics, fleet)
    except ConnectorError as e:
        verdict, attr.status, attr.error = None, "failed", str(e)
    attr.seconds = round(time.monotonic() - t0, 3)
    attr.observations = len(observations)
    attr.series = len(metrics)
    if metrics and attributor.service_url is None and verdict is not None and not _engine_takes_metrics():
        attr.details.append(f"{len(metrics)} metric series collected; this engine has no metric input, "
                            "they are stored with the result but not evaluated")
    coverage.append(attr)
    failed = [c for c in coverage if c.status in ("failed", "partial")]
    complete = not failed
    if verdict is not None and fleet_note:
        verdict.setdefault("notes", []).append({"code": "fleet-unavailable", "message": fleet_note})
    if verdict is not None:
        verdict["evidence_complete"] = complete
        if not complete:
            verdict.setdefault("notes", [])
            verdict["notes"].append({"code": "evidence-incomplete", "message": "evidence was incomplete: " + "; ".join(
                f"{c.collector} ({c.type}) {'failed' if c.status == 'failed' else 'delivered part'}: {c.error}"
                for c in failed)})
    context_lines = evidence_context(verdict, observations)
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
        "evidence_context": context_lines,
        # the collected lines, bounded (`rulekit.blueprint.keptlogs`): the store keeps them in their own
        # table, so an attempt can become a job directory again; not part of the result JSON stored or printed
        KEPT_LOGS: keep(observations, context_lines),
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
        deadline = Deadline(getattr(ctx, "deadline_s", CONNECTOR_DEADLINE_S), f"the deadline of {ctx.name}")
        attempts, error = collect_within(lambda: ctx.attempts(window, job_id), deadline)
        if error is not None:
            report.context_failures.append({"collector": ctx.name, "type": ctx.TYPE, "error": error})
            continue
        notes = ctx.take_notes() if hasattr(ctx, "take_notes") else []
        faults = ctx.take_faults() if hasattr(ctx, "take_faults") else []
        if faults:  # it found some attempts, not all: a failure of the run, its attempts still go on
            report.context_failures.append({"collector": ctx.name, "type": ctx.TYPE,
                                            "error": "partial answer: " + "; ".join(faults)})
            notes += [f"fault: {f}" for f in faults]
        for a in attempts:
            if a.key in seen:
                continue
            seen.add(a.key)
            yield ctx, a, notes


def run(cfg: BlueprintConfig, attributor: Attributor, outputs: Sequence[Output], window: Window | None = None,
        job_id: str | None = None, on_result: Callable[[dict[str, Any]], None] | None = None,
        fleet: Any = None) -> RunReport:
    """Every attempt, one after another, in this process (`fleet`: a `FleetMemory`, read
    before each attempt, so it sees every result written before it)."""
    report = RunReport()
    for ctx, a, notes in discover(cfg, report, window, job_id):
        fc, note = fleet.context_for(a) if fleet is not None else (None, None)
        result = attribute_attempt(cfg, attributor, a, ctx.name, notes, fleet=fc, fleet_note=note)
        result["context"]["collector"] = ctx.name
        for out in outputs:
            out.write(result)
        result = {k: v for k, v in result.items() if k != KEPT_LOGS}  # written; a run's report holds no lines
        report.results.append(result)
        if on_result:
            on_result(result)
    return report
