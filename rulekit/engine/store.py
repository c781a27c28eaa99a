"""The event store: SQLite (stdlib), in memory by default.

Small lookup tables (`contexts`, `event_types`, `rules`, `obs_sources`,
`obs_formats`, `observation_contexts`) map strings to integer ids; `events` is
the only table that grows per job.  What attribution selects on is a real,
indexed column — event type, symptom, node (`resources`), rank, timestamp —
and `payload` (JSON) holds only the rest (fields, provenance, history).
`EventManager` owns the connection, numbers events (ids in insert order,
never reused), buffers inserts, spills an in-memory database to a private file
when it grows large, and checkpoints / restores one context's events around
attribution.

Events are read once.  The rows a context inserted are kept as Python rows
(bounded by `keep_rows`) for as long as they mirror that context's SQLite
rows, so a working set is built from them without a read back or a JSON round
trip; a flat `fields` dict (str keys; str/int/float/bool/None values, which
JSON gives back unchanged) is kept as (keys, values) tuples, keys in the
sorted order the JSON would give, and encoded only when the row is written.
Kept rows are plain tuples of atomic values, which the garbage collector stops
walking.  A context whose SQLite rows changed under the mirror (written-through
changes) is read from SQLite until a restore puts the checkpointed rows back.
A mirrored context's checkpoint is its kept rows (SQLite records the
checkpoint and the rows changed after it; a restore rewrites only those);
any other, and every checkpoint of a store at a path, is a copy in a
main-database table (a spill carries it along).  In an in-memory store a
mirrored context's rows are written to SQLite only when SQLite is next read or
changed for them (`flush(rows_may_wait=True)` on the extraction and working-set
paths; a plain `flush()`, a restore, a count, a written-through change, a spill
or `keep_rows` writes them): a one-shot attribution, whose working set comes
from the kept rows, writes none.

`EventStream` is the per-job interface filters, refiners and collectors use:
it builds the job's events once, on first read, into a working set indexed by
type, symptom and node, answers every query from it, and writes its changes
through to SQLite in one batch whenever the manager reads or snapshots the
store (`flush()`), so the store stays the truth that checkpoint/restore and
later readers see.
Knows nothing about rules beyond their names.
"""
from __future__ import annotations

import itertools
import json
import operator
import os
import shutil
import sqlite3
import tempfile
import weakref
from contextlib import contextmanager
from json.encoder import c_make_encoder, encode_basestring_ascii  # type: ignore[attr-defined]
from dataclasses import field
from typing import Any, Callable, Iterable, Iterator, NamedTuple, Sequence

from rulekit.rules.records import dataclass
from rulekit.engine.freshdb import fresh_memory_db, give_back
from rulekit.config import DEFAULT_BUFFER_SIZE, DEFAULT_SPILL_BYTES, DEFAULT_SPILL_ROWS
from rulekit.rules.model import EventSpec, EventType, event_type_name, short_type
from rulekit.rules.selection import Selection
from rulekit.engine.gcpolicy import paused_gc  # noqa: F401 - (re-exported: attribution pauses collections too)
from rulekit.extract.linectx import NO_YEAR

_EVENT_TYPES = tuple(et.value for et in EventType)
# the sources and formats most observations name (the scheduler's own lines, the Service's and the
# CLI's defaults): every store starts with them, so a small job's store adds no lookup row for them
_SOURCES = ("applog", "syslog", "scheduler")
_FORMATS = ("text", "slurm")
_CLOSED = sqlite3.connect(":memory:", check_same_thread=False)  # a closed store's `conn`: any use raises, as
_CLOSED.close()  # the use of a closed connection does

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
    id INTEGER PRIMARY KEY AUTOINCREMENT,  -- never reused: a restored checkpoint keeps its ids
    context_id INTEGER NOT NULL REFERENCES contexts(id),
    event_type INTEGER NOT NULL REFERENCES event_types(id),
    source_rule INTEGER REFERENCES rules(id),
    obs_context_id INTEGER REFERENCES observation_contexts(id),
    timestamp TEXT,
    line_num INTEGER,
    source_datum TEXT,
    resources TEXT,
    symptom TEXT,
    rank INTEGER,
    payload TEXT);
-- one index (each costs every insert): attribution reads a context's rows once, into a working
-- set that answers by type, symptom and node itself
CREATE INDEX IF NOT EXISTS events_by_context ON events(context_id, event_type, symptom, resources);
CREATE TABLE IF NOT EXISTS event_repeats(
    id INTEGER PRIMARY KEY,
    context_id INTEGER NOT NULL REFERENCES contexts(id),
    obs_context_id INTEGER REFERENCES observation_contexts(id),
    source_rule INTEGER REFERENCES rules(id),
    event_type INTEGER NOT NULL REFERENCES event_types(id),
    symptom TEXT,
    resources TEXT,
    count INTEGER NOT NULL,
    first_line INTEGER,
    last_line INTEGER,
    last_timestamp TEXT);
CREATE TABLE IF NOT EXISTS checkpoints(context_id INTEGER PRIMARY KEY);
CREATE TABLE IF NOT EXISTS checkpoint_events AS SELECT * FROM events WHERE 0;
CREATE INDEX IF NOT EXISTS checkpoint_events_by_context ON checkpoint_events(context_id);
"""

_COLUMNS = ("id, context_id, event_type, source_rule, obs_context_id, timestamp, line_num, source_datum, resources, "
            "symptom, rank, payload")
_INSERT = f"INSERT INTO events({_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)"
_COLUMN_KEYS = ("node", "symptom")  # payload keys that live in their own columns

_BAD, _INTERESTING = EventType.BAD_NODE.value, EventType.INTERESTING_NODE.value
MAX_DATUM = 4096  # characters of the source line kept on an event
SPILL_BYTES = DEFAULT_SPILL_BYTES  # (EngineOptions.spill_bytes) an in-memory database larger than this moves to a private file


class EventRow(NamedTuple):
    """One row of the events table, in `_COLUMNS` order (ids, not names).

    What `EventManager.row()` builds and `EventManager.add()` buffers and keeps is a
    plain tuple in this order (`EventRow.of()` names its fields): the 12 columns,
    the payload as its JSON; or, for a flat payload (`{"fields": flat dict}`), the
    first 11 columns, None, the fields' sorted keys (one tuple per key set) and
    then their values, encoded only when the row is written.  Plain tuples of
    atomic values: the garbage collector stops walking a kept row (a tuple
    subclass, or a tuple holding a dict, it walks on every full pass), and a row
    is one object, not three."""

    id: int
    context_id: int
    event_type: int
    source_rule: int | None
    obs_context_id: int | None
    timestamp: str | None
    line_num: int | None
    source_datum: str | None
    resources: str | None  # the node
    symptom: str | None
    rank: int | None
    payload: str | None  # None: a flat payload, in `fields`
    fields: dict[str, Any] | None = None  # (`of()`) the flat fields, in sorted key order

    @classmethod
    def of(cls, row: tuple) -> "EventRow":
        """A row tuple with its fields named (the flat fields as a dict)."""
        return cls(*row[:12], _row_fields(row))


def _row_fields(row: tuple) -> dict[str, Any] | None:
    """A flat row's fields dict (a fresh one), or None for a row with its payload JSON."""
    return dict(zip(row[12], row[13:])) if len(row) > 12 else None


