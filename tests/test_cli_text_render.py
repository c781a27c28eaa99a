"""`rulekit attribute`'s text off a terminal: `PlainConsole` prints the bytes rich's
Console prints there (it renders with `rulekit.cli.plainmarkup`, without rich.console
or rich.markup), for tricky strings, fuzzed markup and every example's result."""
from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console
from rich.errors import MarkupError
from rich.markup import escape

from rulekit.cli import attribute as attr
from rulekit.cli import plainmarkup

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


# --- rulekit.cli.plainmarkup against rich itself, on fuzzed markup ---

PIECES = ["[", "]", "\\", "/", "=", "@", "#", ":", " ", "a", "Z", "7", "bold", "red", "[bold]", "[/]", "[/bold]",
          "[bold red]", "[/red]", "[@click]", "[link=x]", "[#ff0000]", "\\[", "[x", ":smile:", ":warning:",
          ":0008:", "-emoji:", "-text:", "\t", "\n", "\r", "\x07", "\x08", "\x0b", "\x0c", "\x1b", "漢", "é", "…"]
markups = st.lists(st.sampled_from(PIECES), max_size=14).map("".join) | st.text(max_size=30)


def _console_prints(markup: str, console) -> tuple:
    buf = io.StringIO()
    try:
        with contextlib.redirect_stdout(buf):
            console.print(markup)
    except MarkupError as e:
        return ("MarkupError", str(e))
    return ("ok", buf.getvalue())


@settings(max_examples=600, deadline=None)
@given(markups)
def test_plain_console_prints_what_rich_prints_fuzzed(markup):
    rich_c = Console(file=None, highlight=False, soft_wrap=True, force_terminal=False)
    assert _console_prints(markup, attr.PlainConsole()) == _console_prints(markup, rich_c)


@settings(max_examples=600, deadline=None)
@given(markups)
def test_escape_is_riches_and_escaped_text_prints_as_is(text):
    assert plainmarkup.escape(text) == escape(text)
    markup = f"[bold]{plainmarkup.escape(text)}[/] [dim]{plainmarkup.escape(text)}[/]"
    rich_c = Console(file=None, highlight=False, soft_wrap=True, force_terminal=False)
    assert _console_prints(markup, attr.PlainConsole()) == _console_prints(markup, rich_c)


def test_the_copied_rules_are_riches():
    import rich.control
    import rich.markup

    assert plainmarkup.RE_TAGS.pattern == rich.markup.RE_TAGS.pattern
    assert plainmarkup.RE_TAGS.flags == rich.markup.RE_TAGS.flags
    assert plainmarkup.STRIP_CONTROL_CODES == tuple(rich.control.STRIP_CONTROL_CODES)
