"""A folder named `rulekit` beside where rulekit is run (a team's rule folder, say):
the `rulekit` command and `python -m rulekit` still run the package; the rule folder
itself gets RK009 (a script beside it that imports rulekit would import the folder);
`python -P script.py` imports the package whatever sits beside the script.  (The same
for an installed wheel: tests/test_packaging.py.)"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

RULEKIT = Path(sys.executable).parent / "rulekit"
RULE = (Path(__file__).resolve().parent / "fixtures" / "every_check" / "rulekit" / "rules.toml").read_text()
SCRIPT = "from rulekit import setup_rules\nprint(type(setup_rules()).__name__)\n"


@pytest.fixture(params=["rule folder", "python package"])
def here(tmp_path, request) -> Path:
    (tmp_path / "rulekit").mkdir()
    (tmp_path / "rulekit" / "rules.toml").write_text(RULE)
    if request.param == "python package":  # the worst case: a `rulekit` package of one's own
        (tmp_path / "rulekit" / "__init__.py").write_text("raise SystemExit('the local folder was imported')\n")
    (tmp_path / "script.py").write_text(SCRIPT)
    return tmp_path


def run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=300)


def test_the_command_runs_the_package(here):
    p = run([str(RULEKIT), "--version"], here)
    assert p.returncode == 0 and p.stdout.startswith("rulekit "), p.stderr
    p = run([str(RULEKIT), "check", "--no-bundled", "rulekit"], here)
    assert p.returncode == 1 and "warning RK009" in p.stdout and "name it `rules`" in p.stdout, p.stdout + p.stderr


def test_python_dash_m_runs_the_package_beside_a_rule_folder(tmp_path):
    # (beside a *package* named rulekit, with an __init__.py, `python -m rulekit` runs that package:
    # Python puts the current folder first, before rulekit's code can do anything; docs/library.md)
    (tmp_path / "rulekit").mkdir()
    (tmp_path / "rulekit" / "rules.toml").write_text(RULE)
    p = run([sys.executable, "-m", "rulekit", "--version"], tmp_path)
    assert p.returncode == 0 and p.stdout.startswith("rulekit "), p.stderr


def test_python_dash_P_script_imports_the_package(here):
    p = run([sys.executable, "-P", "script.py"], here)
    assert p.returncode == 0 and p.stdout.strip() == "RuleEngine", p.stderr