def _params(row: tuple) -> tuple:
    """The values `_INSERT` binds for a row tuple (a flat payload encoded now)."""
    if len(row) == 12:
        return row
    return (*row[:11], "".join(_FLAT_ENCODE({"fields": dict(zip(row[12], row[13:]))}, 0)))


_FLAT_TYPES = frozenset((str, int, float, bool, type(None)))  # JSON gives these back as they were
_STR_TYPE = frozenset((str,))
_SORTED: dict[tuple, tuple] = {}  # a fields dict's keys -> (sorted keys, their getter; None: sorted already)


def _sorted_keys(fields: dict[str, Any]) -> tuple[tuple[str, ...], Callable[[dict], tuple] | None]:
    """A flat fields dict's keys sorted (the order a sort_keys JSON round trip gives)
    and the getter of their values in that order (None: already sorted); worked out
    once per key set (an emit's fields have the same keys, and share the one tuple)."""
    keys = tuple(fields)
    how = _SORTED.get(keys)
    if how is None:
        order = tuple(sorted(keys))
        how = (keys, None) if order == keys or len(keys) < 2 else (order, operator.itemgetter(*order))
        if len(_SORTED) > 4096:
            _SORTED.clear()
        _SORTED[keys] = how
    return how


@dataclass(slots=True)
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
    # its place on the job's one clock (`rulekit.engine.timeline`; "": none; None: not settled, read the stamps)
    when: str | None = field(default=None, compare=False, repr=False)

    @property
    def fields(self) -> dict[str, Any]:
        return self.payload.get("fields", {})

    @property
    def is_bad(self) -> bool:
        return self.event_type == _BAD

    @property
    def is_interesting(self) -> bool:
        return self.event_type == _INTERESTING

    def to_evidence(self) -> dict[str, Any]:
        """The result's evidence item.  `timestamp`: the line's own stamp (`time_source`
        "line") or the one carried from the nearest earlier stamped line of its file and
        rank ("inherited"); a stamp whose year stayed unknown is `time_of_year` instead
        (`MM-DDTHH:MM:SS[.ffffff]`, docs/time.md)."""
        ts, source = self.timestamp, None
        if ts:
            source = "line"
        else:
            ts = self.payload.get("fields", {}).get("carried_ts") or None
            if ts:
                source = "inherited"
        out = {"event_type": self.event_type, "symptom": self.symptom, "node": self.node, "rule": self.rule,
               "source": self.label or self.source, "line_num": self.line_num, "timestamp": ts,
               "time_source": source, "datum": self.datum}
        if ts and ts.startswith(NO_YEAR):
            out["timestamp"] = None
            out["time_of_year"] = ts[5:]
        if self.event_type == _INTERESTING:
            demoted = self.demotion()
            if demoted is not None:
                out["demoted"] = demoted
        return out

    def demotion(self) -> dict[str, str] | None:
        """The last demotion from bad to interesting (`{"rule", "reason"}`), when one made it
        what it is now (a promotion since undoes it); None for evidence never demoted."""
        for h in reversed(self.payload.get("history") or ()):
            if h.get("action") == "demote":
                return {"rule": h.get("rule") or "", "reason": h.get("reason") or ""}
            if h.get("action") == "promote":
                return None
        return None


class TraceEntry(NamedTuple):
    """What a rule did to an event (for `rulekit explain` and the report).  Immutable;
    a named tuple because a job's trace holds one per change (a frozen dataclass
    costs ~5x as much to build)."""

    phase: str
    rule: str
    action: str  # add | demote | promote | discard | set_symptom | keep | (refiner) discard_symptom | demote_symptom
    #            | keep_symptom | prefer_symptom (notes: what a rule left as it was, or chose, and why)
    event_id: int | None
    symptom: str | None
    node: str | None
    reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"phase": self.phase, "rule": self.rule, "action": self.action, "event_id": self.event_id,
                "symptom": self.symptom, "node": self.node, "reason": self.reason}


