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
used across `fork`).  Pure: imports nothing of rulekit.
"""
from __future__ import annotations

import os
import sqlite3
import threading
from collections import OrderedDict

Seeds = tuple[tuple[str, tuple[str, ...]], ...]  # (lookup table, its names in order)

KEEP = 8  # templates kept: the schema's, the event types', the corpus's rule list, the latest line tests' groups

Ids = dict[str, dict[str, int]]  # {table: {name: id}}
ById = dict[str, dict[int, str]]  # {table: {id: name}}
_templates: "OrderedDict[tuple, tuple[sqlite3.Connection, Ids, ById]]" = OrderedDict()
_lock = threading.Lock()


def fresh_memory_db(schema: str, seeds: Seeds) -> tuple[sqlite3.Connection, Ids, ById]:
    """(a new in-memory connection holding `schema` and the `seeds` rows, {table: {name: id}}
    of those rows: the caller's copy, {table: {id: name}} of them: shared by every copy of
    the template, never to be changed)."""
    with _lock:
        template, ids, by_id = _template(schema, seeds)
        conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        template.backup(conn)
    return conn, {table: dict(names) for table, names in ids.items()}, by_id


def _template(schema: str, seeds: Seeds) -> tuple[sqlite3.Connection, Ids, ById]:
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
        base, base_ids, _ = _template(schema, seeds[:-1])
        base.backup(conn)
        ids = {table: dict(names) for table, names in base_ids.items()}
        table, names = seeds[-1]
        known = ids.setdefault(table, {})
        # the table holds just the `known` rows: the ids an INSERT of each new name in turn gives
        new = [n for n in dict.fromkeys(names) if n not in known]
        first = max(known.values(), default=0) + 1
        conn.execute("BEGIN")
        conn.executemany(f"INSERT INTO {table}(id, name) VALUES (?, ?)", enumerate(new, first))
        conn.execute("COMMIT")
        known.update(zip(new, range(first, first + len(new))))
    got = _templates[key] = (conn, ids, {table: {i: name for name, i in names.items()} for table, names in ids.items()})
    while len(_templates) > KEEP:
        _templates.popitem(last=False)[1][0].close()
    return got
