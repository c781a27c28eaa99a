"""`--help` in the user's words: value placeholders such as TEXT, PATH, N instead
of the Python type names typer prints (`<list[Path]>`, `<str>`, `<bool>`).

Installed once by `rulekit.cli.app`; touches only how typer labels a parameter's
type in help output, never parsing.
"""
from __future__ import annotations

import re

_WORDS = {"str": "TEXT", "int": "N", "float": "NUMBER", "Path": "PATH", "path": "PATH", "file": "FILE",
          "directory": "DIR", "bool": "", "datetime": "TIME"}


def _label(raw: str | None) -> str | None:
    if not raw:
        return raw
    m = re.fullmatch(r"<(.*)>(\.\.\.)?", raw)
    if m is None:
        return raw
    inner, dots = m.group(1), m.group(2) or ""
    lm = re.fullmatch(r"list\[(.*)\]", inner)
    if lm:
        inner, dots = lm.group(1), "..."
    if "|" in inner:  # choices: keep them, they are the user's words
        return f"[{inner}]{dots}"
    word = _WORDS.get(inner, inner.upper())
    return (word + dots) if word else None


def install() -> None:
    from typer import core

    if getattr(core, "_rulekit_help", False):
        return
    original = core._TyperParameter.display_type

    def display_type(self, ctx):  # type: ignore[no-untyped-def]
        if getattr(self, "is_flag", False) and not getattr(self, "metavar", None):
            return None
        return _label(original(self, ctx))

    core._TyperParameter.display_type = display_type  # type: ignore[method-assign]
    core._rulekit_help = True  # type: ignore[attr-defined]
