"""The only place that knows LSP coordinates: 0-based lines and UTF-16 columns.

rulekit positions are 1-based lines and 1-based code-point columns (end
exclusive); LSP positions are 0-based lines and UTF-16 code-unit columns.  This
module converts positions both ways, and converts rulekit data (Diagnostic,
Span, the feature result types) into lsprotocol objects.  It does no analysis
and no I/O: the caller passes the text a span refers to (`text_of(path)`).
"""
from __future__ import annotations

import functools
from pathlib import Path
from typing import Callable, Iterable
from urllib.parse import quote, unquote, urlparse

from lsprotocol import types as T

from rulekit.codes import CODES
from rulekit.diagnostics import Diagnostic, Severity, Span
from rulekit_lsp.features import (TOKEN_MODIFIERS, TOKEN_TYPES, Action, CompletionEntry, Edit, HoverResult,
                                  InlayHint, Lens, SymbolEntry, Token)

TextOf = Callable[[str], "str | None"]


# ---- URIs ----------------------------------------------------------------------------------

def uri_to_path(uri: str) -> str | None:
    p = urlparse(uri)
    if p.scheme != "file":
        return None
    return str(Path(unquote(p.path)).resolve())


@functools.lru_cache(maxsize=8192)
def path_to_uri(path: str) -> str:
    """A publish names every file of the corpus: resolved once per path, not per publish."""
    return "file://" + quote(str(Path(path).resolve()))


# ---- positions -----------------------------------------------------------------------------

_SPLIT: dict[int, tuple[str, list[str]]] = {}  # id(text) -> (text, its lines): the last few texts


def _lines(text: str) -> list[str]:
    """The same lines as the CLI's (rulekit.diagnostics.split_lines), "\r" of CRLF kept:
    positions are counted in the document as the client sent it.  A publish converts
    many spans of one text, so the split of the last few texts is kept (the text
    object itself is held, so its id cannot be reused while cached)."""
    got = _SPLIT.get(id(text))
    if got is not None and got[0] is text:
        return got[1]
    lines = text.split("\n")
    if len(_SPLIT) >= 16:
        _SPLIT.pop(next(iter(_SPLIT)))
    _SPLIT[id(text)] = (text, lines)
    return lines


def utf16_len(s: str) -> int:
    """UTF-16 code units of `s`; a lone surrogate (JSON lets a client send one) is one unit."""
    return len(s.encode("utf-16-le", "surrogatepass")) // 2


def to_position(text: str | None, line: int, col: int) -> T.Position:
    """1-based line / code-point column -> LSP position (clamped into the text)."""
    if text is None:
        return T.Position(line=max(line - 1, 0), character=max(col - 1, 0))
    lines = _lines(text)
    li = min(max(line - 1, 0), max(len(lines) - 1, 0))
    src = lines[li] if lines else ""
    return T.Position(line=li, character=utf16_len(src[: max(col - 1, 0)]))


def from_position(text: str, pos: T.Position) -> tuple[int, int]:
    """LSP position -> (1-based line, 1-based code-point column), clamped."""
    lines = _lines(text)
    li = min(max(pos.line, 0), len(lines) - 1)
    src = lines[li]
    units = 0
    for i, ch in enumerate(src):
        if units >= pos.character:
            return li + 1, i + 1
        units += 2 if ord(ch) > 0xFFFF else 1
    return li + 1, len(src) + 1


def to_range(span: Span, text: str | None) -> T.Range:
    end_line = span.end_line or span.line
    end_col = span.end_col or span.col
    return T.Range(start=to_position(text, span.line, span.col), end=to_position(text, end_line, end_col))


def from_range(path: str, text: str, rng: T.Range) -> Span:
    l1, c1 = from_position(text, rng.start)
    l2, c2 = from_position(text, rng.end)
    return Span(path, l1, c1, l2, c2)


# ---- diagnostics -----------------------------------------------------------------------------

