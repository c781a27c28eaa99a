"""`engine.freshdb`: an in-memory event store is a copy of a template, and is the store
the schema script and the store's own lookups would build: same tables, same rows,
same ids; copies are independent of each other and of the template; a forked process
uses its own template; no more than `KEEP` templates are held; a copy given back is
wiped to the template (or closed when it cannot be) and handed to the next store."""
from __future__ import annotations

import os
import sqlite3
from types import SimpleNamespace

import pytest

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


def _fill(m: EventManager, n: int, ctx_name: str = "job") -> None:
    ctx = m.context(ctx_name)
    oc = m.observation_context(ctx, "syslog", "text", None, None, "syslog")
    for i in range(n):
        m.add(m.row(ctx, "bad_node", "XidRule", oc, None, i + 1, f"line {i} " + "x" * 40, "n1", "XID_79", {"i": i}))
    m.lookup("rules", "AddedLater")
    m.add_repeats([(ctx, oc, "XidRule", "bad_node", "XID_79", "n1", 3, 1, 3, None)])
    m.checkpoint(ctx)
    m.flush()


def test_a_closed_store_gives_its_copy_back_as_new():
    """The next store gets the same connection, wiped to the template: the same dump as a
    copy never used, ids from 1 again, the lookup rows a store added gone."""
    never_used = EventManager(RULES)
    pristine = _dump(never_used.conn)
    used = EventManager(RULES)
    conn = used.conn
    _fill(used, 3)
    assert used.conn.execute("SELECT COUNT(*) FROM events").fetchone()[0] == 3
    used.close()
    again = EventManager(RULES)
    try:
        assert again.conn is conn  # the copy given back
        assert _dump(again.conn) == pristine
        assert again._ids == never_used._ids and "AddedLater" not in again._ids["rules"]
        ctx = again.context("job")
        assert ctx == 1 and again.insert_now(again.row(ctx, "bad_node", "XidRule", None, None, 1, "l", "n1",
                                                       "XID_79", {})) == 1
        assert again.conn.execute("SELECT MAX(id) FROM events").fetchone()[0] == 1
    finally:
        again.close()
        never_used.close()


def test_a_closed_store_cannot_reach_the_copy_it_gave_back():
    m = EventManager(RULES)
    m.close()
    with pytest.raises(sqlite3.ProgrammingError):
        m.conn.execute("SELECT 1")


def test_a_copy_that_grew_or_spilled_is_closed_not_kept():
    big = EventManager(RULES)
    conn = big.conn
    _fill(big, 2000)  # more pages than the template: its memory is not kept
    big.close()
    with pytest.raises(sqlite3.ProgrammingError):
        conn.execute("SELECT 1")
    spilled = EventManager(RULES, spill_threshold=10, buffer_size=4)
    first = spilled.conn
    _fill(spilled, 50)
    assert spilled.spilled
    spilled.close()
    with pytest.raises(sqlite3.ProgrammingError):
        first.execute("SELECT 1")
    fresh = EventManager(RULES)
    try:
        assert fresh.conn is not conn and fresh.conn is not first
        assert fresh.conn.execute("SELECT COUNT(*) FROM events").fetchone()[0] == 0
    finally:
        fresh.close()


def test_a_copy_left_in_a_transaction_or_changed_in_its_template_rows_is_closed():
    m = EventManager(RULES)
    conn = m.conn
    conn.execute("BEGIN")
    m.close()
    with pytest.raises(sqlite3.ProgrammingError):
        conn.execute("SELECT 1")
    m = EventManager(RULES)
    conn = m.conn
    conn.execute("DELETE FROM rules WHERE name = 'OomKiller'")  # (the store never does: checked all the same)
    m.close()
    with pytest.raises(sqlite3.ProgrammingError):
        conn.execute("SELECT 1")
    m = EventManager(RULES)  # a template row deleted and a row added: as many rows, not the template's
    conn = m.conn
    conn.execute("DELETE FROM rules WHERE name = 'XidRule'")  # (the first id: the new row gets another)
    m.lookup("rules", "AddedLater")
    m.close()
    with pytest.raises(sqlite3.ProgrammingError):
        conn.execute("SELECT 1")


def test_copies_kept_are_bounded():
    stores = [EventManager(RULES) for _ in range(freshdb.SPARE + 4)]
    conns = [s.conn for s in stores]
    for s in stores:
        s.close()
    alive = 0
    for c in conns:
        try:
            c.execute("SELECT 1")
            alive += 1
        except sqlite3.ProgrammingError:
            pass
    assert alive <= freshdb.SPARE


def test_rows_the_template_does_not_have_all_go_whatever_their_ids():
    """A table the template leaves empty is emptied, rows of id 0 or below included (they are
    not "past the template's last row")."""
    never_used = EventManager(RULES)
    pristine = _dump(never_used.conn)
    m = EventManager(RULES)
    conn = m.conn
    conn.execute("INSERT INTO contexts(id, name) VALUES (0, 'zero'), (-5, 'negative'), (7, 'seven')")
    m.close()
    again = EventManager(RULES)
    try:
        assert again.conn is conn and _dump(again.conn) == pristine
    finally:
        again.close()
        never_used.close()
