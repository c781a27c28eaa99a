"""Backtest: what a changed corpus would have said of the attempts a result store holds.

The store keeps each attempt's verdict and its kept evidence lines, not the whole
logs it was attributed from (a week of a fleet's logs would not fit); what it keeps
instead is enough to collect them again: the Blueprint config that found them (the
same connectors, rank globs and limits).  `backtest` walks the config's attempts
(discovery as `blueprint run` does it), keeps those whose key the store holds in the
window, collects and attributes each with the changed engine, and compares with the
stored verdict: outcome, root symptom, and the nodes that would newly enter or leave
`bad_nodes` ("this change would have drained these nodes").  An attempt whose logs
can no longer be collected (rotated away, a connector down) is reported as such,
never as unchanged.  Writes nothing; the store is read only.
"""
from __future__ import annotations

import json
import sqlite3
from typing import Any, Callable

from rulekit.blueprint.model import Window
from rulekit.blueprint.orchestrator import Attributor, RunReport, attribute_attempt, discover
from rulekit.blueprint.store import window_sql


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


def backtest(cfg: Any, engine: Any, stored: dict[str, dict[str, Any]], window: Window | None = None,
             on_attempt: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Re-attribute the stored attempts the config still finds with `engine`; the verdicts that move."""
    report = RunReport()
    attributor = Attributor(engine=engine)
    changed, missing, same = [], [], 0
    entering: dict[str, list[str]] = {}
    leaving: dict[str, list[str]] = {}
    seen: set[str] = set()
    for ctx, a, notes in discover(cfg, report, window):
        if a.key not in stored:
            continue
        seen.add(a.key)
        if on_attempt:
            on_attempt(a.key)
        result = attribute_attempt(cfg, attributor, a, ctx.name, notes)
        failed = [c["collector"] for c in result["coverage"]["collectors"] if c["status"] == "failed"]
        if result.get("verdict") is None or failed:
            missing.append({"key": a.key, "why": "evidence could not be collected again: " + (", ".join(failed)
                                                                                            or "no verdict")})
            continue
        before, after = stored[a.key], _summary(result["verdict"])
        if before == after:
            same += 1
            continue
        enter = sorted(set(after["bad_nodes"]) - set(before["bad_nodes"]))
        leave = sorted(set(before["bad_nodes"]) - set(after["bad_nodes"]))
        for n in enter:
            entering.setdefault(n, []).append(a.key)
        for n in leave:
            leaving.setdefault(n, []).append(a.key)
        changed.append({"key": a.key, "before": before, "after": after, "nodes_entering": enter,
                        "nodes_leaving": leave})
    for key in sorted(set(stored) - seen):
        missing.append({"key": key, "why": "the config no longer finds this attempt"})
    for f in report.context_failures:
        missing.append({"key": None, "why": f"context connector {f['collector']} failed: {f['error']}"})
    return {"attempts": len(stored), "rerun": len(seen), "unchanged": same, "changed": changed,
            "nodes_entering": {n: sorted(k) for n, k in sorted(entering.items())},
            "nodes_leaving": {n: sorted(k) for n, k in sorted(leaving.items())}, "not_rerun": missing}
