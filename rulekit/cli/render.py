"""Rendering Diagnostics for a terminal: `path:line:col: severity CODE message`,
then the source line with a caret underline of the span (ruff-style excerpt).
Other formats (JSON, SARIF, GitHub annotations, JUnit) live beside this one.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Iterable, Mapping

from rulekit.diagnostics import Diagnostic


def _line_of(texts: Mapping[str, str], cache: dict[str, list[str]], file: str, line: int) -> str | None:
    if file not in cache:
        text = texts.get(file)
        if text is None:
            try:
                text = Path(file).read_bytes().decode("utf-8", "replace")
            except OSError:
                text = None
        cache[file] = text.splitlines() if text is not None else []
    lines = cache[file]
    return lines[line - 1] if 0 < line <= len(lines) else None


def format_text(diags: Iterable[Diagnostic], texts: Mapping[str, str] | None = None) -> str:
    texts = texts or {}
    cache: dict[str, list[str]] = {}
    out: list[str] = []
    for d in diags:
        s = d.span
        where = f"{s.file}:{s.line}:{s.col}: " if s else ""
        out.append(f"{where}{d.severity.value} {d.code} [{d.name}] {d.message}")  # type: ignore[union-attr]
        if s is not None:
            src = _line_of(texts, cache, s.file, s.line)
            if src is not None:
                gutter = f"{s.line:>5} | "
                out.append(gutter + src.expandtabs(1))
                width = (s.end_col - s.col) if s.end_line == s.line else max(1, len(src) - s.col + 1)
                out.append(" " * (len(gutter) - 2) + "| " + " " * (s.col - 1) + "^" * max(1, width))
        for r in d.related:
            out.append(f"  note: {r.span}: {r.message}")
    return "\n".join(out)


def print_diagnostics(diags: Iterable[Diagnostic], texts: Mapping[str, str] | None = None, err: bool = False) -> None:
    text = format_text(diags, texts)
    if text:
        print(text, file=sys.stderr if err else sys.stdout)
