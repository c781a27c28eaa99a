"""Folding ranges: each TOML table (an `[[extractor]]` with its `[[extractor.test]]`
tables, each test on its own), each braced DSL declaration and clause, each Python
top-level definition, and runs of comment lines.  Returns (start_line, end_line,
kind) with 1-based inclusive lines; kind is "region" or "comment".  Pure: text in,
ranges out; never raises.
"""
from __future__ import annotations

import ast
import re

from rulekit_lsp.workspace import file_kind

_HEADER = re.compile(r"^\s*\[\[?\s*([A-Za-z0-9_.\-\"]+)\s*\]\]?")


def folding_ranges(path: str, text: str) -> list[tuple[int, int, str]]:
    try:
        kind = file_kind(path)
        lines = text.split("\n")
        out = _comments(lines, "#") if kind in ("toml", "tests", "rule", "py") else []
        if kind in ("toml", "tests"):
            out += _toml(lines)
        elif kind == "rule":
            out += _braces(lines)
        elif kind == "py":
            out += _python(text)
        return sorted(set(out))
    except Exception:  # noqa: BLE001 - folding is cosmetic: nothing rather than an error
        return []


def _last_content(lines: list[str], start: int, end: int) -> int:
    """The last non-blank line in [start, end) (1-based), at least start."""
    j = end - 1
    while j > start and not lines[j - 1].strip():
        j -= 1
    return j


def _toml(lines: list[str]) -> list[tuple[int, int, str]]:
    headers = [(i, m.group(1)) for i, ln in enumerate(lines, start=1) if (m := _HEADER.match(ln))]
    out = []
    n = len(lines) + 1
    for k, (line, name) in enumerate(headers):
        # a table's own region ends at the next header; with its sub-tables, at the next
        # header that is not one of them
        own_end = headers[k + 1][0] if k + 1 < len(headers) else n
        whole_end = next((hl for hl, hn in headers[k + 1:] if not hn.startswith(name + ".")), n)
        for end in {own_end, whole_end}:
            last = _last_content(lines, line, end)
            if last > line:
                out.append((line, last, "region"))
    return out


def _braces(lines: list[str]) -> list[tuple[int, int, str]]:
    out, stack = [], []
    for i, ln in enumerate(lines, start=1):
        code = _strip_strings(ln)
        for ch in code:
            if ch == "{":
                stack.append(i)
            elif ch == "}" and stack:
                start = stack.pop()
                if i > start:
                    out.append((start, i, "region"))
    return out


def _strip_strings(ln: str) -> str:
    """The line without string literals, regex literals (`/.../`) and comments."""
    out, q, i = [], None, 0
    while i < len(ln):
        ch = ln[i]
        if q:
            if ch == "\\":
                i += 2
                continue
            if ch == q:
                q = None
        elif ch in "\"'/":
            q = ch
        elif ch == "#":
            break
        else:
            out.append(ch)
        i += 1
    return "".join(out)


def _python(text: str) -> list[tuple[int, int, str]]:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    out = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            start = min([d.lineno for d in node.decorator_list] + [node.lineno])
            end = node.end_lineno or node.lineno
            if end > start:
                out.append((start, end, "region"))
    return out


def _comments(lines: list[str], mark: str) -> list[tuple[int, int, str]]:
    out, start = [], None
    for i, ln in enumerate(lines + [""], start=1):
        if ln.lstrip().startswith(mark):
            start = start or i
        else:
            if start is not None and i - 1 > start:
                out.append((start, i - 1, "comment"))
            start = None
    return out
