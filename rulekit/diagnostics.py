"""The one Diagnostic type: every problem rulekit reports (syntax, schema, names,
regexes, lint findings, failed tests, bad job input) is a `Diagnostic`.

Positions are 1-based lines and 1-based columns counted in Unicode code points;
`end_col` is exclusive.  Only the LSP conversion module knows 0-based lines or
UTF-16 columns.  This module does no I/O and knows no renderer.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Any

from rulekit.codes import CODES


# a file that cannot be read, parsed or imported: listed before everything else
ROOT_CODES = frozenset({"RK001", "RK002", "RK003", "RK004", "RK006"})


class Severity(str, Enum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"
    HINT = "hint"

    @property
    def order(self) -> int:
        return {"error": 0, "warning": 1, "info": 2, "hint": 3}[self.value]


@dataclass(frozen=True, order=True)
class Span:
    """A range in a file: 1-based line/col, end exclusive."""

    file: str
    line: int = 1
    col: int = 1
    end_line: int = 0
    end_col: int = 0

    def __post_init__(self) -> None:
        if self.end_line < self.line or (self.end_line == self.line and self.end_col < self.col):
            object.__setattr__(self, "end_line", self.line)
            object.__setattr__(self, "end_col", self.col)

    @staticmethod
    def point(file: str, line: int, col: int, length: int = 1) -> "Span":
        return Span(file, line, col, line, col + max(length, 0))

    @staticmethod
    def from_offsets(file: str, text: str, start: int, end: int) -> "Span":
        """Span of text[start:end] (character offsets) inside a whole file's text."""
        line, col = offset_to_line_col(text, start)
        eline, ecol = offset_to_line_col(text, end)
        return Span(file, line, col, eline, ecol)

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


def split_lines(text: str) -> list[str]:
    """The lines of a text as every rulekit position counts them (CLI, language server,
    TOML and DSL parsers alike): split at "\n" only, a "\r" before it dropped.  A lone
    "\r", a form feed or a Unicode line separator does not end a line (str.splitlines
    would split there and shift every later line)."""
    return [ln[:-1] if ln.endswith("\r") else ln for ln in text.split("\n")]


def offset_to_line_col(text: str, offset: int) -> tuple[int, int]:
    offset = max(0, min(offset, len(text)))
    line = text.count("\n", 0, offset) + 1
    last_nl = text.rfind("\n", 0, offset)
    return line, offset - last_nl  # last_nl == -1 gives col = offset + 1


@dataclass(frozen=True)
class Related:
    """A second location that explains a diagnostic (e.g. the other definition)."""

    span: Span
    message: str


@dataclass(frozen=True)
class Diagnostic:
    code: str
    message: str
    span: Span | None = None
    severity: Severity | None = None  # None: the code table's default
    related: tuple[Related, ...] = ()
    data: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    def __post_init__(self) -> None:
        if self.code not in CODES:
            raise KeyError(f"unknown diagnostic code {self.code!r}; add it to rulekit/codes.py")
        if self.severity is None:
            object.__setattr__(self, "severity", Severity(CODES[self.code].severity))

    @property
    def name(self) -> str:
        return CODES[self.code].name

    def with_span(self, span: Span) -> "Diagnostic":
        return replace(self, span=span)

    def sort_key(self) -> tuple:
        """Errors that stop a file from loading first (what else is wrong may follow
        from them), then by place."""
        s = self.span
        return (0 if self.code in ROOT_CODES else 1, s.file if s else "", s.line if s else 0, s.col if s else 0,
                self.code, self.message)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "code": self.code,
            "name": self.name,
            "severity": self.severity.value,  # type: ignore[union-attr]
            "message": self.message,
            "span": _span_dict(self.span),
            "related": [{"span": _span_dict(r.span), "message": r.message} for r in self.related],
        }
        if self.data:
            d["data"] = self.data
        return d

    def __str__(self) -> str:
        where = f"{self.span}: " if self.span else ""
        return f"{where}{self.severity.value} {self.code} {self.message}"  # type: ignore[union-attr]


def _span_dict(span: Span | None) -> dict[str, Any] | None:
    if span is None:
        return None
    return {"file": span.file, "line": span.line, "col": span.col, "end_line": span.end_line, "end_col": span.end_col}


def has_errors(diags: list[Diagnostic] | tuple[Diagnostic, ...]) -> bool:
    return any(d.severity is Severity.ERROR for d in diags)


class RulekitError(Exception):
    """A fatal user-facing error carrying diagnostics (never a bug)."""

    def __init__(self, diagnostics: list[Diagnostic] | Diagnostic):
        if isinstance(diagnostics, Diagnostic):
            diagnostics = [diagnostics]
        self.diagnostics = list(diagnostics)
        super().__init__("\n".join(str(d) for d in self.diagnostics))
