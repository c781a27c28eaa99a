"""A new in-memory event database, schema and lookup rows included, copied from a
template instead of built: `sqlite3`'s backup copies the few pages of a database
just made in ~0.03 ms, where running the schema script took ~0.6 ms and each
lookup row (every event type and rule name a store starts with, 562 for the
bundled corpus: 3.4 ms in all) ~5 µs more.  `rulekit test` opens one store per
test case (841 for the bundled rules), a session one per job, the Service one per
request (`bench/toolkit_ci.py`: `rulekit test` 1.56x faster with it).

A template is built once per process for each list of seed rows (per lookup
table, its names, inserted in order, each once: the ids the store's own `lookup`
would give them) from the template of the list without its last table's rows, the
few most recently used kept: a session's corpus-wide rule list is one copy, a line
test's rule group (one template each, used once) a copy of the event types' one and
a few rows.  A forked process builds its own (a SQLite connection is not to be
used across `fork`).

A copy its user is done with can be given back (`give_back`): it is wiped to the
template's rows (every row past the template's last one deleted, in every table)
and handed to the next caller, so a server answering many small jobs does not pay,
per job, a new connection, its first statement (SQLite reads the schema: ~0.3 ms)
and the preparing of every statement again.  A copy is kept only when it is the
template again, checked: the template's row count in every table, and no more
pages than the template (a copy that grew is closed, so a big job's memory is not
kept; the store's spill threshold counts pages).  The rows a template holds are
never changed by the store (it only adds rows to its lookup tables).  Pure: imports
nothing of rulekit.
"""
from __future__ import annotations

import os
import sqlite3
import threading
from collections import OrderedDict
from typing import Any

Seeds = tuple[tuple[str, tuple[str, ...]], ...]  # (lookup table, its names in order)

KEEP = 8  # templates kept: the schema's, the event types', the corpus's rule list, the latest line tests' groups
SPARE = 8  # wiped copies kept per template for the next callers (about the jobs a process runs at once)

Ids = dict[str, dict[str, int]]  # {table: {name: id}}
ById = dict[str, dict[int, str]]  # {table: {id: name}}


class _Template:
    __slots__ = ("pid", "conn", "ids", "by_id", "tables", "wipe", "probe", "pages", "spare", "kept")

    def __init__(self, conn: sqlite3.Connection, ids: Ids):
        self.pid = os.getpid()
        self.kept = True  # False once dropped from `_templates`
        self.conn = conn
        self.ids = ids
        self.by_id: ById = {table: {i: name for name, i in names.items()} for table, names in ids.items()}
        # every table (sqlite_sequence too: an AUTOINCREMENT counter is a row there): (name, rows, last rowid)
        names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        self.tables = tuple((t, *conn.execute(f'SELECT COUNT(*), COALESCE(MAX(rowid), 0) FROM "{t}"').fetchone())
                            for t in names)
        # one statement, the probe: the pages; per table the template leaves empty (most), whether it
        # holds a row (then all go); per table with rows (the lookup tables seeded), all its rows and
        # those past the template's last (to delete): the difference, its rows up to the last, must be
        # as many as the template has.  (A whole-table COUNT(*) counts the b-tree's pages, a range walks
        # its rows: counting the rule names' hundreds of rows up to the last took ~0.1 ms a job.)
        cols = ["(SELECT page_count FROM pragma_page_count())"]
        wipe = []  # (probe column: rows to delete, template rows: None for an empty table, statement)
        for t, n, last in self.tables:
            if n == 0:
                wipe.append((len(cols), None, f'DELETE FROM "{t}"'))
                cols.append(f'EXISTS (SELECT 1 FROM "{t}")')
            else:
                wipe.append((len(cols) + 1, n, f'DELETE FROM "{t}" WHERE rowid > {last}'))
                cols += [f'(SELECT COUNT(*) FROM "{t}")', f'(SELECT COUNT(*) FROM "{t}" WHERE rowid > {last})']
        self.wipe = tuple(wipe)
        self.probe = "SELECT " + ", ".join(cols)
        self.pages = conn.execute("PRAGMA page_count").fetchone()[0]
        self.spare: list[sqlite3.Connection] = []  # wiped copies, ready


