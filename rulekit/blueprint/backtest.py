"""Backtest: what a changed corpus would have said of the attempts a result store holds.

Two ways to get an attempt's evidence again.  Through the Blueprint config that found
the attempts (`cfg`; the same connectors, rank globs and limits): `backtest` walks the
config's attempts (discovery as `blueprint run` does it), keeps those whose key the
store holds in the window and collects each once.  Or from the store itself (`cfg`
None): the lines it kept of each attempt (`rulekit.blueprint.keptlogs`); an attempt
stored with only part of its logs (past the store's budget) or none (an older store)
is listed as not re-run, never guessed at.  Each attempt is then attributed with the
changed engine (`head`) and compared with the stored verdict, or, given a `base`
engine (`rulekit diff BASE HEAD --db`), with what `base` says of the same evidence:
outcome, root symptom, and the nodes that would newly enter or leave `bad_nodes`
("this change would have drained these nodes").  An attempt whose logs can no longer
be collected (rotated away, a connector down) is reported as such, never as
unchanged.  Writes nothing; the store is read only.
"""
from __future__ import annotations

import json
import sqlite3
from typing import Any, Callable, Iterable, Iterator, NamedTuple

from rulekit.blueprint.model import Attempt, ConnectorError, Window, as_datetime
from rulekit.blueprint.orchestrator import Attributor, RunReport, _run_collector, discover
from rulekit.blueprint.store import kept_logs, window_sql
from rulekit.inputs.metrics import MetricSeries
from rulekit.inputs.observation import Observation


def _summary(verdict: dict[str, Any]) -> dict[str, Any]:
    rc = verdict.get("root_cause") or {}
    return {"outcome": verdict.get("outcome"), "sub_domain": verdict.get("sub_domain"),
            "root_symptom": rc.get("symptom"), "root_rule": rc.get("rule"),
            "bad_nodes": sorted(b["node"] for b in verdict.get("bad_nodes") or [])}


def stored_verdicts(con: sqlite3.Connection, since: float | None = None,
                    until: float | None = None) -> dict[str, dict[str, Any]]:
    """key -> the stored verdict's summary, for the attempts in the window."""
    where, args = window_sql(since, until)
    sql = f"SELECT r.key, r.result_json FROM results r WHERE {where}"
    return {k: _summary(json.loads(rj).get("verdict") or {}) for k, rj in con.execute(sql, args)}


class Evidence(NamedTuple):
    """One stored attempt's evidence, got again (`problem`: why it could not be)."""

    key: str
    attempt: Attempt | None
    observations: list[Any]
    metrics: list[Any]
    problem: str | None = None


def from_config(cfg: Any, stored: dict[str, Any], window: Window | None = None,
                missing: list[dict[str, Any]] | None = None) -> Iterator[Evidence]:
    """The stored attempts the config still finds, their logs collected again."""
    report = RunReport()
    seen: set[str] = set()
    for _ctx, a, _notes in discover(cfg, report, window):
        if a.key not in stored:
            continue
        seen.add(a.key)
        obs: list[Any] = [Observation(source=r["source"], node=r.get("node"), label=r.get("label"),
                                      lines=list(r["lines"])) for r in a.extra.get("observations") or []]
        metrics: list[Any] = []
        failed = []
        for kind, conns, into in (("logs", cfg.logs, obs), ("metrics", cfg.metrics, metrics)):
            for conn in conns:
                items, cov = _run_collector(conn, kind, a)
                into += items
                if cov.status == "failed":
                    failed.append(cov.collector)
        yield Evidence(a.key, a, obs, metrics,
                       "evidence could not be collected again: " + ", ".join(failed) if failed else None)
    if missing is not None:
        for key in sorted(set(stored) - seen):
            missing.append({"key": key, "why": "the config no longer finds this attempt"})
        for f in report.context_failures:
            missing.append({"key": None, "why": f"context connector {f['collector']} failed: {f['error']}"})


def attempt_of(result: dict[str, Any]) -> Attempt:
    """The stored attempt's record (what its context connector established)."""
    ctx = result.get("context") or {}
    ranks = {}
    for r, n in (ctx.get("ranks") or {}).items():
        try:
            ranks[int(r)] = str(n)
        except (TypeError, ValueError):
            continue
    return Attempt(job_id=str(result["job_id"]), attempt=int(result.get("attempt") or 0),
                   nodes=tuple(str(n) for n in ctx.get("nodes") or ()), start=as_datetime(ctx.get("start")),
                   end=as_datetime(ctx.get("end")), state=ctx.get("state"), exit_code=ctx.get("exit_code"),
                   tasks_per_node=ctx.get("tasks_per_node"), ranks=ranks, failed_node=ctx.get("failed_node"),
                   allocation_failure=ctx.get("allocation_failure"),
                   execution_cancellation=ctx.get("execution_cancellation"), source=str(ctx.get("source") or ""))