_SEVERITY = {Severity.ERROR: T.DiagnosticSeverity.Error, Severity.WARNING: T.DiagnosticSeverity.Warning,
             Severity.INFO: T.DiagnosticSeverity.Information, Severity.HINT: T.DiagnosticSeverity.Hint}


def diagnostic(d: Diagnostic, text_of: TextOf, code_docs_url: str = "") -> T.Diagnostic:
    span = d.span or Span("", 1, 1)
    related = None
    if d.related:
        related = [T.DiagnosticRelatedInformation(
            location=T.Location(uri=path_to_uri(r.span.file), range=to_range(r.span, text_of(r.span.file))),
            message=r.message) for r in d.related if r.span is not None]
    desc = T.CodeDescription(href=code_docs_url.replace("{code}", d.code)) if code_docs_url else None
    data = {"name": d.name, **{k: v for k, v in d.data.items() if _jsonable(v)}}
    return T.Diagnostic(range=to_range(span, text_of(span.file)), message=d.message,
                        severity=_SEVERITY[d.severity], code=d.code, code_description=desc,  # type: ignore[index]
                        source="rulekit", related_information=related, data=data)


def _jsonable(v) -> bool:
    return isinstance(v, (str, int, float, bool, type(None))) or (
        isinstance(v, (list, tuple)) and all(_jsonable(x) for x in v)) or (
        isinstance(v, dict) and all(isinstance(k, str) and _jsonable(x) for k, x in v.items()))


def code_summary(code: str) -> str:
    c = CODES.get(code)
    return f"{c.code} {c.name}: {c.summary}" if c else code


# ---- feature results -----------------------------------------------------------------------

def hover(h: HoverResult | None, text: str | None) -> T.Hover | None:
    if h is None:
        return None
    return T.Hover(contents=T.MarkupContent(kind=T.MarkupKind.Markdown, value=h.markdown),
                   range=to_range(h.span, text) if h.span else None)


def location(span: Span, text_of: TextOf) -> T.Location:
    return T.Location(uri=path_to_uri(span.file), range=to_range(span, text_of(span.file)))


def text_edit(e: Edit, text: str | None) -> T.TextEdit:
    return T.TextEdit(range=to_range(e.span, text), new_text=e.new_text)


def workspace_edit(edits: dict[str, list[Edit]], text_of: TextOf) -> T.WorkspaceEdit:
    return T.WorkspaceEdit(changes={path_to_uri(p): [text_edit(e, text_of(p)) for e in es]
                                    for p, es in edits.items()})


_COMPLETION_KIND = {"symptom": T.CompletionItemKind.Constant, "rule": T.CompletionItemKind.Function,
                    "keyword": T.CompletionItemKind.Keyword, "key": T.CompletionItemKind.Property,
                    "stratum": T.CompletionItemKind.EnumMember, "emit_type": T.CompletionItemKind.EnumMember,
                    "value": T.CompletionItemKind.Value, "metric": T.CompletionItemKind.Variable}


def completion(items: Iterable[CompletionEntry], text: str | None = None, line: int | None = None,
               span: tuple[int, int] | None = None) -> T.CompletionList:
    """Completion items; with the document text, the 1-based line and the (start, end)
    columns of the name being completed, each item carries a `textEdit` replacing that
    range (so clients do not guess the word from their own word rule)."""
    rng = None
    if text is not None and line is not None and span is not None:
        rng = T.Range(start=to_position(text, line, span[0]), end=to_position(text, line, span[1]))
    out = [T.CompletionItem(label=c.label, kind=_COMPLETION_KIND.get(c.kind, T.CompletionItemKind.Text),
                            detail=c.detail or None,
                            documentation=T.MarkupContent(kind=T.MarkupKind.Markdown, value=c.doc) if c.doc else None,
                            insert_text=None if rng is not None else c.insert_text,
                            filter_text=c.label if rng is not None else None,
                            text_edit=T.TextEdit(range=rng, new_text=c.insert_text or c.label) if rng is not None
                            else None)
           for c in items]
    return T.CompletionList(is_incomplete=False, items=out)