class EventManager:
    """Owns the SQLite connection shared by every job context in one process."""

    def __init__(self, rule_names: Iterable[str] = (), path: str | None = None, buffer_size: int = DEFAULT_BUFFER_SIZE,
                 spill_threshold: int = DEFAULT_SPILL_ROWS, spill_bytes: int = SPILL_BYTES,
                 keep_rows: int | None = None):
        self.path = path
        self._private_dir: str | None = None
        names = tuple(rule_names)
        self._ids: dict[str, dict[str, int]] = {t: {} for t in ("contexts", "event_types", "rules", "obs_sources", "obs_formats")}
        # a fresh store's lookup rows are all in `_ids` (seeded, then added by `lookup` only): read
        # from there, not SQLite (`names_by_id`); a store at a path may hold rows of earlier runs
        self._ids_complete = path is None
        self._by_id: dict[str, tuple[int, dict[int, str]]] = {}  # table -> (entries inverted, id -> name)
        self._template: Any = None  # a `freshdb` copy's handle (the connection is given back at close)
        if path is None:  # a copy of a template with the schema, the event types and these rules (`freshdb`)
            self.conn, seeded, by_id, self._template = fresh_memory_db(
                SCHEMA, (("event_types", _EVENT_TYPES), ("obs_sources", _SOURCES), ("obs_formats", _FORMATS),
                         ("rules", names)))
            self._ids.update(seeded)
            self._by_id.update((t, (len(seeded[t]), by_id[t])) for t in seeded)  # (the template's: shared)
        else:
            self.conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
            self.conn.executescript(SCHEMA)
        self._buffer: list[tuple] = []  # rows (see EventRow)
        # rows of mirrored contexts past an extraction flush, not yet in SQLite: written when
        # SQLite is next read or changed for them (`flush()`), never when nothing asks
        self._late: list[tuple] = []
        self.buffer_size = buffer_size
        self.spill_threshold = spill_threshold  # rows, or
        self.spill_bytes = spill_bytes  # bytes of database pages
        self._rows_in_memory = 0
        self._closed = False
        self.streams: "weakref.WeakSet[EventStream]" = weakref.WeakSet()  # holding a working set
        self.pending: set[EventStream] = set()  # with changes not yet written (held until written)
        # the rows each context inserted, while they mirror its SQLite rows (see the module docstring)
        self.keep_rows = spill_threshold if keep_rows is None else keep_rows  # rows kept at most, all contexts
        self._kept: dict[int, list[tuple]] = {}
        self._kept_count = 0
        self._kept_unsorted: set[int] = set()
        self._diverged: set[int] = set()  # kept, but SQLite changed under them (until a restore)
        # context -> its kept rows when checkpointed (while mirroring): what a restore makes it again
        self._kept_at_checkpoint: dict[int, list[tuple]] = {}
        # in-memory checkpoints: context -> (first id after it, ids of its rows changed since)
        self._undo: dict[int, tuple[int, set[int]]] = {}
        # no `event_repeats` row yet (a fresh store, until `add_repeats`): the questions about them
        # are answered without SQLite (a small job has none; three queries a job otherwise)
        self._no_repeats = path is None
        # contexts that may have rows in `checkpoint_events` (a copied checkpoint); None: unknown (a
        # store at a path may hold earlier runs' rows), so every checkpoint deletes them first
        self._copied: set[int] | None = set() if path is None else None
        if path is None:  # a fresh store: no events yet, and its lookup rows all there
            self._next_id = 1
        else:
            self._next_id = 1 + max(int(self.conn.execute(q).fetchone()[0] or 0) for q in (
                "SELECT MAX(id) FROM events", "SELECT MAX(id) FROM checkpoint_events",
                "SELECT MAX(seq) FROM sqlite_sequence WHERE name = 'events'"))
            self.conn.execute("BEGIN")
            for et in _EVENT_TYPES:
                self.lookup("event_types", et)
            for source in _SOURCES:
                self.lookup("obs_sources", source)
            for fmt in _FORMATS:
                self.lookup("obs_formats", fmt)
            for name in names:
                self.lookup("rules", name)
            self.conn.execute("COMMIT")

    # ---- lookup tables ----
    def lookup(self, table: str, name: str) -> int:
        cache = self._ids[table]
        got = cache.get(name)
        if got is not None:
            return got
        row = None if self._ids_complete else self.conn.execute(f"SELECT id FROM {table} WHERE name = ?",
                                                                (name,)).fetchone()
        if row is None:
            cur = self.conn.execute(f"INSERT INTO {table}(name) VALUES (?)", (name,))
            got = int(cur.lastrowid)  # type: ignore[arg-type]
        else:
            got = int(row[0])
        cache[name] = got
        return got

    def names_by_id(self, table: str) -> dict[int, str] | None:
        """Id -> name of every row of a lookup table, when this manager knows them all
        without asking SQLite (a fresh store); else None.  The caller must not change it."""
        if not self._ids_complete:
            return None
        ids = self._ids[table]
        got = self._by_id.get(table)
        if got is None or got[0] != len(ids):  # (rows are only ever added; a shared map is never changed)
            got = self._by_id[table] = (len(ids), {i: name for name, i in ids.items()})
        return got[1]

    def name_of(self, table: str, ident: int | None) -> str | None:
        if ident is None:
            return None
        for name, i in self._ids[table].items():
            if i == ident:
                return name
        row = self.conn.execute(f"SELECT name FROM {table} WHERE id = ?", (ident,)).fetchone()
        return row[0] if row else None

    def context(self, name: str) -> int:
        """The id of a job context; a new one's rows are kept (mirrored) from the start."""
        known = name in self._ids["contexts"] or not self._ids_complete and self.conn.execute(
            "SELECT 1 FROM contexts WHERE name = ?", (name,)).fetchone() is not None
        cid = self.lookup("contexts", name)
        if not known and self._kept_count < self.keep_rows:
            self._kept[cid] = []
        return cid

    def observation_context(self, context_id: int, source: str, fmt: str, t_start: str | None = None,
                            t_end: str | None = None, label: str | None = None) -> int:
        cur = self.conn.execute(
            "INSERT INTO observation_contexts(context_id, source_id, format_id, t_start, t_end, label) VALUES (?,?,?,?,?,?)",
            (context_id, self.lookup("obs_sources", source), self.lookup("obs_formats", fmt), t_start, t_end, label))
        return int(cur.lastrowid)  # type: ignore[arg-type]

    # ---- inserts ----
    def add(self, row: tuple) -> None:
        """Buffer one event row (`row()` builds it; extraction path: write-only,
        flushed in batches of `buffer_size`) and keep it for the context's mirror."""
        self._buffer.append(row)
        kept = self._kept.get(row[1])
        if kept is not None:
            if self._kept_count >= self.keep_rows:
                self._drop_kept()
            else:
                if kept and kept[-1][0] > row[0]:
                    self._kept_unsorted.add(row[1])
                    undo = self._undo.get(row[1])
                    if undo is not None and row[0] < undo[0]:  # numbered before the checkpoint, added after:
                        undo[1].add(row[0])  # a restore deletes it like any row added since
                kept.append(row)
                self._kept_count += 1
        if len(self._buffer) >= self.buffer_size:
            self.flush(rows_may_wait=True)

    def _drop_kept(self) -> None:
        """Past `keep_rows`: keep no more rows; every context is read from SQLite."""
        self._write_rows()
        self._snapshot_in_sql()
        self._kept.clear()
        self._diverged.clear()
        self._kept_at_checkpoint.clear()
        self._kept_count = self.keep_rows  # and none is kept again

    def mirror(self, context_id: int) -> list[tuple] | None:
        """The context's rows (tuples in `EventRow` order) in id order when they
        mirror its SQLite rows (after a flush), else None."""
        kept = self._kept.get(context_id)
        if kept is None or context_id in self._diverged:
            return None
        if context_id in self._kept_unsorted:  # rows added out of the order row() numbered them
            self._kept_unsorted.discard(context_id)
            kept.sort(key=_first)
        return kept

    def diverged(self, context_id: int, ids: Iterable[int] = ()) -> None:
        """The context's SQLite rows `ids` were changed or deleted other than by
        `add()`: stop mirroring (until a restore), and note them for the restore."""
        if context_id in self._kept:
            self._diverged.add(context_id)
        undo = self._undo.get(context_id)
        if undo is not None:
            undo[1].update(ids)

    def next_id(self) -> int:
        """The id the next row built (`row`) gets."""
        return self._next_id

    def row(self, context_id: int, event_type: str, rule: str | None, obs_context_id: int | None,
            timestamp: str | None, line_num: int | None, datum: str | None, node: str | None,
            symptom: str | None, fields: dict[str, Any] | None, extra: dict[str, Any] | None = None) -> tuple:
        """The one builder of an events-table row, numbered with the manager's next
        event id (add it: an id is never used twice): node, symptom and
        `fields["rank"]` (when an int) go to their own columns; the payload column
        is the JSON of {"fields": fields, **extra} (`extra`: "added_by",
        "cause_event", ...), encoded when the row is written if `fields` is flat
        (no extra), else now.  A plain tuple: see `EventRow`."""
        ids = self._ids
        et = ids["event_types"].get(event_type)
        if et is None:
            et = self.lookup("event_types", event_type)
        rid = None
        if rule:
            rid = ids["rules"].get(rule)
            if rid is None:
                rid = self.lookup("rules", rule)
        rank = fields.get("rank") if fields else None
        if rank is not None and (type(rank) is not int):
            rank = rank if isinstance(rank, int) and not isinstance(rank, bool) else None
        eid = self._next_id
        self._next_id = eid + 1
        if (not extra and fields is not None and _STR_TYPE.issuperset(map(type, fields))
                and _FLAT_TYPES.issuperset(map(type, fields.values()))):
            # the key order the JSON (sort_keys) gives back; values copied, the caller's dict stays its own
            order, getter = _sorted_keys(fields)
            return (eid, context_id, et, rid, obs_context_id, timestamp, line_num,
                    datum if datum is None or len(datum) <= MAX_DATUM else _clip(datum), node, symptom, rank, None,
                    order, *(fields.values() if getter is None else getter(fields)))
        body: dict[str, Any] = {"fields": fields} if fields is not None else {}
        if extra:
            body.update(extra)
        return (eid, context_id, et, rid, obs_context_id, timestamp, line_num, _clip(datum), node, symptom, rank,
                _ENCODER.encode(body))

    def insert_now(self, row: tuple) -> int:
        """Write one row now (with everything buffered before it); returns its id."""
        self.add(row)
        self.flush()
        return row[0]

    def execute_many(self, sql: str, rows: list[tuple]) -> None:
        """Run one statement over many rows in one transaction (attribution's changes)."""
        if not rows:
            return
        self.conn.execute("BEGIN")
        try:
            self.conn.executemany(sql, rows)
        finally:
            self.conn.execute("COMMIT")

    def flush(self, rows_may_wait: bool = False) -> None:
        """Make the store current: buffered inserts, and the changes streams hold.

        `rows_may_wait` (extraction, and reads answered from kept rows): rows of
        contexts whose kept rows mirror them, in an in-memory store, stay out of
        SQLite until something reads or changes SQLite for them (a plain `flush()`,
        a restore, a count, a written-through change, a spill, `keep_rows` reached):
        a one-shot attribution never writes them (a fifth of its CPU at 20 %
        evidence lines).  Anything else is written now."""
        for s in list(self.pending):
            s.write_through()
        if rows_may_wait and (not self._buffer or self._rows_can_wait()):
            self._late.extend(self._buffer)
            self._buffer = []
            if len(self._late) < self.spill_threshold:
                return
        self._write_rows()

    def _rows_can_wait(self) -> bool:
        if self.path is not None or self._private_dir is not None:
            return False
        mirrored = self._kept
        return all(c in mirrored and c not in self._diverged for c in {r[1] for r in self._buffer})

    def _write_rows(self) -> None:
        """Write the late rows, then the buffered ones (id order kept), to SQLite."""
        if not self._buffer and not self._late:
            return
        if self._late:
            rows, self._late = self._late + self._buffer, []
            self._buffer = []
        else:
            rows, self._buffer = self._buffer, []
        self.conn.execute("BEGIN")
        try:
            self.conn.executemany(_INSERT, map(_params, rows))
        finally:
            self.conn.execute("COMMIT")
        if self.path is None and self._private_dir is None:
            self._rows_in_memory += len(rows)
            if self._rows_in_memory > self.spill_threshold or self._db_bytes() > self.spill_bytes:
                self._spill()

    def _db_bytes(self) -> int:
        count = self.conn.execute("PRAGMA page_count").fetchone()[0]
        return int(count) * int(self.conn.execute("PRAGMA page_size").fetchone()[0])

    def add_repeats(self, rows: list[tuple]) -> None:
        """Record evidence aggregated beyond the per-key cap: rows of (context_id,
        obs_context_id, rule, event_type, symptom, node, count, first_line,
        last_line, last_timestamp)."""
        self._no_repeats = False
        self.execute_many(
            "INSERT INTO event_repeats(context_id, obs_context_id, source_rule, event_type, symptom, resources, count, "
            "first_line, last_line, last_timestamp) VALUES (?,?,?,?,?,?,?,?,?,?)",
            [(c, oc, self.lookup("rules", r) if r else None, self.lookup("event_types", t), *rest)
             for c, oc, r, t, *rest in rows])

    def repeats_by_group(self, context_id: int) -> dict[tuple, int]:
        """Events of a context aggregated rather than stored, per (rule, event type name,
        symptom, node)."""
        if self._no_repeats:
            return {}
        rows = self.conn.execute(
            "SELECT ru.name, t.name, r.symptom, r.resources, SUM(r.count) FROM event_repeats r "
            "JOIN event_types t ON t.id = r.event_type LEFT JOIN rules ru ON ru.id = r.source_rule "
            "WHERE r.context_id = ? GROUP BY 1, 2, 3, 4", (context_id,)).fetchall()
        return {(r[0], r[1], r[2], r[3]): int(r[4]) for r in rows}

    def left_out(self, context_id: int) -> dict[tuple[str | None, str | None], tuple[int, str | None]]:
        """(rule, node) -> (hits counted but not stored, the last of their timestamps) of a
        context: what extraction aggregated past the repeat / group caps."""
        if self._no_repeats:
            return {}
        rows = self.conn.execute(
            "SELECT ru.name, r.resources, SUM(r.count), MAX(r.last_timestamp) FROM event_repeats r "
            "LEFT JOIN rules ru ON ru.id = r.source_rule WHERE r.context_id = ? GROUP BY ru.name, r.resources",
            (context_id,)).fetchall()
        return {(rule, node): (int(count or 0), last) for rule, node, count, last in rows}

    def repeats(self, context_id: int, event_types: Sequence[str] | None = None) -> int:
        """How many events of a context (of these types) were aggregated rather than stored."""
        if self._no_repeats:
            return 0
        sql, args = "SELECT SUM(r.count) FROM event_repeats r", [context_id]
        if event_types is not None:
            sql += (" JOIN event_types t ON t.id = r.event_type WHERE r.context_id = ? "
                    f"AND t.name IN ({','.join('?' * len(event_types))})")
            args += list(event_types)
        else:
            sql += " WHERE r.context_id = ?"
        return int(self.conn.execute(sql, args).fetchone()[0] or 0)

    def _spill(self) -> None:
        """Move the in-memory database to a private file (mode 0700 folder)."""
        self._private_dir = tempfile.mkdtemp(prefix="rulekit-events-")
        os.chmod(self._private_dir, 0o700)
        target = sqlite3.connect(os.path.join(self._private_dir, "events.sqlite"), isolation_level=None,
                                 check_same_thread=False)
        self.conn.backup(target)
        self.conn.close()
        # a private scratch file: no durability wanted, and no fsync per batch
        target.execute("PRAGMA synchronous = OFF")
        target.execute("PRAGMA journal_mode = MEMORY")
        self.conn = target

    @property
    def spilled(self) -> bool:
        return self._private_dir is not None

    # ---- checkpoints ----
    def checkpoint(self, context_id: int) -> None:
        """Snapshot one context's events.  A context whose kept rows mirror it (in an
        in-memory or spilled store) is snapshotted by those rows: SQLite records that
        there is a checkpoint, and which rows change after it (`diverged`), and a
        restore rewrites only those.  Any other is copied in the main database (a
        spill copies it along; temp tables would be lost), as is every context of a
        store at a given path (its checkpoints outlive this manager)."""
        self.flush(rows_may_wait=True)
        kept = self.mirror(context_id)
        in_sql = kept is None or self.path is not None
        if in_sql:
            self._write_rows()  # copied in SQL below
        copied = self._copied
        if not in_sql and copied is not None and context_id not in copied:
            # by its kept rows, and no earlier copy to delete: one statement (a small job's one
            # checkpoint was four)
            self.conn.execute("INSERT OR REPLACE INTO checkpoints(context_id) VALUES (?)", (context_id,))
            self._undo[context_id] = (self._next_id, set())
        else:
            self.conn.execute("BEGIN")
            self.conn.execute("DELETE FROM checkpoint_events WHERE context_id = ?", (context_id,))
            self.conn.execute("INSERT OR REPLACE INTO checkpoints(context_id) VALUES (?)", (context_id,))
            if in_sql:
                self.conn.execute("INSERT INTO checkpoint_events SELECT * FROM events WHERE context_id = ?",
                                  (context_id,))
                self._undo.pop(context_id, None)
            else:
                self._undo[context_id] = (self._next_id, set())
            self.conn.execute("COMMIT")
            if copied is not None:
                if in_sql:
                    copied.add(context_id)
                else:
                    copied.discard(context_id)
        if kept is not None:
            self._kept_at_checkpoint[context_id] = kept[:]
        else:
            self._kept_at_checkpoint.pop(context_id, None)

    def _snapshot_in_sql(self) -> None:
        """Copy the in-memory checkpoints into the database (their kept rows are
        about to go): the checkpointed rows as they were, from the kept rows."""
        for context_id, _undo in list(self._undo.items()):
            if self._copied is not None:
                self._copied.add(context_id)
            self.execute_many(f"INSERT INTO checkpoint_events({_COLUMNS}) VALUES ({','.join('?' * 12)})",
                              [_params(r) for r in self._kept_at_checkpoint[context_id]])
        self._undo.clear()

    def restore(self, context_id: int) -> None:
        """Put back the context's snapshot (if any) and drop it."""
        exists = self.conn.execute("SELECT 1 FROM checkpoints WHERE context_id = ?", (context_id,)).fetchone()
        if not exists:
            return
        for s in list(self.streams):  # their working sets describe the state being undone (and their
            if s.context_id == context_id:  # changes need no write: the context's rows are replaced)
                s.forget()
        self.flush()
        undo = self._undo.pop(context_id, None)
        kept = self._kept.get(context_id)
        snapshot = self._kept_at_checkpoint.pop(context_id, None)
        self.conn.execute("BEGIN")
        if undo is not None and kept is not None and snapshot is not None:
            # undo what changed since: rows added after it go, rows changed are written as they were
            first_new, touched = undo
            self.conn.execute("DELETE FROM events WHERE context_id = ? AND id >= ?", (context_id, first_new))
            if touched:
                self.conn.executemany("DELETE FROM events WHERE id = ?", [(i,) for i in touched])
                self.conn.executemany(_INSERT, [_params(r) for r in snapshot if r[0] in touched])
        else:
            self.conn.execute("DELETE FROM events WHERE context_id = ?", (context_id,))
            self.conn.execute("INSERT INTO events SELECT * FROM checkpoint_events WHERE context_id = ?", (context_id,))
            self.conn.execute("DELETE FROM checkpoint_events WHERE context_id = ?", (context_id,))
        self.conn.execute("DELETE FROM checkpoints WHERE context_id = ?", (context_id,))
        self.conn.execute("COMMIT")
        if self._copied is not None:
            self._copied.discard(context_id)
        if kept is not None:
            self._kept_count -= len(kept)
            if snapshot is None:  # the checkpoint was not mirrored: nor is what it restored
                del self._kept[context_id]
            else:  # the rows kept since the checkpoint are gone from SQLite too
                self._kept[context_id] = snapshot
                self._kept_count += len(snapshot)
            self._diverged.discard(context_id)
            self._kept_unsorted.discard(context_id)

    def count(self, context_id: int | None = None) -> int:
        self.flush()
        if context_id is None:
            return int(self.conn.execute("SELECT COUNT(*) FROM events").fetchone()[0])
        return int(self.conn.execute("SELECT COUNT(*) FROM events WHERE context_id = ?", (context_id,)).fetchone()[0])

    def stream(self, context_id: int) -> "EventStream":
        return EventStream(self, context_id)

    # ---- lifetime ----
    def close(self, flush: bool = True) -> None:
        """Flush (or with flush=False discard) buffered events, release the connection (an
        in-memory one that never spilled goes back to `freshdb`, wiped, for the next store)
        and delete private spill files."""
        self._close(flush, give=True)

    def _close(self, flush: bool, give: bool) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            if flush:
                self.flush()
            else:
                self._buffer.clear()
                self._late.clear()
                self.pending.clear()
            self._kept.clear()
            if give and self._template is not None and not self.spilled:
                conn, self.conn = self.conn, _CLOSED  # (no use after close reaches the next store's copy)
                give_back(conn, self._template)
            else:
                self.conn.close()
        finally:
            if self._private_dir:
                shutil.rmtree(self._private_dir, ignore_errors=True)
                self._private_dir = None

    def __del__(self) -> None:
        try:
            self._close(flush=False, give=False)  # (a finalizer takes no lock: the connection is closed)
        except Exception:
            pass


