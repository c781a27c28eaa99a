"""DSL text -> typed AST (`rulekit.rules.dsl.ast`) + syntax Diagnostics (RK003).

Loads `grammar/rulekit.lark` (packaged as `rulekit.grammar`) once, parses with
LALR, and turns the Lark tree into AST dataclasses so no Lark type leaves this
module.  Error recovery: the file is cut at top-level declarations (a keyword
in column 1); inside a piece that does not parse, each error is reported and
the rest of its line is blanked, then the piece is parsed again, so one pass
reports every syntax error with its span and the expected tokens in words.
Never raises on user input.  No semantics (that is `compiler.py`).
"""
from __future__ import annotations

import re
from dataclasses import replace
from functools import lru_cache
from importlib import resources
from pathlib import Path

from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken
from lark.lexer import PatternStr

from rulekit.diagnostics import Diagnostic, Span
from rulekit.rules.dsl import ast as A

TOP_KEYWORDS = ("author", "symptom", "prefix", "extractor", "family", "catalog", "filter", "refiner",
                "collector", "metric_rule", "case")
_TOP_LINE = re.compile(r"^(?:" + "|".join(TOP_KEYWORDS) + r")\b", re.M)
# a line in column 1 shaped like a declaration header with a misspelt keyword (`extractr X {`)
_HEADER_LIKE = re.compile(r"^[A-Za-z_][\w.-]*[ \t]+[^\n]*\{[ \t]*(?:#[^\n]*)?$", re.M)
MAX_ERRORS_PER_PIECE = 25

TOKEN_WORDS = {
    "STRING": "a string",
    "NAME": "a name",
    "REGEX": "a regex /.../",
    "INT": "an integer",
    "FLOAT": "a number",
    "PLUS": "`+`",
    "CMP": "a comparison (> >= < <= == !=)",
    "DURATION": "a duration (60s, 5m, 1h)",
    "$END": "end of file",
}


def grammar_text() -> str:
    try:
        return resources.files("rulekit.grammar").joinpath("rulekit.lark").read_text(encoding="utf-8")
    except (ModuleNotFoundError, FileNotFoundError):  # running from a source tree without the package mapping
        return (Path(__file__).resolve().parents[3] / "grammar" / "rulekit.lark").read_text(encoding="utf-8")


@lru_cache(maxsize=1)
def lark_parser() -> Lark:
    return Lark(grammar_text(), parser="lalr", lexer="contextual", propagate_positions=True,
                maybe_placeholders=True, cache=False)


@lru_cache(maxsize=1)
def _terminal_words() -> dict[str, str]:
    words = dict(TOKEN_WORDS)
    for t in lark_parser().terminals:
        if t.name not in words and isinstance(t.pattern, PatternStr):
            words[t.name] = f"`{t.pattern.value}`"
    return words


def expected_words(names) -> list[str]:
    words = _terminal_words()
    out = sorted({words.get(n, n.lower()) for n in names if n not in ("COMMENT", "WS")})
    # keywords first (back-quoted), then token classes
    return sorted(out, key=lambda w: (not w.startswith("`"), w))


# ---- parsing with recovery --------------------------------------------------------

def parse_ast(text: str, path: str) -> tuple[A.Module, list[Diagnostic]]:
    """Parse a whole `.rule` file: the AST of everything that parsed, and every syntax error."""
    parser = lark_parser()
    if text.startswith("\ufeff"):  # a byte-order mark is whitespace (same length: spans stay exact)
        text = " " + text[1:]
    comments = scan_comments(text, path)
    try:
        tree = parser.parse(text)
        items = _Builder(path).items(tree)
        return A.Module(Span(path, 1, 1, *_end_pos(text)), items, comments), []
    except UnexpectedInput:
        pass
    items: list[A.Item] = []
    diags: list[Diagnostic] = []
    for start, piece in _pieces(text):
        line_offset = text.count("\n", 0, start)
        p_items, p_diags = _parse_piece(piece, path, line_offset)
        items.extend(p_items)
        diags.extend(p_diags)
    return A.Module(Span(path, 1, 1, *_end_pos(text)), items, comments), diags