_SYMBOL_KIND = {"symptom": T.SymbolKind.Constant, "rule": T.SymbolKind.Function, "test": T.SymbolKind.Event,
                "section": T.SymbolKind.Namespace, "case": T.SymbolKind.Event, "function": T.SymbolKind.Function,
                "prefix": T.SymbolKind.Constant}


def document_symbol(s: SymbolEntry, text: str | None) -> T.DocumentSymbol:
    rng = to_range(s.span, text)
    sel = to_range(s.selection, text)
    # the selection must be inside the range
    if (sel.start.line, sel.start.character) < (rng.start.line, rng.start.character) or \
            (sel.end.line, sel.end.character) > (rng.end.line, rng.end.character):
        rng = T.Range(start=min(rng.start, sel.start, key=lambda p: (p.line, p.character)),
                      end=max(rng.end, sel.end, key=lambda p: (p.line, p.character)))
    return T.DocumentSymbol(name=s.name or "?", kind=_SYMBOL_KIND.get(s.kind, T.SymbolKind.Object), range=rng,
                            selection_range=sel, detail=s.detail or None,
                            children=[document_symbol(c, text) for c in s.children] or None)


def workspace_symbol(s: SymbolEntry, text_of: TextOf) -> T.WorkspaceSymbol:
    return T.WorkspaceSymbol(name=s.name, kind=_SYMBOL_KIND.get(s.kind, T.SymbolKind.Object),
                             location=location(s.selection, text_of), container_name=s.detail or None)


def code_lens(lens: Lens, text: str | None) -> T.CodeLens:
    cmd = T.Command(title=lens.title, command=lens.command, arguments=list(lens.arguments)) if lens.command else \
        T.Command(title=lens.title, command="")
    return T.CodeLens(range=to_range(lens.span, text), command=cmd)


def code_action(a: Action, text_of: TextOf, code_docs_url: str = "") -> T.CodeAction:
    kind = T.CodeActionKind.QuickFix if a.kind == "quickfix" else T.CodeActionKind.RefactorRewrite
    diags = [diagnostic(a.diagnostic, text_of, code_docs_url)] if a.diagnostic else None
    return T.CodeAction(title=a.title, kind=kind, diagnostics=diags, edit=workspace_edit(a.edits, text_of))


def semantic_tokens(tokens: Iterable[Token], text: str) -> T.SemanticTokens:
    """Encode tokens (1-based, code points) as LSP relative UTF-16 integers."""
    data: list[int] = []
    lines = _lines(text)
    prev_line, prev_char = 0, 0
    for t in sorted(tokens, key=lambda t: (t.line, t.col)):
        li = t.line - 1
        if not (0 <= li < len(lines)):
            continue
        src = lines[li]
        start = utf16_len(src[: t.col - 1])
        length = utf16_len(src[t.col - 1 : t.col - 1 + t.length])
        if length <= 0:
            continue
        delta_line = li - prev_line
        delta_char = start - prev_char if delta_line == 0 else start
        if delta_char < 0:
            continue  # overlapping token: skip
        mods = 0
        for m in t.modifiers:
            if m in TOKEN_MODIFIERS:
                mods |= 1 << TOKEN_MODIFIERS.index(m)
        data += [delta_line, delta_char, length, TOKEN_TYPES.index(t.type), mods]
        prev_line, prev_char = li, start
    return T.SemanticTokens(data=data)


def inlay_hint(h: InlayHint, text: str | None) -> T.InlayHint:
    return T.InlayHint(position=to_position(text, h.line, h.col), label=h.label, kind=T.InlayHintKind.Type,
                       tooltip=h.tooltip or None, padding_left=True)
