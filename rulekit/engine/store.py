"""The event store: SQLite (stdlib), in memory by default.

Small lookup tables (`contexts`, `event_types`, `rules`, `obs_sources`,
`obs_formats`, `observation_contexts`) map strings to integer ids; `events` is
the only table that grows per job.  `EventManager` owns the connection, buffers
inserts, spills an in-memory database to a private file when it grows large,
and checkpoints / restores one context's events around attribution.
`EventStream` is the per-job interface filters, refiners and collectors use.
Knows nothing about rules beyond their names.
"""
from __future__ import annotations

import json
import os
import shutil
import sqlite3
import tempfile
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

from rulekit.rules.model import EMIT_TYPES, EventSpec, EventType

SCHEMA = """
CREATE TABLE IF NOT EXISTS contexts(id INTEGER PRIMARY KEY, name TEXT UNIQUE NOT NULL);
CREATE TABLE IF NOT EXISTS event_types(id INTEGER PRIMARY KEY, name TEXT UNIQUE NOT NULL);
CREATE TABLE IF NOT EXISTS rules(id INTEGER PRIMARY KEY, name TEXT UNIQUE NOT NULL);
CREATE TABLE IF NOT EXISTS obs_sources(id INTEGER PRIMARY KEY, name TEXT UNIQUE NOT NULL);
CREATE TABLE IF NOT EXISTS obs_formats(id INTEGER PRIMARY KEY, name TEXT UNIQUE NOT NULL);
CREATE TABLE IF NOT EXISTS observation_contexts(
    id INTEGER PRIMARY KEY,
    context_id INTEGER NOT NULL REFERENCES contexts(id),
    source_id INTEGER NOT NULL REFERENCES obs_sources(id),
    format_id INTEGER NOT NULL REFERENCES obs_formats(id),
    t_start TEXT, t_end TEXT, label TEXT);
CREATE TABLE IF NOT EXISTS events(
    id INTEGER PRIMARY KEY,
    context_id INTEGER NOT NULL REFERENCES contexts(id),
    event_type INTEGER NOT NULL REFERENCES event_types(id),
    source_rule INTEGER REFERENCES rules(id),
    obs_context_id INTEGER REFERENCES observation_contexts(id),
    timestamp TEXT,
    line_num INTEGER,
    source_datum TEXT,
    resources TEXT,
    payload TEXT);
CREATE INDEX IF NOT EXISTS events_by_context ON events(context_id, event_type);
"""

MAX_DATUM = 4096  # characters of the source line kept on an event


@dataclass
class Event:
    id: int
    event_type: str
    rule: str | None
    node: str | None
    symptom: str | None
    timestamp: str | None
    line_num: int | None
    datum: str | None
    source: str | None
    format: str | None
    label: str | None
    payload: dict[str, Any] = field(default_factory=dict)
    obs_context_id: int | None = None

    @property
    def fields(self) -> dict[str, Any]:
        return self.payload.get("fields", {})

    @property
    def is_bad(self) -> bool:
        return self.event_type == EventType.BAD_NODE.value

    @property
    def is_interesting(self) -> bool:
        return self.event_type == EventType.INTERESTING_NODE.value

    def to_evidence(self) -> dict[str, Any]:
        return {"event_type": self.event_type, "symptom": self.symptom, "node": self.node, "rule": self.rule,
                "source": self.label or self.source, "line_num": self.line_num, "timestamp": self.timestamp,
                "datum": self.datum}


@dataclass(frozen=True)
class TraceEntry:
    """What a rule did to an event (for `rulekit explain` and the report)."""

    phase: str
    rule: str
    action: str  # add | demote | promote | discard | set_symptom | (refiner) discard_symptom | demote_symptom
    event_id: int | None
    symptom: str | None
    node: str | None
    reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"phase": self.phase, "rule": self.rule, "action": self.action, "event_id": self.event_id,
                "symptom": self.symptom, "node": self.node, "reason": self.reason}


