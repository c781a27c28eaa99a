"""rich console markup as plain text, without importing rich's text machinery
(`rich.markup` pulls in rich.text, rich.style, rich.segment: ~25 ms of a ~0.35 s
`rulekit attribute`): `escape()` is rich's `rich.markup.escape`, and `plain_lines()`
gives the lines `rich.markup.render(markup, emoji=True).split("\\n", allow_blank=True)`
has as plain text (tags dropped, `\\[` escapes, `:emoji:` codes through rich's own
`rich._emoji_replace`, rich's stripped control characters removed).

Only what is certainly the same is done here: markup with a tab (rich expands it by
cell width), an explicit closing tag (`[/bold]`, matched by normalized style name),
a `[@...]` meta tag or a `[/]` with nothing to close goes to rich itself
(`tests/test_cli_text_render.py` compares the two on tricky and fuzzed markup).
Renders nothing else; must not import rich.markup, rich.text or rich.console.
"""
from __future__ import annotations

import re

# rich.markup.RE_TAGS and the pattern of rich.markup.escape (rich 13-15)
RE_TAGS = re.compile(r"""((\\*)\[([a-z#/@][^[]*?)])""", re.VERBOSE)
_ESCAPE = re.compile(r"(\\*)(\[[a-z#/@][^[]*?])")
# rich.control.STRIP_CONTROL_CODES: bell, backspace, vertical tab, form feed, carriage return
STRIP_CONTROL_CODES = (7, 8, 11, 12, 13)
_STRIP = {c: None for c in STRIP_CONTROL_CODES}


def escape(markup: str) -> str:
    """`rich.markup.escape`: text that is not read as markup."""

    def escape_backslashes(match: re.Match[str]) -> str:
        backslashes, text = match.groups()
        return f"{backslashes}{backslashes}\\{text}"

    markup = _ESCAPE.sub(escape_backslashes, markup)
    if markup.endswith("\\") and not markup.endswith("\\\\"):
        return markup + "\\"
    return markup


class _Rich(Exception):
    """Markup this module does not render: rich does."""


def _emoji(text: str) -> str:
    if ":" not in text:  # no emoji code without a colon: skip the table
        return text
    from rich._emoji_replace import _emoji_replace

    return _emoji_replace(text)


def _plain(markup: str) -> str:
    if "\t" in markup:
        raise _Rich
    if "[" not in markup:
        return _emoji(markup).translate(_STRIP)
    out: list[str] = []
    depth = 0  # open tags: only implicit closes `[/]` are rendered here
    position = 0
    for match in RE_TAGS.finditer(markup):
        full_text, escapes, tag_text = match.groups()
        start, end = match.span()
        if start > position:
            out.append(markup[position:start])
        if escapes:
            backslashes, escaped = divmod(len(escapes), 2)
            if backslashes:
                out.append("\\" * backslashes)
            if escaped:
                out.append(full_text[len(escapes):])
                position = end
                continue
        name = tag_text.partition("=")[0]
        if name.startswith("@"):
            raise _Rich
        if name.startswith("/"):
            if name[1:].strip() or depth == 0:
                raise _Rich
            depth -= 1
        else:
            depth += 1
        position = end
    if position < len(markup):
        out.append(markup[position:])
    return "".join(_emoji(piece.replace("\\[", "[")).translate(_STRIP) for piece in out)


def plain_lines(markup: str) -> list[str]:
    """The plain text of each line `markup` renders to (see the module docstring)."""
    try:
        return _plain(markup).split("\n")
    except _Rich:
        from rich.markup import render

        lines = render(markup, emoji=True).split("\n", allow_blank=True)
        for line in lines:
            if "\t" in line.plain:
                line.expand_tabs(8)
        return [line.plain for line in lines]