def _end_pos(text: str) -> tuple[int, int]:
    line = text.count("\n") + 1
    return line, len(text) - (text.rfind("\n") + 1) + 1


def _pieces(text: str) -> list[tuple[int, str]]:
    starts = sorted({m.start() for m in _TOP_LINE.finditer(text)} | {m.start() for m in _HEADER_LIKE.finditer(text)})
    if not starts or starts[0] != 0:
        starts.insert(0, 0)
    starts.append(len(text))
    return [(a, text[a:b]) for a, b in zip(starts, starts[1:]) if a < b]


def _parse_piece(piece: str, path: str, line_offset: int) -> tuple[list[A.Item], list[Diagnostic]]:
    parser = lark_parser()
    diags: list[Diagnostic] = []
    work = piece
    closers = 0
    last_pos = -1
    for _ in range(MAX_ERRORS_PER_PIECE * 2):
        try:
            tree = parser.parse(work)
            return _Builder(path, line_offset).items(tree), diags
        except UnexpectedInput as e:
            at_end = _is_eof(e)
            if at_end:
                if not diags:
                    diags.append(_diag(e, work, path, line_offset))
                if closers >= 8:
                    break
                work = work.rstrip() + " }\n"
                closers += 1
                continue
            pos = _offset(e, work)
            if pos == len(work) - len(work.lstrip()) and isinstance(e, UnexpectedToken) and e.token.type == "NAME":
                # the piece does not start with a declaration keyword: one error for all of it
                d = _diag(e, work, path, line_offset)
                diags.append(replace(d, message=f"unknown declaration `{e.token.value}`; "
                                                f"expected {_join(expected_words(e.accepts or e.expected))}"))
                return [], diags
            if pos > last_pos:
                diags.append(_diag(e, work, path, line_offset))
                last_pos = pos
            if len(diags) >= MAX_ERRORS_PER_PIECE:
                break
            work = _blank(work, pos, e)
    return [], diags


def _is_eof(e: UnexpectedInput) -> bool:
    if isinstance(e, UnexpectedEOF):
        return True
    return isinstance(e, UnexpectedToken) and e.token.type == "$END"


def _offset(e: UnexpectedInput, text: str) -> int:
    if isinstance(e, UnexpectedToken):
        return e.token.start_pos if e.token.start_pos is not None else len(text)
    return getattr(e, "pos_in_stream", 0) or 0


def _blank(text: str, pos: int, e: UnexpectedInput) -> str:
    """Drop the statement that holds the error at `pos` (keeping block braces), so the
    parser can go on with the next statement."""
    line_start = text.rfind("\n", 0, pos) + 1
    eol = text.find("\n", pos)
    if eol < 0:
        eol = len(text)
    line = text[line_start:eol]
    lead = len(line) - len(line.lstrip())
    start = pos
    if isinstance(e, UnexpectedToken) and e.token.type == "RBRACE" and not text[line_start:pos].strip():
        # a closing brace where a value was expected: the statement before it is incomplete
        prev_end = line_start - 1
        while prev_end > 0 and not text[text.rfind("\n", 0, prev_end) + 1:prev_end].strip():
            prev_end = text.rfind("\n", 0, prev_end)
        prev_start = text.rfind("\n", 0, max(prev_end, 0)) + 1
        prev = text[prev_start:prev_end]
        if prev_end > 0 and not _TOP_LINE.match(prev) and not prev.rstrip().endswith("{"):
            start = prev_start + len(prev) - len(prev.lstrip())
            eol = prev_end
        else:
            start, eol = pos, pos + 1
    elif not _TOP_LINE.match(line) and not line.rstrip().endswith("{"):
        # a statement line: drop all of it (a leading `}` closes a block and stays)
        start = line_start + lead + (1 if line.lstrip().startswith("}") else 0)
        if start > pos:
            start = pos
    elif line.rstrip().endswith("{") and pos < line_start + len(line.rstrip()) - 1:
        eol = line_start + len(line.rstrip()) - 1  # keep the block's opening brace
    if start >= eol:
        start, eol = pos, min(pos + 1, len(text))
    return text[:start] + "".join(c if c == "\n" else " " for c in text[start:eol]) + text[eol:]