class EventManager:
    """Owns the SQLite connection shared by every job context in one process."""

    def __init__(self, rule_names: Iterable[str] = (), path: str | None = None, buffer_size: int = 2000,
                 spill_threshold: int = 250_000):
        self.path = path
        self._private_dir: str | None = None
        self.conn = sqlite3.connect(path or ":memory:", isolation_level=None, check_same_thread=False)
        self.conn.executescript(SCHEMA)
        self._ids: dict[str, dict[str, int]] = {t: {} for t in ("contexts", "event_types", "rules", "obs_sources", "obs_formats")}
        self._buffer: list[tuple] = []
        self.buffer_size = buffer_size
        self.spill_threshold = spill_threshold
        self._rows_in_memory = 0
        self._closed = False
        self.conn.execute("BEGIN")
        for et in EventType:
            self.lookup("event_types", et.value)
        for name in rule_names:
            self.lookup("rules", name)
        self.conn.execute("COMMIT")

    # ---- lookup tables ----
    def lookup(self, table: str, name: str) -> int:
        cache = self._ids[table]
        got = cache.get(name)
        if got is not None:
            return got
        row = self.conn.execute(f"SELECT id FROM {table} WHERE name = ?", (name,)).fetchone()
        if row is None:
            cur = self.conn.execute(f"INSERT INTO {table}(name) VALUES (?)", (name,))
            got = int(cur.lastrowid)  # type: ignore[arg-type]
        else:
            got = int(row[0])
        cache[name] = got
        return got

    def name_of(self, table: str, ident: int | None) -> str | None:
        if ident is None:
            return None
        for name, i in self._ids[table].items():
            if i == ident:
                return name
        row = self.conn.execute(f"SELECT name FROM {table} WHERE id = ?", (ident,)).fetchone()
        return row[0] if row else None

    def context(self, name: str) -> int:
        return self.lookup("contexts", name)

    def observation_context(self, context_id: int, source: str, fmt: str, t_start: str | None = None,
                            t_end: str | None = None, label: str | None = None) -> int:
        cur = self.conn.execute(
            "INSERT INTO observation_contexts(context_id, source_id, format_id, t_start, t_end, label) VALUES (?,?,?,?,?,?)",
            (context_id, self.lookup("obs_sources", source), self.lookup("obs_formats", fmt), t_start, t_end, label))
        return int(cur.lastrowid)  # type: ignore[arg-type]

    # ---- inserts ----
    def add(self, context_id: int, event_type: str, rule: str | None, obs_context_id: int | None, timestamp: str | None,
            line_num: int | None, datum: str | None, node: str | None, payload: dict[str, Any]) -> None:
        """Buffer one event (extraction path: write-only, flushed in batches)."""
        self._buffer.append((context_id, self.lookup("event_types", event_type),
                             self.lookup("rules", rule) if rule else None, obs_context_id, timestamp, line_num,
                             _clip(datum), node, json.dumps(payload, sort_keys=True, default=str)))
        if len(self._buffer) >= self.buffer_size:
            self.flush()

    def insert_now(self, row: tuple) -> int:
        self.flush()
        cur = self.conn.execute(
            "INSERT INTO events(context_id, event_type, source_rule, obs_context_id, timestamp, line_num, source_datum, resources, payload) "
            "VALUES (?,?,?,?,?,?,?,?,?)", row)
        return int(cur.lastrowid)  # type: ignore[arg-type]

    def flush(self) -> None:
        if not self._buffer:
            return
        rows, self._buffer = self._buffer, []
        self.conn.execute("BEGIN")
        self.conn.executemany(
            "INSERT INTO events(context_id, event_type, source_rule, obs_context_id, timestamp, line_num, source_datum, resources, payload) "
            "VALUES (?,?,?,?,?,?,?,?,?)", rows)
        self.conn.execute("COMMIT")
        if self.path is None and self._private_dir is None:
            self._rows_in_memory += len(rows)
            if self._rows_in_memory > self.spill_threshold:
                self._spill()

    def _spill(self) -> None:
        """Move the in-memory database to a private file (mode 0700 folder)."""
        self._private_dir = tempfile.mkdtemp(prefix="rulekit-events-")
        os.chmod(self._private_dir, 0o700)
        target = sqlite3.connect(os.path.join(self._private_dir, "events.sqlite"), isolation_level=None,
                                 check_same_thread=False)
        self.conn.backup(target)
        self.conn.close()
        self.conn = target

    @property
    def spilled(self) -> bool:
        return self._private_dir is not None

    # ---- checkpoints ----
    def checkpoint(self, context_id: int) -> None:
        self.flush()
        t = f"ckpt_{context_id}"
        self.conn.execute("BEGIN")
        self.conn.execute(f"DROP TABLE IF EXISTS temp.{t}")
        self.conn.execute(f"CREATE TEMP TABLE {t} AS SELECT * FROM events WHERE context_id = ?", (context_id,))
        self.conn.execute("COMMIT")

    def restore(self, context_id: int) -> None:
        t = f"ckpt_{context_id}"
        exists = self.conn.execute("SELECT 1 FROM temp.sqlite_master WHERE name = ?", (t,)).fetchone()
        if not exists:
            return
        self.flush()
        self.conn.execute("BEGIN")
        self.conn.execute("DELETE FROM events WHERE context_id = ?", (context_id,))
        self.conn.execute(f"INSERT INTO events SELECT * FROM temp.{t}")
        self.conn.execute(f"DROP TABLE temp.{t}")
        self.conn.execute("COMMIT")

    def count(self, context_id: int | None = None) -> int:
        self.flush()
        if context_id is None:
            return int(self.conn.execute("SELECT COUNT(*) FROM events").fetchone()[0])
        return int(self.conn.execute("SELECT COUNT(*) FROM events WHERE context_id = ?", (context_id,)).fetchone()[0])

    def stream(self, context_id: int) -> "EventStream":
        return EventStream(self, context_id)

    # ---- lifetime ----
    def close(self, flush: bool = True) -> None:
        """Flush (or with flush=False discard) buffered events, release the connection and
        delete private spill files."""
        if self._closed:
            return
        self._closed = True
        try:
            if flush:
                self.flush()
            else:
                self._buffer.clear()
            self.conn.close()
        finally:
            if self._private_dir:
                shutil.rmtree(self._private_dir, ignore_errors=True)
                self._private_dir = None

    def __del__(self) -> None:
        try:
            self.close(flush=False)
        except Exception:
            pass


