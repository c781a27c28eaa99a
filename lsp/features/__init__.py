"""Pure feature functions of the language server (hover, navigation, completion,
symbols, code actions, code lens, semantic tokens, formatting, inlay hints).

Each takes the workspace index and a position in rulekit terms (path, 1-based
line, 1-based column in code points) and returns the plain result types below.
No LSP types, no 0-based or UTF-16 positions (that is `rulekit_lsp.convert`),
no I/O.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from rulekit.diagnostics import Diagnostic, Span


@dataclass(frozen=True)
class Edit:
    span: Span  # replaced range (empty range: insertion)
    new_text: str


@dataclass(frozen=True)
class HoverResult:
    markdown: str
    span: Span | None = None


@dataclass(frozen=True)
class CompletionEntry:
    label: str
    kind: str  # symptom / rule / keyword / key / stratum / emit_type / value
    detail: str = ""
    doc: str = ""
    insert_text: str | None = None


@dataclass
class SymbolEntry:
    name: str
    kind: str  # symptom / rule / test / section / case / function
    span: Span
    selection: Span
    detail: str = ""
    children: list["SymbolEntry"] = field(default_factory=list)


@dataclass(frozen=True)
class Lens:
    span: Span
    title: str
    command: str = ""
    arguments: tuple = ()


@dataclass(frozen=True)
class Action:
    title: str
    kind: str  # "quickfix" | "refactor.rewrite"
    edits: dict[str, list[Edit]]
    diagnostic: Diagnostic | None = None


@dataclass(frozen=True)
class Token:
    line: int  # 1-based
    col: int  # 1-based, code points
    length: int  # code points, single line
    type: str  # one of TOKEN_TYPES
    modifiers: tuple[str, ...] = ()


@dataclass(frozen=True)
class InlayHint:
    line: int
    col: int
    label: str
    tooltip: str = ""


TOKEN_TYPES = ("keyword", "string", "regexp", "number", "comment", "function", "enumMember", "type", "property",
               "variable", "operator")
TOKEN_MODIFIERS = ("declaration", "defaultLibrary")
