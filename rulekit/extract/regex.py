"""Rule regexes on RE2: compile a pattern, or say exactly what is wrong with it.

Every extractor pattern runs on RE2 (pyre2), loaded with the fallback to Python's
`re` set to raise, so no rule ever runs on a backtracking engine unnoticed.
`check_pattern` returns problems as offsets into the pattern text (a small
tokenizer walks the text, tracking escapes and character classes, so every
construct is reported where it is, not where a Python error happened to stop);
callers turn them into Diagnostics with spans.  `python_divergence` says where
Python's parser would read a pattern differently from RE2 (the accelerator then
does not trust Python's parse tree for it).  No I/O.
"""
from __future__ import annotations

import re
import re._parser as sre_parse  # type: ignore[import-not-found]
import warnings
from dataclasses import dataclass
from functools import lru_cache

import re2

if not hasattr(re2, "set_fallback_notification"):  # pragma: no cover - environment problem
    raise ImportError(
        f"the `re2` module at {getattr(re2, '__file__', '?')} is not pyre2: google-re2 and pyre2 both "
        "install a module named `re2` and must not share an environment; uninstall google-re2")
re2.set_fallback_notification(re2.FALLBACK_EXCEPTION)

# Generous budget: the default 8 MiB makes large alternations fall back to the NFA.
MAX_MEM = 64 << 20


@dataclass(frozen=True)
class RegexProblem:
    code: str  # RK301 invalid, RK302 RE2-incompatible, RK309 engine fallback
    message: str
    start: int  # offset in the pattern text
    end: int


@dataclass(frozen=True)
class _Construct:
    kind: str
    start: int
    end: int
    text: str


_LOOKAROUND = {"(?=": "lookahead", "(?!": "negative lookahead", "(?<=": "lookbehind", "(?<!": "negative lookbehind"}
_WHY = {
    "lookaround": "{name} `{t}`: RE2 has no lookahead/lookbehind (it guarantees linear time); "
                  "match the wider text and narrow it with a second rule or a capture",
    "backref": "backreference `{t}`: RE2 cannot match backreferences (they need backtracking)",
    "named-backref": "named backreference `{t}`: RE2 cannot match backreferences (they need backtracking)",
    "possessive": "possessive quantifier `{t}`: not supported by RE2 (and not needed: RE2 never backtracks)",
    "atomic": "atomic group `{t}`: not supported by RE2 (and not needed: RE2 never backtracks)",
    "conditional": "conditional group `{t}`: not supported by RE2",
    "comment": "inline comment `{t}`: not supported by RE2; put the comment in the rule's docs",
    "anchor-G": "anchor `{t}`: RE2 has no `\\G`",
    "empty-min-repeat": "`{t}` is literal text for RE2 but a repeat for Python; write `{{0,{n}}}`",
    "unicode-escape": "escape `{t}`: RE2 does not know `\\u`/`\\U`/`\\N`; write the character itself or `\\x{{...}}`",
}