_ENCODER = json.JSONEncoder(sort_keys=True, default=str)  # built once: json.dumps(**options) builds one per call
# the C encoder `_ENCODER.encode` builds on every call, built once, for flat payloads (no
# circular check, no default: a flat dict needs neither); same text as `_ENCODER`
_FLAT_ENCODE = c_make_encoder(None, str, encode_basestring_ascii, None, ": ", ", ", True, False, True) \
    if c_make_encoder is not None else (lambda o, _level: [_ENCODER.encode(o)])


def encode_payload(payload: dict[str, Any]) -> str:
    """The payload column: everything but the keys stored in their own columns."""
    return _ENCODER.encode({k: v for k, v in payload.items() if k not in _COLUMN_KEYS})


def _clip(text: str | None) -> str | None:
    if text is None or len(text) <= MAX_DATUM:
        return text
    return text[:MAX_DATUM] + f"... [{len(text) - MAX_DATUM} more characters]"


# one context's events, in id order: the small lookup tables are mapped in Python
# (`_Names`), not joined per row
_SELECT = ("SELECT id, event_type, source_rule, resources, timestamp, line_num, source_datum, payload, obs_context_id, "
           "symptom FROM events WHERE context_id = ? ORDER BY id")
_OBS = ("SELECT oc.id, s.name, f.name, oc.label FROM observation_contexts oc "
        "LEFT JOIN obs_sources s ON s.id = oc.source_id LEFT JOIN obs_formats f ON f.id = oc.format_id")