def _clip(text: str | None) -> str | None:
    if text is None or len(text) <= MAX_DATUM:
        return text
    return text[:MAX_DATUM] + f"... [{len(text) - MAX_DATUM} more characters]"


_SELECT = ("SELECT e.id, et.name, r.name, e.resources, e.timestamp, e.line_num, e.source_datum, e.payload, "
           "s.name, f.name, oc.label, e.obs_context_id FROM events e JOIN event_types et ON et.id = e.event_type "
           "LEFT JOIN rules r ON r.id = e.source_rule LEFT JOIN observation_contexts oc ON oc.id = e.obs_context_id "
           "LEFT JOIN obs_sources s ON s.id = oc.source_id LEFT JOIN obs_formats f ON f.id = oc.format_id "
           "WHERE e.context_id = ?")


class ReadOnlyStreamError(RuntimeError):
    pass


class EventStream:
    """One job's events: query, add, demote (bad -> interesting), promote, discard."""

    def __init__(self, manager: EventManager, context_id: int, phase: str = "", trace: list[TraceEntry] | None = None):
        self.manager = manager
        self.context_id = context_id
        self.phase = phase
        self.trace: list[TraceEntry] = trace if trace is not None else []
        self.read_only = False
        # symptom alias -> canonical name (the registry's), applied on every write and query
        self.canonical: Callable[[str], str] = lambda name: name

    # ---- reading ----
    def query(self, event_type: str | EventType | Sequence[str] | None = None, symptom: str | None = None,
              prefix: str | Sequence[str] | None = None, node: str | None = None, rule: str | None = None) -> list[Event]:
        self.manager.flush()
        sql = _SELECT
        args: list[Any] = [self.context_id]
        if event_type is not None:
            types_ = [event_type] if isinstance(event_type, (str, EventType)) else list(event_type)
            names = [EMIT_TYPES[t].value if t in EMIT_TYPES else (t.value if isinstance(t, EventType) else t) for t in types_]
            sql += f" AND et.name IN ({','.join('?' * len(names))})"
            args.extend(names)
        if node is not None:
            sql += " AND e.resources = ?"
            args.append(node)
        if rule is not None:
            sql += " AND r.name = ?"
            args.append(rule)
        sql += " ORDER BY e.id"
        out = [self._event(row) for row in self.manager.conn.execute(sql, args)]
        if symptom is not None:
            symptom = self.canonical(symptom)
            out = [e for e in out if e.symptom == symptom]
        if prefix is not None:
            pre = (prefix,) if isinstance(prefix, str) else tuple(prefix)
            out = [e for e in out if e.symptom and e.symptom.startswith(pre)]
        return out

    def _event(self, row: tuple) -> Event:
        payload = json.loads(row[7]) if row[7] else {}
        return Event(id=row[0], event_type=row[1], rule=row[2], node=row[3], symptom=payload.get("symptom"),
                     timestamp=row[4], line_num=row[5], datum=row[6], source=row[8], format=row[9], label=row[10],
                     payload=payload, obs_context_id=row[11])

    def get(self, event_id: int) -> Event | None:
        self.manager.flush()
        row = self.manager.conn.execute(_SELECT + " AND e.id = ?", (self.context_id, event_id)).fetchone()
        return self._event(row) if row else None

    def all(self) -> list[Event]:
        return self.query()

    def bad_events(self) -> list[Event]:
        return self.query(EventType.BAD_NODE.value)

    def interesting_events(self) -> list[Event]:
        return self.query(EventType.INTERESTING_NODE.value)

    def data_events(self) -> list[Event]:
        return self.query(EventType.DATA.value)

    def node_events(self) -> list[Event]:
        return self.query([EventType.BAD_NODE.value, EventType.INTERESTING_NODE.value, EventType.BAD_PEERS.value])

    # ---- writing ----
    def _check_writable(self) -> None:
        if self.read_only:
            raise ReadOnlyStreamError(f"the event stream is read-only in phase {self.phase or '?'}")

    def add(self, spec: EventSpec, rule: str, cause: Event | None = None, reason: str = "") -> Event:
        self._check_writable()
        etype = EMIT_TYPES[spec.type].value if spec.type in EMIT_TYPES else spec.type
        node = spec.node if spec.node is not None else (cause.node if cause else None)
        symptom = self.canonical(spec.symptom) if spec.symptom else spec.symptom
        payload: dict[str, Any] = {"node": node, "symptom": symptom, "fields": dict(spec.fields), "added_by": rule}
        if cause is not None:
            payload["cause_event"] = cause.id
        eid = self.manager.insert_now((
            self.context_id, self.manager.lookup("event_types", etype), self.manager.lookup("rules", rule),
            cause.obs_context_id if cause else None,
            spec.timestamp or (cause.timestamp if cause else None),
            spec.line_num if spec.line_num is not None else (cause.line_num if cause else None),
            _clip(spec.datum if spec.datum is not None else (cause.datum if cause else None)), node,
            json.dumps(payload, sort_keys=True, default=str)))
        self.trace.append(TraceEntry(self.phase, rule, "add", eid, symptom, node, reason))
        ev = self.get(eid)
        assert ev is not None
        return ev

    def _retype(self, events: Iterable[Event], to: EventType, frm: EventType, rule: str, action: str, reason: str) -> int:
        self._check_writable()
        n = 0
        for e in events:
            if e.event_type != frm.value:
                continue
            e.payload.setdefault("history", []).append({"rule": rule, "action": action, "reason": reason})
            if action == "demote":
                e.payload["demoted_by"] = rule
            self.manager.conn.execute("UPDATE events SET event_type = ?, payload = ? WHERE id = ? AND context_id = ?",
                                      (self.manager.lookup("event_types", to.value),
                                       json.dumps(e.payload, sort_keys=True, default=str), e.id, self.context_id))
            e.event_type = to.value
            self.trace.append(TraceEntry(self.phase, rule, action, e.id, e.symptom, e.node, reason))
            n += 1
        return n

    def demote(self, events: Iterable[Event], rule: str, reason: str = "") -> int:
        """bad -> interesting; returns how many changed."""
        return self._retype(events, EventType.INTERESTING_NODE, EventType.BAD_NODE, rule, "demote", reason)

    def promote(self, events: Iterable[Event], rule: str, reason: str = "") -> int:
        """interesting -> bad; returns how many changed."""
        return self._retype(events, EventType.BAD_NODE, EventType.INTERESTING_NODE, rule, "promote", reason)

    def discard(self, events: Iterable[Event], rule: str, reason: str = "") -> int:
        self._check_writable()
        n = 0
        for e in events:
            cur = self.manager.conn.execute("DELETE FROM events WHERE id = ? AND context_id = ?", (e.id, self.context_id))
            if cur.rowcount:
                self.trace.append(TraceEntry(self.phase, rule, "discard", e.id, e.symptom, e.node, reason))
                n += 1
        return n

    def set_symptom(self, event: Event, symptom: str, rule: str, reason: str = "") -> None:
        self._check_writable()
        symptom = self.canonical(symptom)
        event.payload["symptom"] = symptom
        event.payload.setdefault("history", []).append({"rule": rule, "action": "set_symptom", "reason": reason})
        self.manager.conn.execute("UPDATE events SET payload = ? WHERE id = ? AND context_id = ?",
                                  (json.dumps(event.payload, sort_keys=True, default=str), event.id, self.context_id))
        self.trace.append(TraceEntry(self.phase, rule, "set_symptom", event.id, symptom, event.node, reason))
        event.symptom = symptom
