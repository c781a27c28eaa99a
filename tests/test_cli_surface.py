"""The command line's own surface: `--version`, `-h` everywhere, `--help` in the
user's words (no Python type names), and a README Commands table that lists
every command."""
from __future__ import annotations

import re
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest
from typer.main import get_command
from typer.testing import CliRunner

from rulekit import DISTRIBUTION
from rulekit.cli import app

REPO = Path(__file__).resolve().parent.parent
COMMANDS = sorted(get_command(app).commands)  # type: ignore[attr-defined]
PY_TYPES = re.compile(r"<(?:str|int|float|bool|path|Path|list\[[^\]]*\])>|list\[|Optional\[")


def test_version():
    p = subprocess.run([sys.executable, "-m", "rulekit", "--version"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and p.stdout.strip() == f"rulekit {version(DISTRIBUTION)}"


@pytest.mark.parametrize("cmd", [None, *COMMANDS])
def test_short_help_and_no_python_type_names(cmd):
    args = ([cmd] if cmd else []) + ["-h"]
    res = CliRunner().invoke(app, args, terminal_width=120)
    assert res.exit_code == 0, res.output
    assert "Usage:" in res.output
    assert not PY_TYPES.search(res.output), PY_TYPES.search(res.output).group(0)


def test_readme_commands_table_lists_every_command():
    text = (REPO / "README.md").read_text()
    table = text[text.index("## Commands"):text.index("## ", text.index("## Commands") + 3)]
    listed = set(re.findall(r"`rulekit ([a-z]+)", table))
    assert set(COMMANDS) <= listed, f"missing from the README Commands table: {sorted(set(COMMANDS) - listed)}"


def test_plugin_timeout_must_be_positive():
    res = CliRunner().invoke(app, ["--plugin-timeout", "0", "check"])
    assert res.exit_code == 2 and "positive" in res.output