class _Names:
    """Id -> name of event types and rules, id -> (source, format, label) of observation
    contexts: read once per working set (a few hundred rows, not one join per event)."""

    def __init__(self, conn: sqlite3.Connection, context_id: int, manager: "EventManager | None" = None):
        types = manager.names_by_id("event_types") if manager is not None else None
        rules = manager.names_by_id("rules") if manager is not None else None
        self.types = types if types is not None else dict(conn.execute("SELECT id, name FROM event_types").fetchall())
        self.rules = rules if rules is not None else dict(conn.execute("SELECT id, name FROM rules").fetchall())
        self.obs = {r[0]: r[1:] for r in conn.execute(_OBS + " WHERE oc.context_id = ?", (context_id,))}
        self._conn = conn

    def obs_of(self, oc: int | None) -> tuple:
        if oc is None:
            return (None, None, None)
        got = self.obs.get(oc)
        if got is None:  # another context's observation (not made by this library's writers)
            row = self._conn.execute(_OBS + " WHERE oc.id = ?", (oc,)).fetchone()
            got = self.obs[oc] = row[1:] if row else (None, None, None)
        return got


_loads = json.JSONDecoder().decode


def _decode(row: tuple, names: _Names) -> Event:
    """An Event from a row read back from SQLite (`_SELECT`)."""
    eid, etype, rule, node, ts, line_num, datum, raw, oc, symptom = row
    payload = _loads(raw) if raw else {}
    payload["node"] = node
    payload["symptom"] = symptom
    source, fmt, label = names.obs_of(oc)
    # positional, in Event's field order (the working set decodes every event of a job)
    return Event(eid, names.types[etype], names.rules.get(rule) if rule is not None else None, node, symptom, ts,
                 line_num, datum, source, fmt, label, payload, oc)


