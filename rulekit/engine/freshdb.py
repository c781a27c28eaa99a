"""A new in-memory event database, schema and lookup rows included, copied from a
template instead of built: `sqlite3`'s backup copies the few pages of a database
just made in ~0.03 ms, where running the schema script took ~0.6 ms and each
lookup row (every event type and rule name a store starts with, 562 for the
bundled corpus: 3.4 ms in all) ~5 µs more.  `rulekit test` opens one store per
test case (841 for the bundled rules), a session one per job, the Service one per
request (`bench/toolkit_ci.py`: `rulekit test` 1.55x faster with it).

A template is built once per process, schema and seed rows (per lookup table, its
names, inserted in order, each once: the ids the store's own `lookup` would give
them), the few most recent kept.  A forked process builds its own (a SQLite
connection is not to be used across `fork`).  Pure: imports nothing of rulekit.
"""
from __future__ import annotations

import os
import sqlite3
import threading
from collections import OrderedDict

Seeds = tuple[tuple[str, tuple[str, ...]], ...]  # (lookup table, its names in order)

KEEP = 8  # templates kept (one per distinct rule list: the corpus's, a rule group's for its line tests)

_templates: "OrderedDict[tuple, tuple[sqlite3.Connection, dict[str, dict[str, int]]]]" = OrderedDict()
_lock = threading.Lock()


def fresh_memory_db(schema: str, seeds: Seeds) -> tuple[sqlite3.Connection, dict[str, dict[str, int]]]:
    """(a new in-memory connection holding `schema` and the `seeds` rows, {table: {name: id}}
    of those rows: the caller's copy)."""
    key = (os.getpid(), schema, seeds)
    with _lock:
        got = _templates.get(key)
        if got is None:
            got = _templates[key] = _build(schema, seeds)
            while len(_templates) > KEEP:
                _templates.popitem(last=False)[1][0].close()
        else:
            _templates.move_to_end(key)
        template, ids = got
        conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        template.backup(conn)
    return conn, {table: dict(names) for table, names in ids.items()}


def _build(schema: str, seeds: Seeds) -> tuple[sqlite3.Connection, dict[str, dict[str, int]]]:
    conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
    conn.executescript(schema)
    ids: dict[str, dict[str, int]] = {}
    conn.execute("BEGIN")
    for table, names in seeds:
        known = ids.setdefault(table, {})
        for name in names:
            if name not in known:
                known[name] = int(conn.execute(f"INSERT INTO {table}(name) VALUES (?)", (name,)).lastrowid)  # type: ignore[arg-type]
    conn.execute("COMMIT")
    return conn, ids
