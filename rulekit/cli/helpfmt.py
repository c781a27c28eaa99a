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
    core._rulekit_help = True  # type: ignore[attr-defined]
    base = getattr(core, "_TyperParameter", None)
    if base is None or not hasattr(base, "display_type"):
        _install_metavar()  # typer < 0.29: the `<str>` comes from the (vendored) click type's name
        return
    original = base.display_type

    def display_type(self, ctx):  # type: ignore[no-untyped-def]
        if getattr(self, "is_flag", False) and not getattr(self, "metavar", None):
            return None
        return _label(original(self, ctx))

    base.display_type = display_type  # type: ignore[method-assign]


def _install_metavar() -> None:
    try:
        from typer._click import types as ctypes  # type: ignore[import-not-found]
    except ImportError:  # a typer that uses click itself
        from click import types as ctypes  # type: ignore[no-redef]
    original = ctypes.ParamType.get_metavar

    def get_metavar(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        got = original(self, *args, **kwargs)
        name = getattr(self, "name", None)
        if got is None and name:
            return _label(f"<{name}>") or " "
        return got

    ctypes.ParamType.get_metavar = get_metavar  # type: ignore[method-assign]
