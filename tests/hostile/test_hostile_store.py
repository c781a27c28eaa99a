"""The dashboard's store opener says what is wrong with the path it is given: a folder
was an "internal error", a database written by a newer rulekit was told to migrate
by rerunning (which would not help)."""
from __future__ import annotations

import sqlite3
import subprocess
import sys

import pytest

from rulekit.blueprint.store import VERSION, StoreError, open_ro


def test_a_folder_is_a_clear_error(tmp_path):
    with pytest.raises(StoreError, match="is a folder"):
        open_ro(tmp_path)
    p = subprocess.run([sys.executable, "-m", "rulekit", "dashboard", "--db", str(tmp_path), "--port", "0"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "is a folder" in p.stderr and "internal error" not in p.stderr.lower(), p.stderr


def test_a_newer_schema_says_to_upgrade_not_to_migrate(tmp_path):
    db = tmp_path / "r.db"
    con = sqlite3.connect(db)
    con.execute(f"PRAGMA user_version = {VERSION + 1}")
    con.close()
    with pytest.raises(StoreError) as e:
        open_ro(db)
    assert "newer rulekit" in str(e.value) and "upgrade rulekit" in str(e.value) and "rerun" not in str(e.value)


def test_an_older_schema_still_says_to_rerun(tmp_path):
    db = tmp_path / "r.db"
    sqlite3.connect(db).close()  # version 0
    with pytest.raises(StoreError, match="rerun"):
        open_ro(db)
