"""The command line's messages as a user reads them: one "error:" per line (a located
diagnostic says `file:line:col: error CODE` itself), and a folder or a missing path
named without a line and column (it has none)."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DOUBLED = re.compile(r"error:\s+\S+:\d+:\d+: error")
FOLDER_WITH_LINE = re.compile(r"(?:emptyd|nothing-here|nonexist)[^\s:]*:\d+")


def rk(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rulekit", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300)


def test_a_located_error_is_not_prefixed_twice(tmp_path):
    (tmp_path / "badjob").mkdir()
    (tmp_path / "badjob" / "job.toml").write_text('[job]\nid = 3\nstate = "WHAT"\n')
    (tmp_path / "emptyd").mkdir()
    for args in (["attribute", "badjob"], ["attribute", "badjob", "emptyd", "-j", "2"], ["explain", "badjob"]):
        p = rk(*args, cwd=tmp_path)
        assert p.returncode in (1, 2), p.stderr
        assert "badjob/job.toml:2:1: error RK502" in p.stderr, (args, p.stderr)
        assert not DOUBLED.search(p.stderr), (args, p.stderr)
        assert "error: error" not in p.stderr


def test_a_folder_is_named_without_a_line(tmp_path):
    (tmp_path / "emptyd").mkdir()
    p = rk("attribute", "emptyd", cwd=tmp_path)
    assert "note RK505: `" in p.stdout and not FOLDER_WITH_LINE.search(p.stdout), p.stdout
    (tmp_path / "nothing-here").mkdir()
    p = rk("check", "--no-bundled", "nothing-here", cwd=tmp_path)
    assert p.stdout.startswith("nothing-here: warning RK005"), p.stdout
    assert not FOLDER_WITH_LINE.search(p.stdout)
    p = rk("blueprint", "run", "--configs", "nonexist", cwd=tmp_path)
    assert p.returncode == 2 and p.stderr.startswith("nonexist: error RK603"), p.stderr
