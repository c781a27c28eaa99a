"""What keeps `rulekit attribute` starting fast, checked by module, not by timing:
a started `attribute` (the console script's `main()`) imports no other command,
nor rich.console or rich.markup, lark, the LSP, lint, the Service, Dask or pydantic (a valid
job.toml is read by the plain job-record reader); and the app read any
other way (typer's `get_command`, `CliRunner`) still has every command, in help
order, whichever command module was imported first."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
HELP_ORDER = ["attribute", "serve", "check", "explain", "test", "lint", "fmt", "convert", "lsp", "schema", "diff",
              "dashboard", "fleet", "mine", "blueprint", "rules"]

# modules a started `rulekit attribute` must not import: the other commands, their groups,
# rich's console and text (text off a terminal goes through PlainConsole and plainmarkup), pydantic
NOT_IMPORTED = ["rich.console", "rich.markup", "rich.text", "rulekit_lsp", "pygls", "lark", "fastapi", "uvicorn", "dask", "distributed",
                "tomlkit", "rulekit.analysis", "rulekit.service", "rulekit.blueprint", "rulekit.rules.dsl.parser",
                "rulekit.cli.serve", "rulekit.cli.lint", "rulekit.cli.lsp", "rulekit.cli.test", "rulekit.cli.diff",
                "rulekit.cli.blueprint", "rulekit.cli.fleet", "rulekit.cli.fmt", "rulekit.cli.convert", "rulekit.cli.explain",
                "rulekit.executors.dask", "rulekit.executors.local", "xml.sax",
                "pydantic", "pydantic_core", "rulekit.inputs.jobrecord_model", "rulekit.inputs.metrics_model",
                "rulekit.rules.toml_frontend"]  # TOML parsing: a cache miss, an error in job.toml

# main() ends the process itself (os._exit after the atexit handlers): the modules are
# reported from an atexit handler, the exit status by the process
_PROBE = """
import atexit, json, sys
sys.argv = ["rulekit", "attribute", *sys.argv[1:]]
atexit.register(lambda: print("\\n@@" + json.dumps(sorted(sys.modules)), flush=True))
from rulekit.cli import main
main()
"""


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_a_started_attribute_imports_only_what_it_needs(fmt, tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "TTY_COMPATIBLE")}
    env["RULEKIT_CACHE_DIR"] = str(tmp_path / "cache")  # cold (parses the DSL with lark), then warm: checked
    for run in ("cold", "warm"):
        p = subprocess.run([sys.executable, "-c", _PROBE, "--format", fmt, str(ROOT / "examples" / "xid149-nvlink")],
                           capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
        out, _, tail = p.stdout.rpartition("\n@@")
        modules = json.loads(tail)
        assert p.returncode == 0, p.stderr
        assert "NVLINK_SIGNAL_INTEGRITY" in out
        if run == "cold":
            continue
        loaded = [m for m in modules if any(m == n or m.startswith(n + ".") for n in NOT_IMPORTED)]
        assert loaded == [], f"`rulekit attribute --format {fmt}` imported {loaded}"


_COMMANDS = """
import sys
for m in sys.argv[1:]:
    __import__(m)
from typer.main import get_command
from rulekit.cli import app
print(",".join(get_command(app).commands))
"""


@pytest.mark.parametrize("first", [[], ["rulekit.cli.check", "rulekit.cli.blueprint"], ["rulekit.cli.attribute"]])
def test_the_app_read_by_typer_has_every_command_in_help_order(first):
    p = subprocess.run([sys.executable, "-c", _COMMANDS, *first], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip().split(",") == HELP_ORDER