def _constructs(pattern: str) -> list[_Construct]:
    """Backtracking-only and divergent constructs of `pattern`, with offsets."""
    out: list[_Construct] = []
    i, n = 0, len(pattern)
    in_class = False
    class_start = -1
    prev_quant = False  # the previous token was a quantifier
    while i < n:
        c = pattern[i]
        if in_class:
            if c == "\\" and i + 1 < n:
                e = pattern[i + 1]
                if e in "SW":
                    out.append(_Construct("class-fallback", i, i + 2, pattern[i:i + 2]))
                i += 2
                continue
            if c == "[" and i + 1 < n and pattern[i + 1] in ":=.":
                close = pattern.find(pattern[i + 1] + "]", i + 2)
                if close > 0:
                    out.append(_Construct("posix-class", i, close + 2, pattern[i:close + 2]))
                    i = close + 2
                    continue
            if c == "]" and i > class_start + 1 and not (i == class_start + 2 and pattern[class_start + 1] == "^"):
                in_class = False
                prev_quant = False
            i += 1
            continue
        if c == "\\" and i + 1 < n:
            e = pattern[i + 1]
            if e in "123456789":
                j = i + 2
                while j < n and pattern[j].isdigit() and j < i + 3:
                    j += 1
                out.append(_Construct("backref", i, j, pattern[i:j]))
                i = j
            elif e == "G":
                out.append(_Construct("anchor-G", i, i + 2, pattern[i:i + 2]))
                i += 2
            elif e in "uUN":
                j = i + 2
                if e == "N" and j < n and pattern[j] == "{":
                    k = pattern.find("}", j)
                    j = k + 1 if k > 0 else j
                else:
                    j = min(n, j + (4 if e == "u" else 8 if e == "U" else 0))
                out.append(_Construct("unicode-escape", i, j, pattern[i:j]))
                i = j
            elif e in "pPQCz":
                out.append(_Construct("re2-only", i, i + 2, pattern[i:i + 2]))
                i += 2
            elif e == "x" and i + 2 < n and pattern[i + 2] == "{":
                k = pattern.find("}", i + 2)
                j = k + 1 if k > 0 else i + 3
                out.append(_Construct("re2-only", i, j, pattern[i:j]))
                i = j
            else:
                i += 2
            prev_quant = False
            continue
        if c == "[":
            in_class = True
            class_start = i
            if i + 1 < n and pattern[i + 1] == "^":
                class_start = i  # `]` right after `[^` is literal: handled by the check above
            i += 1
            continue
        if c == "(":
            rest = pattern[i:i + 4]
            kind, end = None, i
            for pre, name in _LOOKAROUND.items():
                if rest.startswith(pre):
                    kind, end = "lookaround:" + name, i + len(pre)
                    break
            if kind is None:
                if rest.startswith("(?P="):
                    k = pattern.find(")", i)
                    kind, end = "named-backref", (k + 1 if k > 0 else n)
                elif rest.startswith("(?>"):
                    kind, end = "atomic", i + 3
                elif rest.startswith("(?("):
                    kind, end = "conditional", i + 3
                elif rest.startswith("(?#"):
                    k = pattern.find(")", i)
                    kind, end = "comment", (k + 1 if k > 0 else n)
            if kind is not None:
                out.append(_Construct(kind, i, end, pattern[i:end]))
            prev_quant = False
            i += 1
            if i < n and pattern[i] == "?":
                i += 1  # `(?` is not a quantifier
            continue
        if c in "*+?":
            if prev_quant and c == "+":
                out.append(_Construct("possessive", i - 1, i + 1, pattern[i - 1:i + 1]))
                prev_quant = False
            elif prev_quant and c == "?":
                prev_quant = False  # lazy modifier
            else:
                prev_quant = True
            i += 1
            continue
        if c == "{":
            m = re.match(r"\{(\d*)(,(\d*))?\}", pattern[i:])
            if m and (m.group(1) or m.group(3)):
                if not m.group(1) and m.group(2):
                    out.append(_Construct("empty-min-repeat", i, i + m.end(), m.group(0)))
                    i += m.end()
                    prev_quant = False
                    continue
                i += m.end()
                prev_quant = True
                continue
        prev_quant = False
        i += 1
    return out


def python_divergence(pattern: str) -> str | None:
    """Why Python's parser would read `pattern` differently from RE2 (None: it reads
    it the same way, or cannot read it at all)."""
    for c in _constructs(pattern):
        if c.kind == "posix-class":
            return f"POSIX class `{c.text}` (Python reads it as a set of characters)"
        if c.kind == "empty-min-repeat":
            return f"`{c.text}` (literal text for RE2, a repeat for Python)"
    return None


def check_pattern(pattern: str) -> list[RegexProblem]:
    """All problems with `pattern` as a rule regex (empty list: it compiles on RE2).

    A pure function of the text, memoized: re-validating a corpus after an edit (the
    language server) only pays for patterns it has not seen."""
    return list(_check_pattern(pattern))


