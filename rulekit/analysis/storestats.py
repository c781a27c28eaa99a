"""Rule statistics read from a result store, read-only and bounded: the query the
Blueprint's `rulekit rules stats --db` and the language server's hover and code lens
both use (the language server sits on `analysis` and must not import `blueprint`).

Per rule, over a window of the store: the attempts it fired in (one of its events is
in the verdict's evidence), how often its event was the root cause, and the latest
operator judgement of each attempt whose judged root cause came from it (precision =
confirmed / judged).  The store's schema is the Blueprint's (`rulekit.blueprint.store`,
which writes it); this module reads the three tables the query needs and checks that
they are there rather than trusting a version number.

`open_stats_ro` opens a store read-only (SQLite `mode=ro`, no WAL checkpoint, no
write), waits at most `busy_ms` for a writer's lock and gives every query a time
budget (`budget_ms`, a progress handler that interrupts it); every failure (missing,
a folder, locked, not a database, another schema, over budget) is a `StoreReadError`
with a sentence that names the file.  Writes nothing.
"""
from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Any

NEEDED = {"results": ("key", "end_ts", "result_json"), "evidence": ("key", "rule", "symptom"),
          "feedback": ("id", "key", "verdict", "judged_rule")}


class _Bounded(sqlite3.Connection):
    """A connection whose statements a progress handler interrupts past a deadline (`_arm`)."""

    deadline = 0.0
    budget_ms = 0


class StoreReadError(Exception):
    """A store that cannot be read for statistics; the message names the file and why."""


def window_sql(since: float | None, until: float | None, alias: str = "r") -> tuple[str, list[Any]]:
    """(SQL condition, its arguments) for results ending in [since, until] (`alias`: the results table)."""
    where, args = [], []
    if since is not None:
        where.append(f"{alias}.end_ts >= ?")
        args.append(since)
    if until is not None:
        where.append(f"{alias}.end_ts <= ?")
        args.append(until)
    return (" AND ".join(where) or "1"), args


def open_stats_ro(path: str | Path, busy_ms: int = 200, budget_ms: int = 2000) -> sqlite3.Connection:
    """A read-only connection to the store at `path`, each statement bounded by `budget_ms`."""
    p = Path(path)
    if not p.exists():
        raise StoreReadError(f"{p}: no such result store (write one with `rulekit blueprint run --output sqlite:{p}`)")
    if p.is_dir():
        raise StoreReadError(f"{p}: is a folder, not a result store")
    try:
        con = sqlite3.connect(f"file:{p}?mode=ro", uri=True, timeout=busy_ms / 1000, check_same_thread=False,
                              factory=_Bounded)
    except sqlite3.Error as e:
        raise StoreReadError(f"{p}: cannot be opened ({e})") from None
    con.budget_ms = budget_ms
    con.set_progress_handler(lambda: 1 if time.monotonic() > con.deadline else 0, 10_000)
    try:
        _arm(con)
        have = {}
        for table, cols in NEEDED.items():
            rows = con.execute(f"PRAGMA table_info({table})").fetchall()
            have[table] = {r[1] for r in rows}
            missing = [c for c in cols if c not in have[table]]
            if missing:
                raise StoreReadError(f"{p}: not a rulekit result store of this version (table `{table}` "
                                     + ("is missing" if not have[table] else f"lacks {', '.join(missing)}") + ")")
    except sqlite3.Error as e:
        con.close()
        raise StoreReadError(f"{p}: cannot be read ({_why(e)})") from None
    except StoreReadError:
        con.close()
        raise
    return con


def _arm(con: sqlite3.Connection) -> None:
    if isinstance(con, _Bounded):
        con.deadline = time.monotonic() + con.budget_ms / 1000


def _why(e: sqlite3.Error) -> str:
    msg = str(e)
    if "interrupted" in msg:
        return "the query ran past its time budget"
    if "locked" in msg or "busy" in msg:
        return "locked by a writer"
    return msg


def rule_stats(con: sqlite3.Connection, since: float | None = None, until: float | None = None,
               rule: str | None = None) -> dict[str, Any]:
    """{"attempts": attempts in the window, "rules": [per rule: fired, root, confirmed, wrong,
    precision, symptoms]}, most-fired first."""
    _arm(con)
    where, args = window_sql(since, until)
    attempts = con.execute(f"SELECT count(*) FROM results r WHERE {where}", args).fetchone()[0]
    rules: dict[str, dict[str, Any]] = {}

    def entry(name: str) -> dict[str, Any]:
        return rules.setdefault(name, {"rule": name, "fired": 0, "root": 0, "confirmed": 0, "wrong": 0,
                                       "precision": None, "symptoms": []})

    for name, fired, syms in con.execute(
            "SELECT e.rule, count(DISTINCT e.key), group_concat(DISTINCT e.symptom) FROM evidence e "
            f"JOIN results r ON r.key = e.key WHERE e.rule IS NOT NULL AND {where} GROUP BY e.rule", args):
        d = entry(name)
        d["fired"] = fired
        d["symptoms"] = sorted(s for s in (syms or "").split(",") if s)
    for name, n in con.execute(
            "SELECT json_extract(r.result_json, '$.verdict.root_cause.rule') AS rr, count(*) FROM results r "
            f"WHERE rr IS NOT NULL AND {where} GROUP BY rr", args):
        entry(name)["root"] = n
    # the latest judgement of each attempt, credited to the rule whose verdict it judged
    for name, verdict, n in con.execute(
            "SELECT f.judged_rule, f.verdict, count(*) FROM feedback f JOIN results r ON r.key = f.key "
            "WHERE f.id = (SELECT max(g.id) FROM feedback g WHERE g.key = f.key) AND f.judged_rule IS NOT NULL "
            f"AND {where} GROUP BY f.judged_rule, f.verdict", args):
        entry(name)[verdict] = n
    for d in rules.values():
        judged = d["confirmed"] + d["wrong"]
        d["precision"] = round(d["confirmed"] / judged, 3) if judged else None
    out = sorted(rules.values(), key=lambda d: (-d["fired"], -d["root"], d["rule"]))
    if rule is not None:
        out = [d for d in out if d["rule"] == rule]
    return {"attempts": attempts, "since": since, "until": until, "rules": out}


def read_rule_stats(path: str | Path, since: float | None = None, until: float | None = None,
                    busy_ms: int = 200, budget_ms: int = 2000) -> dict[str, Any]:
    """`rule_stats` of the store at `path`, opened read-only for this one query; StoreReadError
    for any store that cannot be read in time."""
    con = open_stats_ro(path, busy_ms, budget_ms)
    try:
        return rule_stats(con, since, until)
    except sqlite3.Error as e:
        raise StoreReadError(f"{path}: cannot be read ({_why(e)})") from None
    finally:
        con.close()
