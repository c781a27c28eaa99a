"""The SQLite result store: a versioned schema with migrations, WAL, one
transaction per result, an idempotent upsert per attempt, and the read queries
the dashboard and its JSON API use.

Schema version lives in `PRAGMA user_version`; `MIGRATIONS[i]` takes version i
to i+1.  A database written by a newer rulekit is refused, not altered.
Rerunning an attempt replaces its rows (the key is `job_id#attempt`), so a
rerun never duplicates.  Knows nothing of HTTP or HTML.
"""
from __future__ import annotations

import json
import sqlite3
import zlib
from datetime import datetime
from pathlib import Path
from typing import Any, NamedTuple

from rulekit.analysis.storestats import window_sql  # noqa: F401 - shared with the read-only stats query
from rulekit.blueprint.components import components

MIGRATIONS: list[str] = [
    # v0 -> v1: results, their nodes, evidence and coverage
    """
    CREATE TABLE results (
        key TEXT PRIMARY KEY, job_id TEXT NOT NULL, attempt INTEGER NOT NULL, state TEXT,
        outcome TEXT, sub_domain TEXT, confidence TEXT, root_symptom TEXT, root_node TEXT,
        start_ts REAL, end_ts REAL, evidence_complete INTEGER NOT NULL, collector TEXT,
        attributed_at TEXT NOT NULL, result_json TEXT NOT NULL);
    CREATE TABLE result_nodes (
        key TEXT NOT NULL REFERENCES results(key) ON DELETE CASCADE, node TEXT NOT NULL, role TEXT NOT NULL,
        symptoms TEXT NOT NULL, blame TEXT, action TEXT, confidence TEXT, PRIMARY KEY (key, node, role));
    CREATE TABLE evidence (
        key TEXT NOT NULL REFERENCES results(key) ON DELETE CASCADE, seq INTEGER NOT NULL, event_type TEXT,
        symptom TEXT, node TEXT, rule TEXT, source TEXT, line_num INTEGER, timestamp TEXT, datum TEXT,
        PRIMARY KEY (key, seq));
    CREATE TABLE coverage (
        key TEXT NOT NULL REFERENCES results(key) ON DELETE CASCADE, collector TEXT NOT NULL, kind TEXT NOT NULL,
        type TEXT, status TEXT NOT NULL, observations INTEGER, lines INTEGER, series INTEGER, error TEXT,
        PRIMARY KEY (key, collector, kind));
    CREATE INDEX results_end ON results(end_ts);
    CREATE INDEX result_nodes_node ON result_nodes(node, role);
    """,
    # v1 -> v2: fleet components (nodes, HCA ports, switch ports) a result blames or names
    """
    CREATE TABLE components (
        key TEXT NOT NULL REFERENCES results(key) ON DELETE CASCADE, kind TEXT NOT NULL, name TEXT NOT NULL,
        node TEXT, symptom TEXT NOT NULL DEFAULT '', PRIMARY KEY (key, kind, name, symptom));
    CREATE INDEX components_kind ON components(kind, name);
    """,
    # v2 -> v3: the fleet's memory: who ran an attempt and how long attributing it took (backfilled)
    """
    ALTER TABLE results ADD COLUMN user TEXT;
    ALTER TABLE results ADD COLUMN attribution_seconds REAL;
    CREATE INDEX results_job ON results(job_id);
    CREATE INDEX results_fleet_time ON results(end_ts, key, job_id, user, start_ts, outcome, evidence_complete);
    CREATE INDEX results_fleet_key ON results(key, end_ts, job_id, user, start_ts, outcome, evidence_complete);
    """,
    # v3 -> v4: operator feedback on a verdict (kept when the attempt is attributed again:
    # each row names the verdict it judged), and the evidence looked up by rule
    """
    CREATE TABLE feedback (
        id INTEGER PRIMARY KEY AUTOINCREMENT, key TEXT NOT NULL REFERENCES results(key) ON DELETE CASCADE,
        verdict TEXT NOT NULL CHECK (verdict IN ('confirmed', 'wrong')), outcome TEXT, symptom TEXT,
        nodes TEXT NOT NULL DEFAULT '[]', judged_outcome TEXT, judged_symptom TEXT, judged_rule TEXT,
        judged_nodes TEXT NOT NULL DEFAULT '[]', who TEXT NOT NULL, at TEXT NOT NULL, note TEXT);
    CREATE INDEX feedback_key ON feedback(key, id);
    CREATE INDEX evidence_rule ON evidence(rule);
    """,
    # v4 -> v5: the attempt's collected lines, bounded (`rulekit.blueprint.keptlogs`), so an attempt can be
    # exported as a job directory (`blueprint export-test`); results written before keep none
    """
    CREATE TABLE kept_logs (
        key TEXT NOT NULL REFERENCES results(key) ON DELETE CASCADE, seq INTEGER NOT NULL, source TEXT NOT NULL,
        node TEXT, format TEXT, name TEXT, complete INTEGER NOT NULL, lines INTEGER NOT NULL, body BLOB NOT NULL,
        PRIMARY KEY (key, seq));
    """,
]
VERSION = len(MIGRATIONS)