def _diag(e: UnexpectedInput, text: str, path: str, line_offset: int) -> Diagnostic:
    if isinstance(e, UnexpectedToken) and e.token.type != "$END":
        tok = e.token
        span = Span(path, tok.line + line_offset, tok.column, tok.end_line + line_offset, tok.end_column)
        words = expected_words(e.accepts or e.expected)
        shown = tok.value if len(tok.value) <= 40 else tok.value[:37] + "..."
        msg = f"unexpected {_what(tok)} `{shown}`; expected {_join(words)}"
        return Diagnostic("RK003", msg, span, data={"expected": words, "found": tok.type})
    if isinstance(e, UnexpectedCharacters):
        line, col = e.line + line_offset, e.column
        ch = text[e.pos_in_stream] if e.pos_in_stream < len(text) else ""
        hint = ""
        if ch == '"':
            hint = " (unterminated string: a string ends on the same line)"
        elif ch == "/":
            hint = " (unterminated or empty regex: /pattern/ on one line, `\\/` for a slash)"
        words = expected_words(e.allowed or ())
        msg = f"unexpected character `{ch}`{hint}; expected {_join(words)}"
        return Diagnostic("RK003", msg, Span(path, line, col, line, col + 1), data={"expected": words, "found": ch})
    # end of input inside a declaration
    stripped = text.rstrip()
    line = stripped.count("\n") + 1
    col = len(stripped) - (stripped.rfind("\n") + 1) + 1
    expected = getattr(e, "accepts", None) or getattr(e, "expected", None) or ()
    words = expected_words(expected)
    msg = f"unexpected end of the declaration; expected {_join(words)} (a `}}` is probably missing)"
    return Diagnostic("RK003", msg, Span(path, line + line_offset, max(col - 1, 1), line + line_offset, max(col, 2)),
                      data={"expected": words, "found": "$END"})


def _what(tok: Token) -> str:
    if tok.type in TOKEN_WORDS:
        return TOKEN_WORDS[tok.type].split(" ", 1)[-1] if tok.type != "PLUS" else "`+`"
    return "keyword" if tok.value.isalpha() else "symbol"


def _join(words: list[str]) -> str:
    if not words:
        return "nothing more here"
    if len(words) > 14:
        words = words[:14] + ["..."]
    return ", ".join(words[:-1]) + (" or " if len(words) > 1 else "") + words[-1]


def scan_comments(text: str, path: str) -> list[A.Comment]:
    """Every `# ...` comment (outside strings and regexes), with its span."""
    out = []
    line = 1
    i = 0
    n = len(text)
    line_start = 0
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            line_start = i + 1
        elif c == '"' or c == "/":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            i = min(j, n - 1) if j < n and text[j] == c else j - 1
        elif c == "#":
            j = text.find("\n", i)
            j = n if j < 0 else j
            col = i - line_start + 1
            out.append(A.Comment(Span(path, line, col, line, col + (j - i)), text[i:j].rstrip()))
            i = j - 1
        i += 1
    return out


# ---- Lark tree -> AST ---------------------------------------------------------------

_STR_ESC = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\", "0": "\0"}


def decode_string(raw: str) -> str:
    """The value of a `"..."` literal (JSON-like escapes; an unknown escape keeps its backslash)."""
    body = raw[1:-1]
    if "\\" not in body:
        return body
    out = []
    i = 0
    while i < len(body):
        c = body[i]
        if c == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            if nxt in _STR_ESC:
                out.append(_STR_ESC[nxt])
                i += 2
                continue
            if nxt == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", body[i + 2 : i + 6] or ""):
                out.append(chr(int(body[i + 2 : i + 6], 16)))
                i += 6
                continue
            out.append(c + nxt)
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