def _from_rows(rows: Iterable[tuple], names: _Names) -> Iterator[Event]:
    """Events from kept rows: the same values `_decode` gives for them once written
    (a flat fields dict is copied, not round-tripped through JSON)."""
    types, rules, obs = names.types, names.rules, {}
    for row in rows:
        eid, _ctx, etype, rule, oc, ts, line_num, datum, node, symptom, _rank, raw = row[:12]
        if raw is None:
            payload = {"fields": dict(zip(row[12], row[13:])), "node": node, "symptom": symptom}
        else:
            payload = _loads(raw) if raw else {}
            payload["node"] = node
            payload["symptom"] = symptom
        where = obs.get(oc)
        if where is None:
            where = obs[oc] = names.obs_of(oc)
        yield Event(eid, types[etype], rules.get(rule) if rule is not None else None, node, symptom, ts, line_num,
                    datum, where[0], where[1], where[2], payload, oc)


class ReadOnlyStreamError(RuntimeError):
    pass


class _WorkingSet:
    """One context's events, decoded once: by id (id order), by type and by symptom.

    Every table is in id order (new events get larger ids) except where a retype
    or a symptom change appended to one; that one is re-sorted on its next read.
    A node never changes, so the node table never needs it."""

    def __init__(self, events: Iterable[Event]):
        self.by_id: dict[int, Event] = {}
        self.by_type: dict[str, dict[int, Event]] = {}
        self.by_symptom: dict[str | None, dict[int, Event]] = {}
        self.by_node: dict[str | None, dict[int, Event]] = {}
        self._unsorted: set[str] = set()
        self._unsorted_symptoms: set[str | None] = set()
        self.dirty: dict[int, Event] = {}  # changed since the last write-through
        self.deleted: list[int] = []
        by_id, by_type, by_symptom, by_node = self.by_id, self.by_type, self.by_symptom, self.by_node
        with paused_gc():  # a job's events in one go, none of them cyclic: no collection passes over them midway
            for e in events:
                i = e.id
                by_id[i] = e
                d = by_type.get(e.event_type)
                if d is None:
                    d = by_type[e.event_type] = {}
                d[i] = e
                d = by_symptom.get(e.symptom)
                if d is None:
                    d = by_symptom[e.symptom] = {}
                d[i] = e
                d = by_node.get(e.node)
                if d is None:
                    d = by_node[e.node] = {}
                d[i] = e

    def put(self, e: Event) -> None:
        self.by_id[e.id] = e
        self.by_type.setdefault(e.event_type, {})[e.id] = e
        self.by_symptom.setdefault(e.symptom, {})[e.id] = e
        self.by_node.setdefault(e.node, {})[e.id] = e

    def remove(self, e: Event) -> None:
        del self.by_id[e.id]
        self.by_type[e.event_type].pop(e.id, None)
        self.by_symptom[e.symptom].pop(e.id, None)
        self.by_node[e.node].pop(e.id, None)
        self.dirty.pop(e.id, None)
        self.deleted.append(e.id)

    def retype(self, e: Event, to: str) -> None:
        self.by_type[e.event_type].pop(e.id, None)
        e.event_type = to
        self.by_type.setdefault(to, {})[e.id] = e
        self._unsorted.add(to)
        self.dirty[e.id] = e

    def resymptom(self, e: Event, symptom: str) -> None:
        self.by_symptom[e.symptom].pop(e.id, None)
        e.symptom = symptom
        self.by_symptom.setdefault(symptom, {})[e.id] = e
        self._unsorted_symptoms.add(symptom)
        self.dirty[e.id] = e

    def of_symptom(self, symptom: str) -> dict[int, Event]:
        d = self.by_symptom.get(symptom)
        if d is None:
            return {}
        if symptom in self._unsorted_symptoms:
            self._unsorted_symptoms.discard(symptom)
            d = self.by_symptom[symptom] = dict(sorted(d.items()))
        return d

    def of_type(self, t: str) -> dict[int, Event]:
        d = self.by_type.get(t)
        if d is None:
            return {}
        if t in self._unsorted:
            self._unsorted.discard(t)
            d = self.by_type[t] = dict(sorted(d.items()))
        return d


