"""Rule regexes on RE2: compile a pattern, or say exactly what is wrong with it.

Every extractor pattern runs on RE2 (pyre2), loaded with the fallback to Python's
`re` set to raise, so no rule ever runs on a backtracking engine unnoticed.
`check_pattern` returns problems as offsets into the pattern text; callers turn
them into Diagnostics with spans.  No I/O.
"""
from __future__ import annotations

import re
import re._parser as sre_parse  # type: ignore[import-not-found]
from dataclasses import dataclass
from functools import lru_cache

import re2

re2.set_fallback_notification(re2.FALLBACK_EXCEPTION)

# Generous budget: the default 8 MiB makes large alternations fall back to the NFA.
MAX_MEM = 64 << 20


@dataclass(frozen=True)
class RegexProblem:
    code: str  # RK301 invalid, RK302 RE2-incompatible, RK309 engine fallback
    message: str
    start: int  # offset in the pattern text
    end: int


_INCOMPATIBLE = [
    (re.compile(r"\(\?<?[=!]"), "lookaround `{m}`: RE2 has no lookahead/lookbehind (it guarantees linear time)"),
    (re.compile(r"\\[1-9]"), "backreference `{m}`: RE2 cannot match backreferences"),
    (re.compile(r"\(\?P=\w+\)"), "named backreference `{m}`: RE2 cannot match backreferences"),
    (re.compile(r"(?<!\\)[*+?}][+]"), "possessive quantifier `{m}`: not supported by RE2 (and not needed: it never backtracks)"),
    (re.compile(r"\(\?>"), "atomic group `{m}`: not supported by RE2 (and not needed: it never backtracks)"),
    (re.compile(r"\(\?\("), "conditional group `{m}`: not supported by RE2"),
    (re.compile(r"\\[ZzG]"), "anchor `{m}`: use `$` or `\\z`-free anchors; RE2 does not support it"),
]
_CLASS_FALLBACK = re.compile(r"\[(?:\\.|[^\]\\])*?(\\[SWD])(?:\\.|[^\]\\])*\]")


def check_pattern(pattern: str) -> list[RegexProblem]:
    """All problems with `pattern` as a rule regex (empty list: it compiles on RE2)."""
    problems: list[RegexProblem] = []
    try:
        sre_parse.parse(pattern)
        python_ok = True
    except re.error as e:
        python_ok = False
        pos = e.pos if e.pos is not None else 0
        msg = e.msg if hasattr(e, "msg") else str(e)
        # an RE2-only construct (e.g. \C) is not a Python error worth reporting if RE2 accepts it
        if _re2_error(pattern) is not None:
            problems.append(RegexProblem("RK301", f"invalid regex: {msg}", pos, min(pos + 1, len(pattern))))
            return problems
    for rx, template in _INCOMPATIBLE:
        for m in rx.finditer(pattern):
            if _escaped(pattern, m.start()):
                continue
            problems.append(RegexProblem("RK302", template.format(m=m.group(0)), m.start(), m.end()))
    for m in _CLASS_FALLBACK.finditer(pattern):
        problems.append(RegexProblem(
            "RK309", f"`{m.group(1)}` inside a character class makes pyre2 fall back to Python's re; "
            "list the characters instead", m.start(1), m.end(1)))
    if problems:
        return problems
    err = _re2_error(pattern)
    if err is not None:
        code = "RK302" if python_ok else "RK301"
        problems.append(RegexProblem(code, f"RE2 rejects this pattern: {err}", 0, len(pattern)))
    return problems


def _escaped(text: str, pos: int) -> bool:
    n = 0
    while pos - n - 1 >= 0 and text[pos - n - 1] == "\\":
        n += 1
    return n % 2 == 1


def _re2_error(pattern: str) -> str | None:
    try:
        re2.compile(pattern)
    except Exception as e:  # re2.error, or the fallback exception
        return str(e) or type(e).__name__
    return None


@lru_cache(maxsize=None)
def compile_pattern(pattern: str):
    """Compile a validated rule pattern on RE2 (raises re2.error if invalid)."""
    return re2.compile(pattern)


def compile_big(pattern: str, max_mem: int = MAX_MEM):
    """Compile a large alternation with an explicit memory budget.

    pyre2's cache keys on pattern and flags only, not on max_mem, so purge first."""
    re2.purge()
    return re2.compile(pattern, max_mem=max_mem)


def group_names(pattern: str) -> set[str]:
    try:
        return set(sre_parse.parse(pattern).state.groupdict)
    except re.error:
        return set()
