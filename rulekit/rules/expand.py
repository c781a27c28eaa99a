"""Load-time expansion shared by the TOML and DSL front-ends: family templates
(`${param}`), catalog patterns (key group replaced by the entry's key) and emit
templates (`{capture}`).  Pure string functions, no I/O.
"""
from __future__ import annotations

import re
from typing import Mapping

_PARAM = re.compile(r"\$\{(\w+)\}")
_CAPTURE = re.compile(r"\{(\w+)\}")


def substitute_params(template: str, params: Mapping[str, object]) -> tuple[str, list[str]]:
    """Replace `${name}` in a family template; returns (text, names that were missing)."""
    missing: list[str] = []

    def rep(m: re.Match) -> str:
        key = m.group(1)
        if key not in params:
            missing.append(key)
            return m.group(0)
        return str(params[key])

    return _PARAM.sub(rep, template), missing


def template_names(template: str | None) -> list[str]:
    """The `{capture}` names an emit template refers to."""
    return _CAPTURE.findall(template or "")


def render(template: str | None, values: Mapping[str, object]) -> str | None:
    """Fill `{capture}` placeholders; a missing or None value renders as ''."""
    if template is None:
        return None
    if "{" not in template:
        return template
    return _CAPTURE.sub(lambda m: "" if values.get(m.group(1)) is None else str(values[m.group(1)]), template)


def find_group(pattern: str, name: str) -> tuple[int, int] | None:
    """(start, end) of the body of the named group `(?P<name>...)` in `pattern`."""
    opener = f"(?P<{name}>"
    start = pattern.find(opener)
    while start >= 0 and _escaped(pattern, start):
        start = pattern.find(opener, start + 1)
    if start < 0:
        return None
    body = start + len(opener)
    depth = 1
    i = body
    in_class = False
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if in_class:
            if c == "]":
                in_class = False
        elif c == "[":
            in_class = True
            if pattern[i + 1 : i + 2] == "]":
                i += 1
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return body, i
        i += 1
    return None


def expand_catalog_pattern(pattern: str, key_group: str, key: str) -> str | None:
    """The catalog pattern with the key group's body replaced by the escaped key."""
    where = find_group(pattern, key_group)
    if where is None:
        return None
    start, end = where
    return pattern[:start] + re.escape(str(key)) + pattern[end:]


def _escaped(text: str, pos: int) -> bool:
    n = 0
    while pos - n - 1 >= 0 and text[pos - n - 1] == "\\":
        n += 1
    return n % 2 == 1


def _structure(pattern: str) -> tuple[dict[int, int], list[int]]:
    """(open paren index -> its close index, top-level `|` indexes) of a regex, skipping
    escapes and character classes.  Unbalanced parentheses are left out."""
    pairs: dict[int, int] = {}
    stack: list[int] = []
    bars: list[int] = []
    i, in_class = 0, False
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if in_class:
            if c == "]":
                in_class = False
        elif c == "[":
            in_class = True
            if pattern[i + 1 : i + 2] == "^":
                i += 1
            if pattern[i + 1 : i + 2] == "]":
                i += 1
        elif c == "(":
            stack.append(i)
        elif c == ")":
            if stack:
                pairs[stack.pop()] = i
        elif c == "|" and not stack:
            bars.append(i)
        i += 1
    return pairs, bars


def drop_branch(pattern: str, group: str) -> str | None:
    """The pattern without the alternative branch that holds the named group
    `(?P<group>...)`: the branch of the innermost alternation around the group (the
    group's own parentheses excluded).  None when the group is missing or sits in no
    alternation with another branch."""
    where = find_group(pattern, group)
    if where is None:
        return None
    gopen = pattern.rfind("(?P<" + group + ">", 0, where[0])
    pairs, top_bars = _structure(pattern)
    # innermost enclosing group holding a `|` at its own depth around the named group
    enclosing = sorted(((o, c) for o, c in pairs.items() if o < gopen and c > where[1]), key=lambda oc: oc[0],
                       reverse=True)
    for o, c in enclosing:
        bars = _bars_within(pattern, o, c, pairs)
        if bars:
            return _cut(pattern, o + _body_offset(pattern, o), c, bars, gopen)
    if top_bars:
        return _cut(pattern, 0, len(pattern), top_bars, gopen)
    return None


def _body_offset(pattern: str, o: int) -> int:
    """Length of a group's opener: `(`, `(?:`, `(?P<name>`, `(?i:` ..."""
    if pattern.startswith("(?P<", o):
        return pattern.index(">", o) + 1 - o
    if pattern.startswith("(?", o):
        return pattern.index(":", o) + 1 - o
    return 1


def _bars_within(pattern: str, o: int, c: int, pairs: dict[int, int]) -> list[int]:
    """The `|` directly inside the group (o, c) (not inside a nested group)."""
    out = []
    i = o + 1
    skip_to = -1
    in_class = False
    while i < c:
        ch = pattern[i]
        if i <= skip_to:
            i += 1
            continue
        if ch == "\\":
            i += 2
            continue
        if in_class:
            if ch == "]":
                in_class = False
        elif ch == "[":
            in_class = True
            if pattern[i + 1 : i + 2] == "^":
                i += 1
            if pattern[i + 1 : i + 2] == "]":
                i += 1
        elif ch == "(" and i in pairs:
            skip_to = pairs[i]
        elif ch == "|":
            out.append(i)
        i += 1
    return out


def _cut(pattern: str, body_start: int, body_end: int, bars: list[int], at: int) -> str:
    """Remove the branch (between `bars`, within [body_start, body_end)) holding index `at`."""
    bounds = [body_start - 1, *bars, body_end]
    for k in range(len(bounds) - 1):
        lo, hi = bounds[k], bounds[k + 1]
        if lo < at < hi:
            if k == 0:  # the first branch: drop it and the `|` after it
                return pattern[:body_start] + pattern[hi + 1:]
            return pattern[:lo] + pattern[hi:]  # drop the `|` before it and the branch
    return pattern


def expand_catalog_keys(pattern: str, keys: list[str], values: Mapping[str, object]) -> tuple[str | None, list[str]]:
    """A multi-key catalog pattern for one entry: each key group's body replaced by the
    entry's value for it (escaped); a key the entry has no value for drops the
    alternative branch holding its group.  Returns (pattern, the keys whose group could
    not be filled or dropped); the pattern is None when no branch is left."""
    bad: list[str] = []
    out: str | None = pattern
    for key in keys:
        if out is None:
            break
        value = values.get(key)
        if value is None or value == "":
            dropped = drop_branch(out, key)
            if dropped is None:
                bad.append(key)
                continue
            out = dropped or None
        else:
            filled = expand_catalog_pattern(out, key, str(value))
            if filled is None:
                bad.append(key)
                continue
            out = filled
    return out, bad
