"""Every server command on a busy port: one line on stderr naming the address, exit 2
(bad usage), no traceback and no "internal error" (`rulekit serve`, `rulekit
dashboard`, `rulekit lsp --tcp`)."""
from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture()
def busy_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen()
    try:
        yield s.getsockname()[1]
    finally:
        s.close()


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    db = tmp_path_factory.mktemp("busy") / "bp.db"
    p = subprocess.run([sys.executable, "-m", "rulekit", "blueprint", "run", "--configs",
                        str(REPO / "examples" / "blueprint" / "static"), "--output", f"sqlite:{db}"],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    return db


def _commands(port: int, db: Path) -> dict[str, list[str]]:
    return {"serve": ["serve", "--port", str(port)],
            "dashboard": ["dashboard", "--db", str(db), "--port", str(port)],
            "lsp": ["lsp", "--tcp", f"127.0.0.1:{port}"]}


@pytest.mark.parametrize("command", ["serve", "dashboard", "lsp"])
def test_a_busy_port_is_one_line_and_exit_2(command, busy_port, store):
    argv = _commands(busy_port, store)[command]
    p = subprocess.run([sys.executable, "-m", "rulekit", *argv], capture_output=True, text=True, timeout=300)
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert p.returncode == 2, (p.returncode, p.stderr)
    assert lines == [f"error: cannot listen on 127.0.0.1:{busy_port}: the address is already in use "
                     "(another server on that port?)"], p.stderr
    assert p.stdout == ""