@lru_cache(maxsize=65536)
def _check_pattern(pattern: str) -> tuple[RegexProblem, ...]:
    problems: list[RegexProblem] = []
    for c in _constructs(pattern):
        kind = c.kind
        if kind.startswith("lookaround:"):
            problems.append(RegexProblem("RK302", _WHY["lookaround"].format(name=kind.split(":", 1)[1], t=c.text),
                                         c.start, c.end))
        elif kind == "empty-min-repeat":
            num = re.sub(r"\D", "", c.text)
            problems.append(RegexProblem("RK302", _WHY[kind].format(t=c.text, n=num), c.start, c.end))
        elif kind in _WHY:
            problems.append(RegexProblem("RK302", _WHY[kind].format(t=c.text), c.start, c.end))
        elif kind == "class-fallback":
            problems.append(RegexProblem(
                "RK309", f"`{c.text}` inside a character class makes pyre2 hand the pattern to Python's re; "
                f"move it out of the class (`(?:{c.text}|[...])`) or list the characters", c.start, c.end))
    if problems:
        return tuple(problems)
    err = _re2_error(pattern)
    if err is not None:
        python_ok = _python_parses(pattern)
        code = "RK302" if python_ok else "RK301"
        what = "RE2 rejects this pattern" if python_ok else "invalid regex"
        start, end = _error_span(pattern)
        why = _as_written(err, pattern) if python_ok else (_python_error(pattern) or _as_written(err, pattern))
        problems.append(RegexProblem(code, f"{what}: {why}", start, end))
    return tuple(problems)


def _python_error(pattern: str) -> str | None:
    """Python's parser's message for a pattern it rejects: it speaks of the text as written
    ("missing ), unterminated subpattern"), where RE2's quotes its own rewriting."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sre_parse.parse(pattern)
    except re.error as e:
        return e.msg
    except (OverflowError, RecursionError):
        return None
    return None


def _as_written(err: str, pattern: str) -> str:
    r"""RE2's error in the author's words: RE2 (through pyre2) quotes the pattern as it
    was rewritten for it (`\S` as `[^\s\p{Z}]`, `\d` as `\p{Nd}`), which the author
    never wrote.  Its quoted fragment is kept only when it is the author's text."""
    desc, sep, frag = err.partition(": ")
    if not sep or not frag:
        return err
    if frag == pattern:
        return desc
    return f"{desc}: `{frag}`" if frag in pattern else desc


def _python_parses(pattern: str) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sre_parse.parse(pattern)
        return True
    except (re.error, OverflowError, RecursionError):
        return False


def _error_span(pattern: str) -> tuple[int, int]:
    """Best position for an RE2 error: where Python's parser stops, else the whole pattern."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sre_parse.parse(pattern)
    except re.error as e:
        if e.pos is not None:
            return e.pos, min(e.pos + 1, len(pattern)) if pattern else 0
    except (OverflowError, RecursionError):
        pass
    return 0, len(pattern)


def _re2_error(pattern: str) -> str | None:
    try:
        compile_pattern(pattern)  # cached: loading validates and then runs the same pattern
    except Exception as e:  # re2.error, or the fallback exception
        return str(e) or type(e).__name__
    return None


@lru_cache(maxsize=16384)
def compile_pattern(pattern: str | bytes):
    """Compile a validated rule pattern on RE2 (raises re2.error if invalid).  Cached,
    bounded: an editor session compiles a new pattern on every keystroke inside one."""
    return re2.compile(pattern)


def compile_big(pattern: str | bytes, max_mem: int = MAX_MEM):
    """Compile a large alternation with an explicit memory budget.

    pyre2's cache keys on pattern and flags only, not on max_mem, so purge first."""
    re2.purge()
    return re2.compile(pattern, max_mem=max_mem)


def group_names(pattern: str) -> set[str]:
    return set(_group_names(pattern))


@lru_cache(maxsize=65536)
def _group_names(pattern: str) -> frozenset[str]:
    tree = python_parse(pattern)
    return frozenset(tree.state.groupdict) if tree is not None else frozenset()


_WRITTEN_GROUP = re.compile(r"\(\?P<([A-Za-z_][A-Za-z0-9_]*)>")


def written_group_names(pattern: str) -> set[str]:
    """The `(?P<name>` groups written in a pattern, found by their text (for a pattern
    that does not parse, whose groups `group_names` cannot see)."""
    return set(_WRITTEN_GROUP.findall(pattern))


@lru_cache(maxsize=4096)
def python_parse(pattern: str):
    """Python's parse tree of `pattern` (cached), or None if Python cannot parse it."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return sre_parse.parse(pattern)
    except (re.error, OverflowError, RecursionError):
        return None