class StoreError(Exception):
    pass


def _ts(v: str | None) -> float | None:
    if not v:
        return None
    try:
        return datetime.fromisoformat(v.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def open_db(path: str | Path, upto: int = VERSION) -> sqlite3.Connection:
    """Open (creating and migrating) a store for writing."""
    con = sqlite3.connect(str(path), isolation_level=None, timeout=30)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("PRAGMA foreign_keys=ON")
    migrate(con, upto)
    return con


def migrate(con: sqlite3.Connection, upto: int = VERSION) -> int:
    v = con.execute("PRAGMA user_version").fetchone()[0]
    if v > VERSION:
        raise StoreError(f"the database has schema version {v}; this rulekit knows up to {VERSION} (upgrade rulekit)")
    while v < upto:
        con.execute("BEGIN IMMEDIATE")
        try:
            for stmt in [s.strip() for s in MIGRATIONS[v].split(";") if s.strip()]:
                con.execute(stmt)
            if v == 1:  # backfill components of results written under v1
                for key, rj in con.execute("SELECT key, result_json FROM results").fetchall():
                    _insert_components(con, key, json.loads(rj))
            if v == 2:  # backfill the user and the attribution time from the stored results
                for key, rj in con.execute("SELECT key, result_json FROM results").fetchall():
                    r = json.loads(rj)
                    con.execute("UPDATE results SET user = ?, attribution_seconds = ? WHERE key = ?",
                                (_user(r), _attribution_seconds(r), key))
            con.execute(f"PRAGMA user_version = {v + 1}")
            con.execute("COMMIT")
        except Exception:
            con.execute("ROLLBACK")
            raise
        v += 1
    return v


def _insert_components(con: sqlite3.Connection, key: str, result: dict[str, Any]) -> None:
    con.executemany("INSERT OR IGNORE INTO components(key, kind, name, node, symptom) VALUES (?,?,?,?,?)",
                    [(key, c.kind, c.name, c.node, c.symptom or "") for c in components(result)])


def _user(result: dict[str, Any]) -> str | None:
    u = (result.get("context") or {}).get("user")
    return str(u) if u not in (None, "") else None


def _attribution_seconds(result: dict[str, Any]) -> float | None:
    for c in (result.get("coverage") or {}).get("collectors") or []:
        if c.get("kind") == "attribution" and isinstance(c.get("seconds"), (int, float)):
            return float(c["seconds"])
    return None


def upsert(con: sqlite3.Connection, result: dict[str, Any]) -> None:
    """Write one result in one transaction; replaces an earlier write of the same attempt."""
    v = result.get("verdict") or {}
    ctx = result.get("context") or {}
    rc = v.get("root_cause") or {}
    key = result["key"]
    kept = result.get("kept_logs")
    result = {k: x for k, x in result.items() if k != "kept_logs"}
    keeps = con.execute("PRAGMA user_version").fetchone()[0] >= 5  # a store opened below v5 has no kept_logs
    con.execute("BEGIN IMMEDIATE")
    try:
        con.execute(
            """INSERT INTO results(key, job_id, attempt, state, outcome, sub_domain, confidence, root_symptom, root_node,
                   start_ts, end_ts, evidence_complete, collector, attributed_at, result_json, user,
                   attribution_seconds)
               VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)
               ON CONFLICT(key) DO UPDATE SET job_id=excluded.job_id, attempt=excluded.attempt, state=excluded.state,
                   outcome=excluded.outcome, sub_domain=excluded.sub_domain, confidence=excluded.confidence,
                   root_symptom=excluded.root_symptom, root_node=excluded.root_node, start_ts=excluded.start_ts,
                   end_ts=excluded.end_ts, evidence_complete=excluded.evidence_complete,
                   collector=excluded.collector, attributed_at=excluded.attributed_at,
                   result_json=excluded.result_json, user=excluded.user,
                   attribution_seconds=excluded.attribution_seconds""",
            (key, result["job_id"], result["attempt"], ctx.get("state"), v.get("outcome") or "error",
             v.get("sub_domain"), v.get("confidence"), rc.get("symptom"), rc.get("node"), _ts(ctx.get("start")),
             _ts(ctx.get("end")) or _ts(result.get("attributed_at")), 1 if result["coverage"]["complete"] else 0,
             ctx.get("collector"), result.get("attributed_at"), json.dumps(result, default=str), _user(result),
             _attribution_seconds(result)))
        for t in ("result_nodes", "evidence", "coverage", "components") + (("kept_logs",) if keeps else ()):
            con.execute(f"DELETE FROM {t} WHERE key = ?", (key,))
        rows = []
        for role, field in (("bad", "bad_nodes"), ("affected", "affected_nodes"), ("interesting", "interesting_nodes")):
            for b in v.get(field) or []:
                rows.append((key, b["node"], role, json.dumps(b.get("symptoms") or []), b.get("blame"),
                             b.get("action"), b.get("confidence")))
        listed = {r[1] for r in rows}
        rows += [(key, n, "allocated", "[]", None, None, None) for n in ctx.get("nodes") or [] if n not in listed]
        con.executemany("INSERT OR IGNORE INTO result_nodes VALUES (?,?,?,?,?,?,?)", rows)
        con.executemany("INSERT INTO evidence VALUES (?,?,?,?,?,?,?,?,?,?)", [
            (key, i, e.get("event_type"), e.get("symptom"), e.get("node"), e.get("rule"), e.get("source"),
             e.get("line_num"), e.get("timestamp"), e.get("datum")) for i, e in enumerate(v.get("evidence") or [])])
        con.executemany("INSERT OR REPLACE INTO coverage VALUES (?,?,?,?,?,?,?,?,?)", [
            (key, c["collector"], c["kind"], c["type"], c["status"], c["observations"], c["lines"], c["series"],
             c["error"]) for c in result["coverage"]["collectors"]])
        _insert_components(con, key, result)
        if keeps and kept:
            con.executemany("INSERT INTO kept_logs VALUES (?,?,?,?,?,?,?,?,?)", [
                (key, i, k["source"], k.get("node"), k.get("format"), k.get("name"), 1 if k.get("complete") else 0,
                 sum(len(r[1]) for r in k["runs"]), zlib.compress(json.dumps(k["runs"]).encode(), 6))
                for i, k in enumerate(kept)])
        con.execute("COMMIT")
    except Exception:
        con.execute("ROLLBACK")
        raise


# ---- reading (dashboard, JSON API) ---------------------------------------------------

def open_ro(path: str | Path) -> sqlite3.Connection:
    p = Path(path)
    if not p.exists():
        raise StoreError(f"{p}: no such database (write one with `rulekit blueprint run --output sqlite:{p}`)")
    if p.is_dir():
        raise StoreError(f"{p}: is a folder, not a database file (pass the file given to `--output sqlite:PATH`)")
    try:
        con = sqlite3.connect(f"file:{p}?mode=ro", uri=True, check_same_thread=False)
        con.row_factory = sqlite3.Row
        v = con.execute("PRAGMA user_version").fetchone()[0]
    except sqlite3.DatabaseError as e:  # OperationalError too: unreadable, locked, not a file
        raise StoreError(f"{p}: not a rulekit result database ({e})") from None
    if v > VERSION:
        con.close()
        raise StoreError(f"{p}: schema version {v} was written by a newer rulekit; this one reads up to "
                         f"version {VERSION} (upgrade rulekit; the database is left as it is)")
    if v != VERSION:
        con.close()
        raise StoreError(f"{p}: schema version {v}, expected {VERSION} (rerun `rulekit blueprint run` to migrate)")
    return con


def open_rw(path: str | Path) -> sqlite3.Connection:
    """Open an existing store of this schema version for a small write (feedback from the
    dashboard): never creates or migrates it (StoreError instead)."""
    con = open_ro(path)
    con.close()
    con = sqlite3.connect(str(path), isolation_level=None, timeout=10, check_same_thread=False)
    con.execute("PRAGMA foreign_keys=ON")
    return con


def list_jobs(con: sqlite3.Connection, outcome: str | None = None, sub_domain: str | None = None,
              node: str | None = None, since: float | None = None, until: float | None = None,
              limit: int = 500) -> list[dict[str, Any]]:
    where, args = [], []
    if outcome:
        where.append("r.outcome = ?"); args.append(outcome)
    if sub_domain:
        where.append("r.sub_domain = ?"); args.append(sub_domain)
    if node:
        where.append("EXISTS (SELECT 1 FROM result_nodes n WHERE n.key = r.key AND n.node = ?)"); args.append(node)
    if since is not None:
        where.append("r.end_ts >= ?"); args.append(since)
    if until is not None:
        where.append("r.end_ts <= ?"); args.append(until)
    sql = ("SELECT r.key, r.job_id, r.attempt, r.state, r.outcome, r.sub_domain, r.confidence, r.root_symptom, "
           "r.root_node, r.start_ts, r.end_ts, r.evidence_complete, "
           "(SELECT group_concat(node, ',') FROM result_nodes n WHERE n.key = r.key AND n.role = 'bad') AS bad_nodes "
           "FROM results r" + (" WHERE " + " AND ".join(where) if where else "") +
           " ORDER BY r.end_ts DESC, r.key LIMIT ?")
    out = []
    for row in con.execute(sql, [*args, limit]):
        d = dict(row)
        d["bad_nodes"] = sorted((d["bad_nodes"] or "").split(",")) if d["bad_nodes"] else []
        d["evidence_complete"] = bool(d["evidence_complete"])
        out.append(d)
    return out


def facets(con: sqlite3.Connection) -> dict[str, list[str]]:
    return {"outcome": [r[0] for r in con.execute("SELECT DISTINCT outcome FROM results ORDER BY 1") if r[0]],
            "sub_domain": [r[0] for r in con.execute("SELECT DISTINCT sub_domain FROM results ORDER BY 1") if r[0]],
            "node": [r[0] for r in con.execute("SELECT DISTINCT node FROM result_nodes ORDER BY 1")]}


def get_result(con: sqlite3.Connection, key: str) -> dict[str, Any] | None:
    row = con.execute("SELECT result_json FROM results WHERE key = ?", (key,)).fetchone()
    return json.loads(row[0]) if row else None


def kept_logs(con: sqlite3.Connection, key: str) -> list[dict[str, Any]] | None:
    """The lines the store kept of one attempt's observations (`rulekit.blueprint.keptlogs`),
    in collection order; None when the attempt was stored without them (an older rulekit)."""
    rows = con.execute("SELECT source, node, format, name, complete, body FROM kept_logs WHERE key = ? ORDER BY seq",
                       (key,)).fetchall()
    if not rows:
        return None
    return [{"source": r[0], "node": r[1], "format": r[2], "name": r[3], "complete": bool(r[4]),
             "runs": json.loads(zlib.decompress(r[5]))} for r in rows]


def fleet(con: sqlite3.Connection, kind: str = "node", since: float | None = None, until: float | None = None,
          limit: int = 200) -> list[dict[str, Any]]:
    """Components ranked by how many distinct jobs blamed (or, for ports, named) them in the window."""
    where, args = ["c.kind = ?"], [kind]
    if since is not None:
        where.append("r.end_ts >= ?"); args.append(since)
    if until is not None:
        where.append("r.end_ts <= ?"); args.append(until)
    sql = ("SELECT c.name, count(DISTINCT r.job_id) AS jobs, count(DISTINCT r.key) AS attempts, "
           "group_concat(DISTINCT c.symptom) AS symptoms, min(r.end_ts) AS first_ts, max(r.end_ts) AS last_ts "
           "FROM components c JOIN results r ON r.key = c.key WHERE " + " AND ".join(where) +
           " GROUP BY c.name ORDER BY jobs DESC, attempts DESC, c.name LIMIT ?")
    out = []
    for row in con.execute(sql, [*args, limit]):
        d = dict(row)
        d["symptoms"] = sorted(s for s in (d["symptoms"] or "").split(",") if s)
        out.append(d)
    return out


def fleet_item(con: sqlite3.Connection, kind: str, name: str, since: float | None = None,
               until: float | None = None) -> list[dict[str, Any]]:
    where, args = ["c.kind = ?", "c.name = ?"], [kind, name]
    if since is not None:
        where.append("r.end_ts >= ?"); args.append(since)
    if until is not None:
        where.append("r.end_ts <= ?"); args.append(until)
    sql = ("SELECT r.key, r.job_id, r.attempt, r.outcome, r.sub_domain, r.end_ts, group_concat(DISTINCT c.symptom) AS "
           "symptoms FROM components c JOIN results r ON r.key = c.key WHERE " + " AND ".join(where) +
           " GROUP BY r.key ORDER BY r.end_ts DESC")
    out = []
    for row in con.execute(sql, args):
        d = dict(row)
        d["symptoms"] = sorted(s for s in (d["symptoms"] or "").split(",") if s)
        out.append(d)
    return out


# ---- the fleet's memory (rulekit.blueprint.fleet) -------------------------------------

class NodeAttempt(NamedTuple):
    """One attempt as one node saw it: the attempt's facts and the node's rows (by role)."""

    node: str
    key: str
    job_id: str
    user: str | None
    start: float | None
    end: float
    outcome: str
    complete: bool
    roles: dict[str, dict[str, Any]]  # role -> {symptoms, blame, action, confidence}


def node_attempts(con: sqlite3.Connection, since: float | None = None, until: float | None = None,
                  nodes: list[str] | None = None, exclude_job: str | None = None) -> list[NodeAttempt]:
    """Every (attempt, node) ending in [since, until) (`until` exclusive), oldest first;
    optionally only these nodes, and without one job's attempts."""
    where, args = ["r.end_ts IS NOT NULL"], []
    if since is not None:
        where.append("r.end_ts >= ?"); args.append(since)
    if until is not None:
        where.append("r.end_ts < ?"); args.append(until)
    if exclude_job is not None:
        where.append("r.job_id != ?"); args.append(exclude_job)
    if nodes is not None:
        if not nodes:
            return []
        where.append(f"n.node IN ({','.join('?' * len(nodes))})"); args.extend(nodes)
    sql = ("SELECT n.node, r.key, r.job_id, r.user, r.start_ts, r.end_ts, r.outcome, r.evidence_complete, n.role, "
           "n.symptoms, n.blame, n.action, n.confidence FROM result_nodes n JOIN results r ON r.key = n.key "
           "WHERE " + " AND ".join(where) + " ORDER BY r.end_ts, r.key, n.node")
    out: dict[tuple[str, str], NodeAttempt] = {}
    cur = con.cursor()
    cur.row_factory = None  # plain tuples: this reads every (attempt, node) of a window
    for row in cur.execute(sql, args):
        node, key = row[0], row[1]
        a = out.get((key, node))
        if a is None:
            a = out[(key, node)] = NodeAttempt(node, key, row[2], row[3], row[4], row[5], row[6] or "error",
                                               bool(row[7]), {})
        try:
            syms = json.loads(row[9]) if row[9] and row[9] != "[]" else []
        except json.JSONDecodeError:
            syms = []
        a.roles[row[8]] = {"symptoms": [s for s in syms if isinstance(s, str)], "blame": row[10], "action": row[11],
                           "confidence": row[12]}
    return list(out.values())


def attempt_outcomes(con: sqlite3.Connection) -> dict[str, int]:
    """outcome -> attempts stored."""
    return {r[0]: r[1] for r in con.execute("SELECT outcome, count(*) FROM results GROUP BY outcome")}


def rule_fires(con: sqlite3.Connection) -> dict[str, int]:
    """rule -> attempts whose evidence names it."""
    return {r[0]: r[1] for r in con.execute(
        "SELECT rule, count(DISTINCT key) FROM evidence WHERE rule IS NOT NULL GROUP BY rule")}


def attribution_seconds(con: sqlite3.Connection) -> list[float]:
    return [r[0] for r in con.execute("SELECT attribution_seconds FROM results WHERE attribution_seconds IS NOT NULL")]