def decode_regex(raw: str) -> str:
    body = raw[1:-1]
    out = []
    i = 0
    while i < len(body):
        if body[i] == "\\" and i + 1 < len(body):
            out.append("/" if body[i + 1] == "/" else body[i : i + 2])
            i += 2
        else:
            out.append(body[i])
            i += 1
    return "".join(out)


class _Builder:
    def __init__(self, path: str, line_offset: int = 0):
        self.path = path
        self.off = line_offset

    # spans
    def tspan(self, tok: Token) -> Span:
        return Span(self.path, tok.line + self.off, tok.column, tok.end_line + self.off, tok.end_column)

    def span(self, tree: Tree) -> Span:
        m = tree.meta
        if getattr(m, "empty", True):
            return Span(self.path, 1 + self.off, 1)
        return Span(self.path, m.line + self.off, m.column, m.end_line + self.off, m.end_column)

    # entry
    def items(self, tree: Tree) -> list[A.Item]:
        return [self.item(c) for c in tree.children]

    def item(self, t: Tree) -> A.Item:
        return getattr(self, t.data)(t)

    # values
    def string(self, t: Tree | Token) -> A.Str:
        tok = t.children[0] if isinstance(t, Tree) else t
        return A.Str(self.tspan(tok), decode_string(tok.value))

    def word(self, t: Tree | Token) -> A.Name | A.Str:
        if isinstance(t, Tree):
            return self.string(t)
        if t.type == "STRING":
            return A.Str(self.tspan(t), decode_string(t.value))
        return A.Name(self.tspan(t), t.value)

    def name(self, tok: Token) -> A.Name:
        return A.Name(self.tspan(tok), tok.value)

    def regex(self, tok: Token) -> A.Regex:
        sp = self.tspan(tok)
        content = Span(self.path, sp.line, sp.col + 1, sp.end_line, max(sp.end_col - 1, sp.col + 1))
        return A.Regex(sp, decode_regex(tok.value), content)

    def int_tok(self, tok: Token) -> A.Int:
        return A.Int(self.tspan(tok), int(tok.value))

    def value(self, t) -> A.Value:
        if isinstance(t, Token):  # should not happen (all values are rules), but be safe
            return A.Str(self.tspan(t), t.value)
        d = t.data
        if d in ("string", "str_value"):
            return self.string(t)
        if d == "regex_value":
            return self.regex(t.children[0])
        if d == "int_value":
            return self.int_tok(t.children[0])
        if d == "float_value":
            return A.Float(self.span(t), float(t.children[0].value))
        if d == "true_value":
            return A.Bool(self.span(t), True)
        if d == "false_value":
            return A.Bool(self.span(t), False)
        if d == "list":
            return A.ListV(self.span(t), [self.value(c) for c in t.children])
        if d == "table":
            return self.table(t)
        raise ValueError(f"unknown value node {d}")

    def table(self, t: Tree) -> A.Table:
        pairs = []
        for p in t.children:
            k, v = p.children
            pairs.append(A.Pair(self.span(p), self.word(k), self.value(v)))
        return A.Table(self.span(t), pairs)

    def strings(self, t: Tree | None) -> list[A.Str]:
        return [] if t is None else [self.string(c) for c in t.children]

    def words(self, t: Tree) -> list[A.Name | A.Str]:
        return [self.word(c) for c in t.children]

    # declarations
    def file_author(self, t: Tree) -> A.FileAuthor:
        return A.FileAuthor(self.span(t), self.string(t.children[0]))

    def _decl(self, cls, t: Tree, name, clauses, **kw):
        sp = self.span(t)
        return cls(sp, name, [self.clause(c) for c in clauses], end_line=sp.end_line, **kw)

    def symptom_decl(self, t: Tree) -> A.SymptomDecl:
        return self._decl(A.SymptomDecl, t, self.string(t.children[0]), t.children[1:])

    def prefix_decl(self, t: Tree) -> A.PrefixDecl:
        return self._decl(A.PrefixDecl, t, self.string(t.children[0]), t.children[1:])

    def extractor_decl(self, t: Tree) -> A.ExtractorDecl:
        return self._decl(A.ExtractorDecl, t, self.word(t.children[0]), t.children[1:])

    def family_decl(self, t: Tree) -> A.FamilyDecl:
        return self._decl(A.FamilyDecl, t, self.word(t.children[0]), t.children[1:])

    def catalog_decl(self, t: Tree) -> A.CatalogDecl:
        return self._decl(A.CatalogDecl, t, self.word(t.children[0]), t.children[1:])

    def collector_decl(self, t: Tree) -> A.CollectorDecl:
        return self._decl(A.CollectorDecl, t, self.word(t.children[0]), t.children[1:])

    def metric_rule_decl(self, t: Tree) -> A.MetricRuleDecl:
        return self._decl(A.MetricRuleDecl, t, self.word(t.children[0]), t.children[1:])

    def case_decl(self, t: Tree) -> A.CaseDecl:
        return self._decl(A.CaseDecl, t, self.string(t.children[0]), t.children[1:])

    def priority(self, t: Tree) -> A.Priority:
        stratum, _plus, offset = t.children
        return A.Priority(self.span(t), self.name(stratum), self.int_tok(offset) if offset is not None else None)

    def filter_decl(self, t: Tree) -> A.FilterDecl:
        return self._decl(A.FilterDecl, t, self.word(t.children[0]), t.children[2:],
                          priority=self.priority(t.children[1]))

    def refiner_decl(self, t: Tree) -> A.RefinerDecl:
        return self._decl(A.RefinerDecl, t, self.word(t.children[0]), t.children[2:],
                          priority=self.priority(t.children[1]))

    # clauses
    def clause(self, t: Tree):
        return getattr(self, "c_" + t.data)(t)

    def c_outcome_cl(self, t):
        return A.OutcomeClause(self.span(t), self.word(t.children[0]))

    def c_sub_domain_cl(self, t):
        return A.SubDomainClause(self.span(t), self.word(t.children[0]))

    def c_rank_cl(self, t):
        return A.RankClause(self.span(t), self.int_tok(t.children[0]))

    def c_blame_cl(self, t):
        return A.BlameClause(self.span(t), self.word(t.children[0]))

    def c_action_cl(self, t):
        return A.ActionClause(self.span(t), self.word(t.children[0]))

    def c_docs_cl(self, t):
        return A.DocsClause(self.span(t), self.string(t.children[0]))

    def c_author_cl(self, t):
        return A.AuthorClause(self.span(t), self.string(t.children[0]))

    def c_aliases_cl(self, t):
        return A.AliasesClause(self.span(t), self.strings(t.children[0]))

    def c_source_cl(self, t):
        return A.SourceClause(self.span(t), self.words(t.children[0]))

    def c_format_cl(self, t):
        return A.FormatClause(self.span(t), self.words(t.children[0]))

    def c_requires_cl(self, t):
        return A.RequiresClause(self.span(t), self.words(t.children[0]))

    def c_uses_cl(self, t):
        return A.UsesClause(self.span(t), self.words(t.children[0]))

    def c_match_cl(self, t):
        c = t.children[0]
        if isinstance(c, Tree):  # `match "..."`: a pattern that a /.../ literal cannot spell exactly
            s = self.string(c)
            content = Span(self.path, s.span.line, s.span.col + 1, s.span.end_line, max(s.span.end_col - 1, s.span.col + 1))
            return A.MatchClause(self.span(t), A.Regex(s.span, s.value, content, quoted=True))
        return A.MatchClause(self.span(t), self.regex(c))

    def c_key_cl(self, t):
        first, *more = t.children
        return A.KeyClause(self.span(t), self.name(first), [self.name(n) for n in more])

    def c_emit_cl(self, t):
        typ, sym, *rest = t.children
        node = fields = None
        for r in rest:
            if r.data == "emit_node":
                node = self.string(r.children[0])
            elif r.data == "emit_fields":
                fields = self.table(r.children[0])
        return A.EmitClause(self.span(t), self.name(typ), self.string(sym) if sym is not None else None, node, fields)

    def c_test_cl(self, t):
        line, *rest = t.children
        opts = expect = None
        for r in rest:
            if r.data == "test_with":
                opts = self.table(r.children[0])
            elif r.data == "test_expect":
                e = r.children[0]
                if e.data == "expect_nothing":
                    expect = A.ExpectNothing(self.span(r))
                else:
                    typ, sym, *more = e.children
                    node = caps = None
                    for m in more:
                        if m.data == "expect_node":
                            node = self.string(m.children[0])
                        elif m.data == "expect_captures":
                            caps = self.table(m.children[0])
                    expect = A.ExpectEvent(self.span(e), self.name(typ),
                                           self.string(sym) if sym is not None else None, node, caps)
        return A.TestClause(self.span(t), self.string(line), opts, expect)

    def c_param(self, t):
        return A.Param(self.span(t), self.name(t.children[0]), self.value(t.children[1]))

    def c_member_decl(self, t):
        return A.MemberDecl(self.span(t), self.word(t.children[0]), [self.clause(c) for c in t.children[1:]])

    def c_entry_decl(self, t):
        k = t.children[0]
        key = self.int_tok(k.children[0]) if isinstance(k, Tree) and k.data == "int_key" else self.string(k)
        return A.EntryDecl(self.span(t), key, self.table(t.children[1]))

    def _scope(self, t) -> str | None:
        if t is None:
            return None
        return "same_node" if t.data == "same_node" else "anywhere"

    def _condition(self, t) -> A.Condition:
        kw, pats, *scope = t.children
        return A.Condition(self.span(t), kw.children[0].value == "unless", self.strings(pats),
                           self._scope(scope[0]) if scope else None)

    def c_filter_action(self, t):
        action, etype, pats, *rest = t.children
        nodes: list[A.Str] = []
        cond = None
        for r in rest:
            if r.data == "on_nodes":
                nodes = self.strings(r.children[0])
            elif r.data == "condition":
                cond = self._condition(r)
        return A.FilterAction(self.span(t), action.children[0].value, self.name(etype) if etype is not None else None,
                              self.strings(pats), nodes, cond)

    def c_per_node(self, t):
        kids = list(t.children)
        at_least = None
        if kids and isinstance(kids[0], Tree) and kids[0].data == "at_least":
            at_least = self.int_tok(kids.pop(0).children[0])
        etype, pats, *body = kids
        stmts: list[A.GroupAdd | A.GroupAct] = []
        for b in body:
            if b.data == "group_add":
                typ, sym, *f = b.children
                stmts.append(A.GroupAdd(self.span(b), self.name(typ), self.string(sym) if sym is not None else None,
                                        self.table(f[0].children[0]) if f else None))
            else:
                stmts.append(A.GroupAct(self.span(b), b.children[0].children[0].value))
        return A.PerNode(self.span(t), at_least, self.name(etype) if etype is not None else None, self.strings(pats), stmts)

    def c_refine_when(self, t):
        kids = list(t.children)
        kw, quant, pats = kids[0], kids[1], kids[2]
        rest = kids[3:]
        scope = None
        if rest and rest[0].data in ("same_node", "anywhere"):
            scope = self._scope(rest.pop(0))
        action, targets = rest
        return A.RefineWhen(self.span(t), kw.children[0].value == "unless",
                            quant.children[0].value if quant is not None else None, self.strings(pats), scope,
                            action.children[0].value, self.strings(targets))

    def c_refine_always(self, t):
        action, targets = t.children
        return A.RefineAlways(self.span(t), action.children[0].value, self.strings(targets))

    def c_prefer_cl(self, t):
        return A.Prefer(self.span(t), [self.string(c) for c in t.children])

    def c_outcome_when(self, t):
        kw, outcomes, also, new_outcome, sub = t.children
        quant = None
        pats: list[A.Str] = []
        if also is not None:
            q, pl = also.children
            quant = q.children[0].value if q is not None else None
            pats = self.strings(pl)
        return A.OutcomeWhen(self.span(t), kw.children[0].value == "unless", self.words(outcomes), quant, pats,
                             self.word(new_outcome), self.word(sub.children[0]) if sub is not None else None)

    def c_gather_cl(self, t):
        names, etype, pats, uniq = t.children
        return A.GatherClause(self.span(t), self.words(names), self.name(etype) if etype is not None else None,
                              self.strings(pats), uniq is not None)

    def c_metric_cl(self, t):
        name, labels = t.children
        return A.MetricClause(self.span(t), self.string(name), self.table(labels.children[0]) if labels is not None else None)

    def _duration(self, t) -> A.Name:
        tok = t.children[0]
        return A.Name(self.tspan(tok), tok.value)

    def c_metric_when_cl(self, t):
        agg, op, num, *rest = t.children
        for_ = window = None
        for r in rest:
            if r is None:
                continue
            if r.data == "metric_for":
                for_ = self._duration(r.children[0])
            elif r.data == "metric_window":
                window = self._duration(r.children[0])
        return A.MetricWhenClause(self.span(t), self.name(agg), self.name(op), self.value(num), for_, window)

    def c_series_test_cl(self, t):
        samples, *rest = t.children
        opts = expect = None
        for r in rest:
            if r is None:
                continue
            if r.data == "test_with":
                opts = self.table(r.children[0])
            elif r.data == "test_expect":
                expect = self._expectation(r)
        return A.SeriesTestClause(self.span(t), self.value(samples), opts, expect)

    def _expectation(self, r):
        e = r.children[0]
        if e.data == "expect_nothing":
            return A.ExpectNothing(self.span(r))
        typ, sym, *more = e.children
        node = caps = None
        for m in more:
            if m.data == "expect_node":
                node = self.string(m.children[0])
            elif m.data == "expect_captures":
                caps = self.table(m.children[0])
        return A.ExpectEvent(self.span(e), self.name(typ), self.string(sym) if sym is not None else None, node, caps)

    def c_series_cl(self, t):
        name, node, labels, samples = t.children
        return A.SeriesClause(self.span(t), self.string(name), self.string(node.children[0]),
                              self.table(labels.children[0]) if labels is not None else None, self.value(samples))

    def c_job_cl(self, t):
        return A.JobClause(self.span(t), self.table(t.children[0]))

    def c_expect_cl(self, t):
        return A.ExpectClause(self.span(t), self.table(t.children[0]))

    def c_observe_cl(self, t):
        src, *rest = t.children
        node = fmt = None
        lines = []
        for r in rest:
            if r.data == "observe_node":
                node = self.string(r.children[0])
            elif r.data == "observe_format":
                fmt = self.word(r.children[0])
            else:
                lines.append(self.string(r))
        return A.ObserveClause(self.span(t), self.word(src), node, fmt, lines)


# ---- completion support ---------------------------------------------------------------

def expected_at(text: str, line: int, col: int) -> list[str]:
    """What may be written at (line, col) (1-based), in words (`\\`match\\``, `a string`):
    for editor completion.  The word being typed at the position is ignored.  Empty
    when the text before the position does not parse."""
    lines = text.split("\n")
    if not 1 <= line <= len(lines):
        return []
    offset = sum(len(x) + 1 for x in lines[: line - 1]) + min(max(col - 1, 0), len(lines[line - 1]))
    prefix = re.sub(r"[A-Za-z_][\w.\-]*$", "", text[:offset])
    starts = [0] + [m.start() for m in _TOP_LINE.finditer(prefix)] + [m.start() for m in _HEADER_LIKE.finditer(prefix)]
    piece = prefix[max(starts):]
    ip = lark_parser().parse_interactive(piece)
    try:
        ip.exhaust_lexer()
    except UnexpectedInput:
        return []
    return expected_words(ip.accepts())