def from_store(con: sqlite3.Connection, stored: dict[str, Any]) -> Iterator[Evidence]:
    """The stored attempts, from the lines the store kept of them."""
    for key in sorted(stored):
        row = con.execute("SELECT result_json FROM results WHERE key = ?", (key,)).fetchone()
        kept = kept_logs(con, key)
        if row is None or kept is None:
            yield Evidence(key, None, [], [], "the store kept no logs of this attempt (stored by an older "
                                              "rulekit); give --configs to collect them again")
            continue
        partial = [k.get("name") or k["source"] for k in kept if not k["complete"]]
        if partial:
            yield Evidence(key, None, [], [], "the store kept only the lines around the evidence of "
                           + ", ".join(map(str, partial[:3])) + " (past its budget); give --configs to collect "
                           "them again")
            continue
        result = json.loads(row[0])
        obs = [Observation(source=k["source"], node=k.get("node"), format=k.get("format") or "text",
                           label=k.get("name"), lines=list(r[1]), first_line=int(r[0]))
               for k in kept for r in k["runs"]]
        metrics = [MetricSeries.of(m.get("node"), m["name"], m["samples"], m.get("labels") or {})
                   for m in result.get("metrics") or [] if m.get("samples")]
        yield Evidence(key, attempt_of(result), obs, metrics)


def compare(evidence: Iterable[Evidence], head: Any, stored: dict[str, dict[str, Any]], base: Any = None,
            missing: list[dict[str, Any]] | None = None,
            on_attempt: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Attribute each attempt's evidence with `head` (and `base`, when given, else take the
    stored verdict as the baseline): the verdicts that move, per node."""
    changed: list[dict[str, Any]] = []
    missing = missing if missing is not None else []
    same = rerun = 0
    entering: dict[str, list[str]] = {}
    leaving: dict[str, list[str]] = {}
    heads, bases = Attributor(engine=head), Attributor(engine=base) if base is not None else None
    for ev in evidence:
        if ev.problem is not None or ev.attempt is None:
            missing.append({"key": ev.key, "why": ev.problem or "no attempt record"})
            continue
        rerun += 1
        if on_attempt:
            on_attempt(ev.key)
        try:
            after = _summary(heads.attribute(ev.attempt, ev.observations, ev.metrics))
            before = stored[ev.key] if bases is None else _summary(
                bases.attribute(ev.attempt, ev.observations, ev.metrics))
        except ConnectorError as e:
            rerun -= 1
            missing.append({"key": ev.key, "why": str(e)})
            continue
        if before == after:
            same += 1
            continue
        enter = sorted(set(after["bad_nodes"]) - set(before["bad_nodes"]))
        leave = sorted(set(before["bad_nodes"]) - set(after["bad_nodes"]))
        for n in enter:
            entering.setdefault(n, []).append(ev.key)
        for n in leave:
            leaving.setdefault(n, []).append(ev.key)
        changed.append({"key": ev.key, "before": before, "after": after, "nodes_entering": enter,
                        "nodes_leaving": leave})
    return {"attempts": len(stored), "rerun": rerun, "unchanged": same, "changed": changed,
            "nodes_entering": {n: sorted(k) for n, k in sorted(entering.items())},
            "nodes_leaving": {n: sorted(k) for n, k in sorted(leaving.items())}, "not_rerun": missing}


def backtest(cfg: Any, engine: Any, stored: dict[str, dict[str, Any]], window: Window | None = None,
             on_attempt: Callable[[str], None] | None = None, base: Any = None,
             con: sqlite3.Connection | None = None) -> dict[str, Any]:
    """Re-attribute the stored attempts with `engine` (and `base`): through the config `cfg`,
    or, with `cfg` None, from the lines the store `con` kept."""
    missing: list[dict[str, Any]] = []
    if cfg is not None:
        evidence: Iterable[Evidence] = from_config(cfg, stored, window, missing)
    elif con is not None:
        evidence = from_store(con, stored)
    else:
        raise ValueError("backtest needs a Blueprint config or the store")
    return compare(evidence, engine, stored, base, missing, on_attempt)
