"""`engine.freshdb`: an in-memory event store is a copy of a template, and is the store
the schema script and the store's own lookups would build: same tables, same rows,
same ids; copies are independent of each other and of the template; a forked process
uses its own template; no more than `KEEP` templates are held."""
from __future__ import annotations

import os
import sqlite3
from types import SimpleNamespace

from rulekit.engine import freshdb
from rulekit.engine.store import SCHEMA, EventManager

RULES = ["XidRule", "NcclTimeout", "XidRule", "OomKiller"]  # (a name twice: one row, as `lookup` gives)


def _dump(conn: sqlite3.Connection) -> list:
    return list(conn.iterdump())


def test_a_fresh_store_is_the_store_built_from_the_schema(tmp_path):
    built = EventManager(RULES, path=str(tmp_path / "events.sqlite"))  # (a file: built the old way)
    fresh = EventManager(RULES)
    try:
        assert _dump(fresh.conn) == _dump(built.conn)
        assert fresh._ids == built._ids
        assert fresh.next_id() == built.next_id() == 1
    finally:
        built.close()
        fresh.close()


def test_many_rule_lists_give_the_ids_lookup_gives(tmp_path):
    """Line tests open stores for rule lists seen once each, more of them than templates
    are kept: each is the store built the old way."""
    for k in range(freshdb.KEEP + 3):
        names = [f"Rule{k}", "Shared", f"Rule{k}", f"Other{k}"]
        built = EventManager(names, path=str(tmp_path / f"e{k}.sqlite"))
        fresh = EventManager(names)
        try:
            assert _dump(fresh.conn) == _dump(built.conn)
            assert fresh._ids == built._ids
        finally:
            built.close()
            fresh.close()
    assert len(freshdb._templates) <= freshdb.KEEP


def test_copies_are_independent():
    a, b = EventManager(RULES), EventManager(RULES)
    try:
        ctx = a.context("job-a")
        a.insert_now(a.row(ctx, "bad_node", "XidRule", None, None, 1, "line", "n1", "XID_79", {"x": "1"}))
        a.lookup("rules", "OnlyInA")
        assert a.conn.execute("SELECT COUNT(*) FROM events").fetchone()[0] == 1
        assert b.conn.execute("SELECT COUNT(*) FROM events").fetchone()[0] == 0
        assert "OnlyInA" not in b._ids["rules"]
        c = EventManager(RULES)  # from the same template, after a's changes
        assert c.conn.execute("SELECT COUNT(*) FROM rules WHERE name = 'OnlyInA'").fetchone()[0] == 0
        c.close()
    finally:
        a.close()
        b.close()


def test_another_process_builds_its_own_template(monkeypatch):
    """(A forked child sees another pid: it does not copy from the parent's connection.)"""
    EventManager(RULES).close()
    parents = {k for k in freshdb._templates if k[0] == os.getpid()}
    assert parents
    child = os.getpid() + 1
    monkeypatch.setattr(freshdb, "os", SimpleNamespace(getpid=lambda: child))  # (freshdb's view only)
    m = EventManager(RULES)
    try:
        assert any(k[0] == child for k in freshdb._templates)
        ctx = m.context("child")
        m.insert_now(m.row(ctx, "bad_node", "XidRule", None, None, 1, "l", "n1", "XID_79", {}))
        assert m.conn.execute("SELECT COUNT(*) FROM events").fetchone()[0] == 1
    finally:
        m.close()


def test_templates_kept_are_bounded():
    for k in range(freshdb.KEEP + 5):
        freshdb.fresh_memory_db(SCHEMA, (("rules", (f"Rule{k}",)),))[0].close()
    assert len(freshdb._templates) <= freshdb.KEEP