_templates: "OrderedDict[tuple, _Template]" = OrderedDict()
# the same seeds again (a session's: the corpus's rule-name tuple, the same object every time) are
# found by the identity of their parts, not by hashing a key of a thousand names (~30 µs a time)
_last: list[tuple[str, Seeds, _Template]] = []
_lock = threading.Lock()


def fresh_memory_db(schema: str, seeds: Seeds) -> tuple[sqlite3.Connection, Ids, ById, Any]:
    """(a new in-memory connection holding `schema` and the `seeds` rows, {table: {name: id}}
    of those rows: the caller's copy, {table: {id: name}} of them: shared by every copy of
    the template, never to be changed, and the handle to give the copy back with
    (`give_back`)).  A copy given back is as new."""
    with _lock:
        t = _same_as_last(schema, seeds) or _template(schema, seeds)
        if _last and _last[0][2] is not t or not _last:
            _last[:] = [(schema, seeds, t)]
        conn = t.spare.pop() if t.spare else None
        if conn is None:
            conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
            t.conn.backup(conn)
    return conn, {table: dict(names) for table, names in t.ids.items()}, t.by_id, t


def _same_as_last(schema: str, seeds: Seeds) -> _Template | None:
    if not _last:
        return None
    s, last, t = _last[0]
    if s is not schema or len(last) != len(seeds) or not t.kept or t.pid != os.getpid():
        return None
    for (table, names), (table2, names2) in zip(seeds, last):
        if table != table2 or names is not names2:
            return None
    return t  # (not moved to the end: hashing its key is the cost saved; eviction spares it, `_template`)


def give_back(conn: sqlite3.Connection, handle: Any) -> None:
    """The caller is done with `conn`, a copy `fresh_memory_db` gave with `handle`: wiped
    and kept for the next caller when it is the template again, else closed.  Not from a
    finalizer (`__del__`): the lock here may be held by the thread the collector runs in."""
    t: _Template = handle
    if t.kept and t.pid == os.getpid() and len(t.spare) < SPARE and _wiped(conn, t):
        with _lock:
            if t.kept and len(t.spare) < SPARE:
                t.spare.append(conn)
                return
    conn.close()


def _wiped(conn: sqlite3.Connection, t: _Template) -> bool:
    """`conn` back to the template's rows; False when it cannot be (then it is to be closed)."""
    try:
        if conn.in_transaction:
            return False
        got = conn.execute(t.probe).fetchone()
        if got[0] > t.pages or any(n is not None and got[i - 1] - got[i] != n for i, n, _ in t.wipe):
            return False
        for i, _, sql in t.wipe:
            if got[i]:  # only the tables its user added rows to
                conn.execute(sql)
        return True
    except sqlite3.Error:  # (a closed connection included)
        return False


def _template(schema: str, seeds: Seeds) -> _Template:
    """The template of `seeds` on `schema`: a copy of the one of all seeds but the last, with
    the last one's rows (so a rule list seen once, a line test's, costs a copy and its
    few rows, not the schema script; the shorter templates stay the most recently used)."""
    key = (os.getpid(), schema, seeds)
    got = _templates.get(key)
    if got is not None:
        _templates.move_to_end(key)
        return got
    conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
    ids: dict[str, dict[str, int]] = {}
    if not seeds:
        conn.executescript(schema)
    else:
        base = _template(schema, seeds[:-1])
        base.conn.backup(conn)
        ids = {table: dict(names) for table, names in base.ids.items()}
        table, names = seeds[-1]
        known = ids.setdefault(table, {})
        # the table holds just the `known` rows: the ids an INSERT of each new name in turn gives
        new = [n for n in dict.fromkeys(names) if n not in known]
        first = max(known.values(), default=0) + 1
        conn.execute("BEGIN")
        conn.executemany(f"INSERT INTO {table}(id, name) VALUES (?, ?)", enumerate(new, first))
        conn.execute("COMMIT")
        known.update(zip(new, range(first, first + len(new))))
    got = _templates[key] = _Template(conn, ids)
    while len(_templates) > KEEP:
        k, old = _templates.popitem(last=False)
        if _last and _last[0][2] is old:  # the latest used: kept
            _templates[k] = old
            continue
        old.kept = False
        if _last and _last[0][2] is old:
            _last.clear()
        for c in (old.conn, *old.spare):
            c.close()
        old.spare.clear()
    return got
