"""Rules judged by production: per rule, over a window of a result store, the attempts
it fired in, how often it made the root cause, and what operators said of those verdicts.

What the store already keeps is enough: each attempt's evidence rows name the rule
that made each kept event (`evidence.rule`: a rule *fired* in an attempt when one of
its events is in the verdict's evidence, that is, survived refinement; events a
filter or refiner discarded are not stored), and the result JSON names the root
cause's rule.  Operator feedback (`record_feedback`) is a row per judgement with who
and when and the verdict it judged (root symptom, rule, bad nodes at the time), so a
later re-attribution of the attempt neither loses it nor credits a new rule with it;
a rule's precision counts the latest judgement of each attempt whose judged root
cause came from that rule (the read-only query, `rule_stats`, is `rulekit.analysis.storestats`:
the language server shows it too).  `unexplained_in_store` gives `rulekit mine --db` the fallback evidence rows.  Reads and
writes the store only; no HTTP, no engine.
"""
from __future__ import annotations

import json
import sqlite3
from datetime import datetime, timezone
from typing import Any, Iterable, Sequence

from rulekit.analysis.mine import MAX_LINE, Unexplained

from rulekit.analysis.storestats import rule_stats, window_sql  # noqa: F401 - the query lives below, for the language server too

VERDICTS = ("confirmed", "wrong")


class FeedbackError(ValueError):
    """Feedback that cannot be recorded (unknown attempt, bad verdict); the message says which field."""


def resolve_key(con: sqlite3.Connection, attempt: str) -> str:
    """The store key of `attempt` (`job#n`, or a job id alone: its latest attempt)."""
    row = con.execute("SELECT key FROM results WHERE key = ?", (attempt,)).fetchone()
    if row is None:
        row = con.execute("SELECT key FROM results WHERE job_id = ? ORDER BY attempt DESC LIMIT 1",
                          (attempt,)).fetchone()
    if row is None:
        raise FeedbackError(f"attempt: no attempt {attempt!r} in the store (keys look like JOB#N)")
    return row[0]


def record_feedback(con: sqlite3.Connection, attempt: str, verdict: str, who: str, outcome: str | None = None,
                    symptom: str | None = None, nodes: Sequence[str] = (), note: str | None = None,
                    at: str | None = None) -> dict[str, Any]:
    """Record an operator's judgement of an attempt's current verdict; returns the row written.

    `wrong` may carry the right outcome, root symptom and bad nodes; `confirmed` may not
    (it confirms what is stored)."""
    if verdict not in VERDICTS:
        raise FeedbackError(f"verdict: {verdict!r} is not one of {', '.join(VERDICTS)}")
    if not who or not who.strip():
        raise FeedbackError("who: say who judged the verdict")
    if verdict == "confirmed" and (outcome or symptom or nodes):
        raise FeedbackError("outcome/symptom/nodes: only a `wrong` verdict carries the right answer")
    key = resolve_key(con, attempt)
    rj = json.loads(con.execute("SELECT result_json FROM results WHERE key = ?", (key,)).fetchone()[0])
    v = rj.get("verdict") or {}
    rc = v.get("root_cause") or {}
    row = {"key": key, "verdict": verdict, "outcome": outcome, "symptom": symptom, "nodes": sorted(set(nodes)),
           "judged_outcome": v.get("outcome"), "judged_symptom": rc.get("symptom"), "judged_rule": rc.get("rule"),
           "judged_nodes": sorted(b["node"] for b in v.get("bad_nodes") or []), "who": who.strip(),
           "at": at or datetime.now(timezone.utc).isoformat(timespec="seconds"), "note": note}
    con.execute("BEGIN IMMEDIATE")
    try:
        cur = con.execute(
            "INSERT INTO feedback(key, verdict, outcome, symptom, nodes, judged_outcome, judged_symptom, judged_rule, "
            "judged_nodes, who, at, note) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
            (key, verdict, outcome, symptom, json.dumps(row["nodes"]), row["judged_outcome"], row["judged_symptom"],
             row["judged_rule"], json.dumps(row["judged_nodes"]), row["who"], row["at"], note))
        con.execute("COMMIT")
    except Exception:
        con.execute("ROLLBACK")
        raise
    row["id"] = cur.lastrowid
    return row


def feedback_of(con: sqlite3.Connection, key: str) -> list[dict[str, Any]]:
    """Every judgement of one attempt, oldest first."""
    cols = ("id", "key", "verdict", "outcome", "symptom", "nodes", "judged_outcome", "judged_symptom",
            "judged_rule", "judged_nodes", "who", "at", "note")
    out = []
    for r in con.execute(f"SELECT {', '.join(cols)} FROM feedback WHERE key = ? ORDER BY id", (key,)):
        d = dict(zip(cols, r))
        d["nodes"], d["judged_nodes"] = json.loads(d["nodes"]), json.loads(d["judged_nodes"])
        out.append(d)
    return out


def unexplained_in_store(con: Any, fallbacks: Iterable[str], since: float | None = None,
                         until: float | None = None) -> list[Unexplained]:
    """The unexplained error lines a result store holds: its evidence rows of a fallback
    rule (`rulekit.analysis.mine.fallback_rules`; those a verdict kept)."""
    names = sorted(set(fallbacks))
    if not names:
        return []
    win, args = window_sql(since, until)
    where, args = [f"e.rule IN ({','.join('?' * len(names))})", win], [*names, *args]
    sql = ("SELECT r.job_id, e.node, e.source, e.line_num, e.datum FROM evidence e JOIN results r ON r.key = e.key "
           "WHERE " + " AND ".join(where) + " ORDER BY r.key, e.seq")
    return [Unexplained(job, node, src, ln, (datum or "")[:MAX_LINE], source=(src or "").split("/")[0] or None)
            for job, node, src, ln, datum in con.execute(sql, args) if datum]