_type_name = event_type_name
_trace_entry = tuple.__new__  # TraceEntry(...) without the generated __new__'s call
_by_id = operator.attrgetter("id")
_first = operator.itemgetter(0)


class EventStream:
    """One job's events: query, add, demote (bad -> interesting), promote, discard.

    Queries return the working set's own Event objects (id order); change them
    only through the stream."""

    def __init__(self, manager: EventManager, context_id: int, phase: str = "", trace: list[TraceEntry] | None = None):
        self.manager = manager
        self.context_id = context_id
        self.phase = phase
        self.trace: list[TraceEntry] = trace if trace is not None else []
        self.read_only = False
        self.rule: str | None = None  # the rule running now: the default author of every change
        self._ws: _WorkingSet | None = None
        # symptom alias -> canonical name (the registry's), applied on every write and query
        self.canonical: Callable[[str], str] = lambda name: name
        # the job's events -> the clock that settles each (`rulekit.engine.timeline.Clock`); None: as stored
        self.timeline: Callable[[list[Event]], Any] | None = None
        self._clock: Any = None

    def _set(self) -> _WorkingSet:
        if self._ws is None:
            self.manager.flush(rows_may_wait=True)
            conn = self.manager.conn
            names = _Names(conn, self.context_id, self.manager)
            kept = self.manager.mirror(self.context_id)
            if kept is not None:  # the rows this context inserted: no read back, no JSON round trip
                events = _from_rows(kept, names)
            else:
                self.manager.flush()
                events = (_decode(r, names) for r in conn.execute(_SELECT, (self.context_id,)))
            if self.timeline is not None:  # every event placed on the job's clock before a rule reads one
                with paused_gc():  # (the job's events in one go, as `_WorkingSet` builds them)
                    events = list(events)
                    self._clock = self.timeline(events)
                    settle = self._clock.settle
                    for e in events:
                        settle(e)
            self._ws = _WorkingSet(events)
            self.manager.streams.add(self)
        return self._ws

    @contextmanager
    def frozen(self) -> Iterator["EventStream"]:
        """Read-only inside the block (refiners, collectors); the previous state after it."""
        before = self.read_only
        self.read_only = True
        try:
            yield self
        finally:
            self.read_only = before

    @contextmanager
    def running(self, rule: str | None, phase: str | None = None) -> Iterator["EventStream"]:
        """`rule` (and `phase`) author the changes made inside the block; a rule's
        calls need not repeat its own name."""
        before = self.rule, self.phase
        self.rule = rule
        if phase is not None:
            self.phase = phase
        try:
            yield self
        finally:
            self.rule, self.phase = before

    def _author(self, rule: str | None) -> str:
        """The rule a change is recorded for: the one named, else the running one."""
        name = self.rule if rule is None else rule  # "" stays "" (refiners may name no rule)
        if name is None:
            raise ValueError("no rule name: pass rule=... or change the stream from inside a running rule")
        return name

    def forget(self) -> None:
        """Drop the working set (after a restore); the next read decodes the store again."""
        self._ws = None
        self.manager.streams.discard(self)
        self.manager.pending.discard(self)

    def write_through(self) -> None:
        """Write the working set's changes to SQLite in one batch (each changed event
        once).  The manager calls it before it reads or snapshots the store."""
        ws = self._ws
        if ws is None or not (ws.dirty or ws.deleted):
            return
        dirty, deleted = ws.dirty, ws.deleted
        ws.dirty, ws.deleted = {}, []
        self.manager.pending.discard(self)
        m = self.manager
        m._write_rows()  # the rows changed here must be in SQLite first
        m.diverged(self.context_id, itertools.chain(deleted, dirty))
        m.execute_many("DELETE FROM events WHERE id = ? AND context_id = ?", [(i, self.context_id) for i in deleted])
        m.execute_many("UPDATE events SET event_type = ?, symptom = ?, payload = ? WHERE id = ? AND context_id = ?",
                       [(m.lookup("event_types", e.event_type), e.symptom, encode_payload(e.payload), e.id,
                         self.context_id) for e in dirty.values()])

    # ---- reading ----
    def query(self, event_type: str | EventType | Sequence[str] | None = None, symptom: str | None = None,
              prefix: str | Sequence[str] | None = None, node: str | None = None, rule: str | None = None) -> list[Event]:
        ws = self._set()
        if symptom is not None:
            symptom = self.canonical(symptom)
        if event_type is None:
            types = None
        elif isinstance(event_type, (str, EventType)):
            types = (_type_name(event_type),)
        else:
            types = tuple(dict.fromkeys(_type_name(t) for t in event_type))
        if symptom is not None or node is not None:  # the smaller index (each is in id order)
            a = ws.of_symptom(symptom) if symptom is not None else None
            b = ws.by_node.get(node, {}) if node is not None else None
            pick = a if b is None or (a is not None and len(a) <= len(b)) else b
            pool: Iterable[Event] = pick.values()
        elif types is not None and len(types) == 1:
            pool = ws.of_type(types[0]).values()
            types = None
        else:
            pool = ws.by_id.values()
        pre = None if prefix is None else ((prefix,) if isinstance(prefix, str) else tuple(prefix))
        if node is None and rule is None and pre is None:  # the common reads: one index, at most the type left
            if types is None:
                return list(pool)
            return [e for e in pool if e.event_type in types]
        out = []
        for e in pool:
            if types is not None and e.event_type not in types:
                continue
            if node is not None and e.node != node:
                continue
            if symptom is not None and e.symptom != symptom:
                continue
            if rule is not None and e.rule != rule:
                continue
            if pre is not None and not (e.symptom and e.symptom.startswith(pre)):
                continue
            out.append(e)
        return out

    def select(self, sel: Selection, *more: Selection) -> list[Event]:
        """The events a `Selection` (or any of several) names, in id order, answered
        from the symptom index: exact symptoms are looked up, prefixes scan symptom
        names, not events.  Each event once, even when several patterns name it."""
        if more:
            return sorted({e.id: e for s in (sel, *more) for e in self.select(s)}.values(), key=_by_id)
        ws = self._set()
        if sel.any_symptom:
            return self.query(list(sel.types)) if sel.types is not None else self.query()
        names = set(sel.symptoms)  # as written, like the DSL's own matcher (no alias lookup)
        if sel.prefixes:
            names.update(s for s in ws.by_symptom if isinstance(s, str) and s.startswith(sel.prefixes))
        types = None if sel.types is None else frozenset(sel.types)
        out = [e for n in names for e in ws.of_symptom(n).values() if types is None or e.event_type in types]
        out.sort(key=_by_id)
        return out

    def left_out(self) -> dict[tuple[str | None, str | None], tuple[int, str | None]]:
        """(rule, node) -> (count, last timestamp) of the hits extraction counted but did
        not store, past the repeat / group caps (`event_repeats`).  A rule that reasons
        about who printed a line, or about the last of many, reads it to know its view is
        partial and says so.  (The rows are written when each observation ends: nothing
        is flushed here.)"""
        return self.manager.left_out(self.context_id)

    def get(self, event_id: int) -> Event | None:
        return self._set().by_id.get(event_id)

    def events(self, ids: Iterable[int]) -> list[Event]:
        """The events with these ids still in the stream, in the order given."""
        by_id = self._set().by_id
        return [e for e in map(by_id.get, ids) if e is not None]

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

    def add(self, spec: EventSpec, rule: str | None = None, cause: Event | None = None, reason: str = "") -> Event:
        """Add a derived event (`cause`: the event it is derived from)."""
        self._check_writable()
        rule = self._author(rule)
        ws = self._set()
        etype = _type_name(spec.type)
        node = spec.node if spec.node is not None else (cause.node if cause else None)
        symptom = self.canonical(spec.symptom) if spec.symptom else spec.symptom
        extra: dict[str, Any] = {"added_by": rule}
        if cause is not None:
            extra["cause_event"] = cause.id
        m = self.manager
        ts = spec.timestamp or (cause.timestamp if cause else None)
        fields = dict(spec.fields)
        if not ts and cause is not None and cause.fields.get("carried_ts"):
            fields.setdefault("carried_ts", cause.fields["carried_ts"])  # derived from a line: its inherited stamp too
        row = m.row(self.context_id, etype, rule, cause.obs_context_id if cause else None, ts,
                    spec.line_num if spec.line_num is not None else (cause.line_num if cause else None),
                    spec.datum if spec.datum is not None else (cause.datum if cause else None), node, symptom,
                    fields, extra)
        m.add(row)  # buffered like any insert: written (and numbered) before any read of the store
        r = EventRow.of(row)
        self.trace.append(TraceEntry(self.phase, rule, "add", r.id, symptom, node, reason))
        # what a read of the row gives back: the stored (clipped, JSON-normalised) values
        stored = _loads(r.payload) if r.payload is not None else {"fields": r.fields}
        stored["node"], stored["symptom"] = node, symptom
        ev = Event(id=r.id, event_type=etype, rule=rule, node=node, symptom=symptom, timestamp=r.timestamp,
                   line_num=r.line_num, datum=r.source_datum, source=cause.source if cause else None,
                   format=cause.format if cause else None, label=cause.label if cause else None,
                   payload=stored, obs_context_id=r.obs_context_id)
        if self._clock is not None:
            self._clock.settle(ev)
        ws.put(ev)
        return ev

    def move_to_node(self, event: Event, node: str, reason: str = "", rule: str | None = None) -> Event:
        """Re-attribute `event` to `node`: a copy on that node (same type, symptom,
        fields, line, timestamp and text, caused by the original) replaces it."""
        e = event
        moved = self.add(EventSpec(type=short_type(e.event_type), symptom=e.symptom, node=node, fields=dict(e.fields),
                                   line_num=e.line_num, timestamp=e.timestamp, datum=e.datum),
                         rule=rule, cause=e, reason=reason)
        self.discard([e], rule=rule, reason=f"re-attributed to {node}")
        return moved

    def _retype(self, events: Iterable[Event], to: EventType, frm: EventType, rule: str | None, action: str,
                reason: str) -> int:
        self._check_writable()
        rule = self._author(rule)
        ws = self._set()
        n = 0
        frm_type, to_type = frm.value, to.value
        by_id, dirty, trace, phase = ws.by_id, ws.dirty, self.trace, self.phase
        src = ws.by_type.get(frm_type, {})
        dst = ws.by_type.setdefault(to_type, {})
        demote = action == "demote"
        for given in events:
            e = by_id.get(given.id)
            if e is None or e.event_type != frm_type:
                continue
            i = e.id
            payload = e.payload
            history = payload.get("history")
            if history is None:
                history = payload["history"] = []
            history.append({"rule": rule, "action": action, "reason": reason})
            if demote:
                payload["demoted_by"] = rule
            # the working set's retype, inline (a filter or back-propagation moves thousands)
            src.pop(i, None)
            e.event_type = to_type
            dst[i] = e
            dirty[i] = e
            if given is not e:  # a caller's copy stays in step
                given.event_type, given.payload = to_type, payload
            n += 1
            trace.append(_trace_entry(TraceEntry, (phase, rule, action, i, e.symptom, e.node, reason)))
        if n:
            ws._unsorted.add(to_type)
            self.manager.pending.add(self)
        return n

    def demote(self, events: Iterable[Event], rule: str | None = None, reason: str = "") -> int:
        """bad -> interesting; returns how many changed."""
        return self._retype(events, EventType.INTERESTING_NODE, EventType.BAD_NODE, rule, "demote", reason)

    def note(self, events: Iterable[Event], rule: str | None = None, reason: str = "", action: str = "keep") -> int:
        """Record in the trace why a rule left these events as they are (`action`, e.g.
        "keep": a victim kept bad because it came first); changes nothing, so a frozen
        stream may be noted too.  Returns how many were noted."""
        rule = self._author(rule)
        n = 0
        for e in events:
            self.trace.append(TraceEntry(self.phase, rule, action, e.id, e.symptom, e.node, reason))
            n += 1
        return n

    def promote(self, events: Iterable[Event], rule: str | None = None, reason: str = "") -> int:
        """interesting -> bad; returns how many changed."""
        return self._retype(events, EventType.BAD_NODE, EventType.INTERESTING_NODE, rule, "promote", reason)

    def discard(self, events: Iterable[Event], rule: str | None = None, reason: str = "") -> int:
        self._check_writable()
        rule = self._author(rule)
        ws = self._set()
        n = 0
        for given in events:
            e = ws.by_id.get(given.id)
            if e is None:
                continue
            ws.remove(e)
            n += 1
            self.trace.append(TraceEntry(self.phase, rule, "discard", e.id, e.symptom, e.node, reason))
        if n:
            self.manager.pending.add(self)
        return n

    def set_symptom(self, event: Event, symptom: str, rule: str | None = None, reason: str = "") -> None:
        self._check_writable()
        rule = self._author(rule)
        ws = self._set()
        e = ws.by_id.get(event.id)
        if e is None:  # discarded, or not this job's: nothing to change
            return
        symptom = self.canonical(symptom)
        e.payload["symptom"] = symptom
        e.payload.setdefault("history", []).append({"rule": rule, "action": "set_symptom", "reason": reason})
        self.trace.append(TraceEntry(self.phase, rule, "set_symptom", e.id, symptom, e.node, reason))
        ws.resymptom(e, symptom)
        self.manager.pending.add(self)
        if event is not e:
            event.symptom, event.payload = symptom, e.payload
