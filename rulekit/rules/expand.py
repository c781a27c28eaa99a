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
