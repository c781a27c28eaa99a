"""`rulekit attribute`'s text off a terminal: `PlainConsole` prints the bytes rich's
Console prints there (it renders with rich.markup, without rich.console), for
tricky strings and for every example's result; and a started `attribute`
imports neither rich.console nor the other commands (what keeps the start fast,
checked by module, not by timing)."""
from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console
from rich.markup import escape

from rulekit.cli import attribute as attr

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted(p for p in (ROOT / "examples").iterdir() if (p / "expected.json").is_file())

TRICKY = [
    "", "plain", "[bold]bold[/] and [red]red[/red]", "[bold red]ERR[/]: x", escape("[not] a [/tag]"),
    "a\tb\t\tc", "tab\tafter wide 漢字\tz", "\t", "emoji :warning: :smile: :0008:01:00: :not_an_emoji:",
    escape(":warning: escaped? [x]"), "cr\rback\bspace\x07bell\x0bvt\x0cff", "esc \x1b[31m raw", "trailing   ",
    "x" * 300, "two\nlines", "ends with newline\n", "\n\nblank lead", "[dim]note RK509: a:1: m[/]",
    "Job [bold]j[/] (" + escape("dir/[1]") + "): [bold red]HARDWARE[/] / nvlink  [yellow](ambiguous)[/]",
    "ünïcødé — “quotes” …", "\\[escaped bracket]", "a \\ backslash", "[link=https://x]link[/link]",
]


@pytest.fixture(autouse=True)
def _no_terminal_env(monkeypatch):
    for k in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "NO_COLOR", "COLUMNS"):
        monkeypatch.delenv(k, raising=False)


def _rich(print_calls) -> str:
    buf = io.StringIO()
    c = Console(file=buf, highlight=False, soft_wrap=True)
    assert not c.is_terminal
    print_calls(c)
    return buf.getvalue()


def _plain(print_calls, capsys) -> str:
    capsys.readouterr()
    print_calls(attr.PlainConsole())
    return capsys.readouterr().out


@pytest.mark.parametrize("markup", TRICKY)
def test_plain_console_prints_what_rich_prints(markup, capsys):
    def calls(c):
        c.print(markup)
        c.print()
    assert _plain(calls, capsys) == _rich(calls)


@pytest.fixture(scope="module")
def engine():
    from rulekit.rules.loader import load_corpus

    res = load_corpus(None)
    assert res.engine is not None
    return res.engine


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_every_example_result_renders_the_same(example, engine, capsys):
    from rulekit.engine.jobrun import attribute_dir

    result = attribute_dir(engine, example, with_trace=True)
    for with_trace in (False, True):
        def calls(c):
            attr.render_text(c, result, with_trace, job_dir=str(example) if with_trace else None)
        assert _plain(calls, capsys) == _rich(calls)


def test_rich_is_chosen_when_rich_sees_a_terminal(monkeypatch):
    class Tty(io.StringIO):
        def isatty(self):
            return True

    assert attr._rich_sees_a_terminal(Tty())
    assert not attr._rich_sees_a_terminal(io.StringIO())
    for env, want in [({"FORCE_COLOR": "1"}, True), ({"FORCE_COLOR": ""}, False), ({"TTY_COMPATIBLE": "1"}, True),
                      ({"TTY_COMPATIBLE": "0", "FORCE_COLOR": "1"}, False)]:
        for k, v in env.items():
            monkeypatch.setenv(k, v)
        buf = io.StringIO()
        assert attr._rich_sees_a_terminal(buf) is want is Console(file=buf).is_terminal, env
        for k in env:
            monkeypatch.delenv(k)


# modules a started `rulekit attribute` must not import: the other commands, their groups,
# and rich's console (text off a terminal goes through PlainConsole)
NOT_IMPORTED = ["rich.console", "rulekit_lsp", "pygls", "lark", "fastapi", "uvicorn", "dask", "distributed",
                "tomlkit", "rulekit.analysis", "rulekit.service", "rulekit.blueprint", "rulekit.rules.dsl.parser",
                "rulekit.cli.serve", "rulekit.cli.lint", "rulekit.cli.lsp", "rulekit.cli.test", "rulekit.cli.diff",
                "rulekit.cli.blueprint", "rulekit.cli.fmt", "rulekit.cli.convert", "rulekit.cli.explain",
                "rulekit.executors.dask", "rulekit.executors.local", "xml.sax"]

_PROBE = """
import json, sys
sys.argv = ["rulekit", "attribute", *sys.argv[1:]]
from rulekit.cli import main
try:
    main()
except SystemExit as e:
    code = e.code
else:
    code = 0
sys.stdout.flush()
print("\\n@@" + json.dumps([code, sorted(sys.modules)]))
"""


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_a_started_attribute_imports_only_what_it_needs(fmt, tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "TTY_COMPATIBLE")}
    env["RULEKIT_CACHE_DIR"] = str(tmp_path / "cache")  # cold (parses the DSL with lark), then warm: checked
    for run in ("cold", "warm"):
        p = subprocess.run([sys.executable, "-c", _PROBE, "--format", fmt, str(ROOT / "examples" / "xid149-nvlink")],
                           capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
        out, _, tail = p.stdout.rpartition("\n@@")
        code, modules = json.loads(tail)
        assert code == 0, p.stderr
        assert "NVLINK_SIGNAL_INTEGRITY" in out
        if run == "cold":
            continue
        loaded = [m for m in modules if any(m == n or m.startswith(n + ".") for n in NOT_IMPORTED)]
        assert loaded == [], f"`rulekit attribute --format {fmt}` imported {loaded}"
