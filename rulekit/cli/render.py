"""Rendering Diagnostics for a terminal: `path:line:col: severity CODE message`,
then the source line with a caret underline of the span (ruff-style excerpt).
Other formats (JSON, SARIF, GitHub annotations, JUnit) live beside this one.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Iterable, Mapping

from rulekit.cli.status import ExitStatus
from rulekit.diagnostics import Diagnostic, split_lines


def _line_of(texts: Mapping[str, str], cache: dict[str, list[str]], file: str, line: int) -> str | None:
    if file not in cache:
        text = texts.get(file)
        if text is None:
            try:
                text = Path(file).read_bytes().decode("utf-8", "replace")
            except OSError:
                text = None
        cache[file] = split_lines(text) if text is not None else []
    lines = cache[file]
    return lines[line - 1] if 0 < line <= len(lines) else None


def format_text(diags: Iterable[Diagnostic], texts: Mapping[str, str] | None = None) -> str:
    texts = texts or {}
    cache: dict[str, list[str]] = {}
    out: list[str] = []
    for d in diags:
        s = d.span
        # a folder, or a path that is not there, has no line to point at
        folder = s is not None and s.file not in texts and not os.path.isfile(s.file)
        where = (f"{s.file}: " if folder else f"{s.file}:{s.line}:{s.col}: ") if s else ""
        out.append(f"{where}{d.severity.value} {d.code} [{d.name}] {d.message}")  # type: ignore[union-attr]
        if s is not None and not folder:
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


# ---- shared by the toolkit commands (check, lint, test) --------------------------------------

def format_summary(diags: Iterable[Diagnostic]) -> str:
    """`N problems (E errors, W warnings, I notes)` or `no problems`."""
    diags = list(diags)
    if not diags:
        return "no problems found"
    by = {"error": 0, "warning": 0, "info": 0, "hint": 0}
    for d in diags:
        by[d.severity.value] += 1  # type: ignore[union-attr]
    parts = [f"{by['error']} error{'s' * (by['error'] != 1)}", f"{by['warning']} warning{'s' * (by['warning'] != 1)}"]
    notes = by["info"] + by["hint"]
    if notes:
        parts.append(f"{notes} note{'s' * (notes != 1)}")
    return f"{len(diags)} problem{'s' * (len(diags) != 1)} ({', '.join(parts)})"


def render_diagnostics(diags: Iterable[Diagnostic], fmt: str, texts: Mapping[str, str] | None = None,
                       tool: str = "check", base: str | Path | None = None) -> str:
    """Diagnostics in one of the toolkit formats: text (caret excerpts + summary), json,
    sarif, github.  Paths are shown relative to `base` (default: the current folder)."""
    from rulekit.cli import formats

    diags = sorted(diags, key=Diagnostic.sort_key)
    original = {formats.display_path(f, base): t for f, t in (texts or {}).items()}
    shown = formats.relativize(diags, base)
    if fmt == "json":
        return formats.diagnostics_json(shown, tool)
    if fmt == "sarif":
        return formats.sarif(shown, tool)
    if fmt == "github":
        return formats.github(shown)
    body = format_text(shown, original)
    return (body + "\n\n" if body else "") + format_summary(shown)


def exit_code(diags: Iterable[Diagnostic]) -> ExitStatus:
    """OK: clean (or only notes); FINDINGS: errors or warnings were found."""
    found = any(d.severity.value in ("error", "warning") for d in diags)  # type: ignore[union-attr]
    return ExitStatus.FINDINGS if found else ExitStatus.OK
