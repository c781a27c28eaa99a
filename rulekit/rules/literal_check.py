"""RK209: string literals in Python plugins that look like misspelt symptom names.

A plugin names symptoms in plain strings, which no schema checks.  A literal
shaped like a symptom name (`XID-79-FALLEN_OFF_THE_BUS`, `NCCL_WATCHDOG_TIMEOUT`)
that is not registered, but is within a small edit distance of a registered name
or alias, is reported at its position with the likely name.  Literals far from
every name (other constants, prefixes such as "XID-") are left alone.  Pure:
texts and names in, Diagnostics out; parsed literals are memoized by text.
"""
from __future__ import annotations

import ast
import difflib
import re
from typing import Iterable, Mapping

from rulekit.diagnostics import Diagnostic, Span

_SHAPE = re.compile(r"^[A-Z][A-Z0-9]*(?:[_\-][A-Z0-9]+)+$")
_LITERALS: dict[str, list[tuple[str, int, int, int]]] = {}


def symptom_like_literals(text: str) -> list[tuple[str, int, int, int]]:
    """(value, line, col, end_col) of each string constant shaped like a symptom name."""
    got = _LITERALS.get(text)
    if got is not None:
        return got
    out: list[tuple[str, int, int, int]] = []
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        tree = None
    if tree is not None:
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and _SHAPE.match(node.value) \
                    and len(node.value) >= 6 and node.end_lineno == node.lineno:
                # ast columns are UTF-8 byte offsets; names are ASCII, the prefix may not be
                line_text = text.split("\n")[node.lineno - 1]
                prefix = line_text.encode("utf-8")[: node.col_offset].decode("utf-8", "replace")
                col = len(prefix) + 2  # inside the quote
                out.append((node.value, node.lineno, col, col + len(node.value)))
    if len(_LITERALS) > 2000:
        _LITERALS.clear()
    _LITERALS[text] = out
    return out


def misspelt_symptoms(plugins: Mapping[str, str], names: Iterable[str]) -> list[Diagnostic]:
    """RK209 for every plugin literal one or two edits from a registered name."""
    known = set(names)
    pool = sorted(known)
    out = []
    for path, text in plugins.items():
        for value, line, col, end in symptom_like_literals(text):
            if value in known:
                continue
            close = difflib.get_close_matches(value, pool, n=1, cutoff=0.9)
            if not close or _distance(value, close[0]) > 2:
                continue
            out.append(Diagnostic(
                "RK209", f"`{value}` is not a registered symptom; did you mean `{close[0]}`?",
                Span(path, line, col, line, end), data={"symptom": value, "suggestion": close[0]}))
    return out


def _distance(a: str, b: str) -> int:
    """Levenshtein distance (small strings)."""
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, start=1):
        cur = [i]
        for j, cb in enumerate(b, start=1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]
