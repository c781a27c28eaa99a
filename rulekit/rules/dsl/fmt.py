"""Formatting of rule files: `.rule` DSL (canonical layout, comments kept) and
TOML rule files (through tomlkit, comments kept).

`format_dsl` prints the AST back in one canonical layout: one clause a line, two
spaces of indent, one blank line between declarations; every comment is kept,
own-line comments before the node they preceded and trailing comments at the
end of their node's line.  A file with syntax errors is returned unchanged.
`render_module` is also used by `convert` to print a generated AST.  Pure text
functions, no I/O.
"""
from __future__ import annotations

import re

from rulekit.diagnostics import split_lines
import tomllib

from rulekit.rules.dsl import ast as A
from rulekit.rules.dsl.parser import decode_regex, parse_ast

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*(\[[^\]\s\"]*\])?")
KEYWORDS = frozenset("""
author symptom prefix extractor family catalog filter refiner collector case outcome sub_domain rank docs aliases blame action
source format requires uses python match key emit node fields test with nothing captures member entry demote
discard promote on when unless same anywhere for each at least add them any all prefer over and set gather from
unique job
observe expect true false metric_rule metric labels window series
""".split())
INDENT = "  "


# ---- atoms ------------------------------------------------------------------------

def q(s: str) -> str:
    """A DSL string literal for `s`."""
    out = ['"']
    for c in s:
        if c == "\\":
            out.append("\\\\")
        elif c == '"':
            out.append('\\"')
        elif c == "\n":
            out.append("\\n")
        elif c == "\t":
            out.append("\\t")
        elif c == "\r":
            out.append("\\r")
        elif ord(c) < 32 or ord(c) == 127:
            out.append(f"\\u{ord(c):04x}")
        else:
            out.append(c)
    out.append('"')
    return "".join(out)


def regex_literal(pattern: str) -> str | None:
    """`/pattern/` when a regex literal spells `pattern` exactly, else None."""
    if not pattern or "\n" in pattern:
        return None
    out = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            out.append(pattern[i : i + 2])
            i += 2
            continue
        out.append("\\/" if c == "/" else c)
        i += 1
    lit = "/" + "".join(out) + "/"
    if lit.endswith("\\/") or decode_regex(lit) != pattern:
        return None
    return lit


def pattern_text(r: A.Regex) -> str:
    lit = None if r.quoted else regex_literal(r.value)
    return lit if lit is not None else q(r.value)


def word(w: A.Name | A.Str | str) -> str:
    """A name or word: bare when it is a valid name.  Words only follow a keyword or
    a comma, where the parser accepts nothing but a name or a string, so even a
    keyword (`node`) is read as a name there."""
    v = w if isinstance(w, str) else w.value
    return v if _NAME.fullmatch(v) else q(v)


# after a value the LALR state also accepts these keywords, so such a key is quoted
_VALUE_FOLLOWERS = frozenset({"test", "true", "false"})


def key_text(k: str) -> str:
    return k if _NAME.fullmatch(k) and k not in _VALUE_FOLLOWERS else q(k)


def value(v: A.Value) -> str:
    if isinstance(v, A.Str):
        return q(v.value)
    if isinstance(v, A.Regex):
        return pattern_text(v)
    if isinstance(v, A.Bool):
        return "true" if v.value else "false"
    if isinstance(v, (A.Int, A.Float)):
        return repr(v.value)
    if isinstance(v, A.ListV):
        return "[" + ", ".join(value(x) for x in v.items) + "]"
    if isinstance(v, A.Table):
        return table(v)
    raise TypeError(type(v))


def table(t: A.Table) -> str:
    if not t.pairs:
        return "{}"
    return "{ " + ", ".join(f"{key_text(p.key.value)} = {value(p.value)}" for p in t.pairs) + " }"


def strs(xs: list[A.Str]) -> str:
    return ", ".join(q(x.value) for x in xs)


def words(xs: list) -> str:
    return ", ".join(word(x) for x in xs)


# ---- clauses ----------------------------------------------------------------------

def clause_text(c) -> str:
    if isinstance(c, A.AuthorClause):
        return f"author {q(c.value.value)}"
    if isinstance(c, A.DocsClause):
        return f"docs {q(c.value.value)}"
    if isinstance(c, A.OutcomeClause):
        return f"outcome {word(c.value)}"
    if isinstance(c, A.SubDomainClause):
        return f"sub_domain {word(c.value)}"
    if isinstance(c, A.RankClause):
        return f"rank {c.value.value}"
    if isinstance(c, A.BlameClause):
        return f"blame {word(c.value)}"
    if isinstance(c, A.ActionClause):
        return f"action {word(c.value)}"
    if isinstance(c, A.AliasesClause):
        return f"aliases {strs(c.values)}"
    if isinstance(c, A.SourceClause):
        return f"source {words(c.values)}"
    if isinstance(c, A.FormatClause):
        return f"format {words(c.values)}"
    if isinstance(c, A.RequiresClause):
        return f"requires {words(c.names)}"
    if isinstance(c, A.UsesClause):
        return f"uses python {words(c.names)}"
    if isinstance(c, A.MatchClause):
        return f"match {pattern_text(c.pattern)}"
    if isinstance(c, A.KeyClause):
        return "key " + ", ".join(c.names)
    if isinstance(c, A.EmitClause):
        s = f"emit {c.type.value}"
        if c.symptom:
            s += f" {q(c.symptom.value)}"
        if c.node:
            s += f" node {q(c.node.value)}"
        if c.fields is not None:
            s += f" fields {table(c.fields)}"
        return s
    if isinstance(c, A.TestClause):
        s = f"test {q(c.line.value)}"
        if c.options is not None:
            s += f" with {table(c.options)}"
        if isinstance(c.expect, A.ExpectNothing):
            s += " => nothing"
        elif isinstance(c.expect, A.ExpectEvent):
            e = c.expect
            s += f" => {e.type.value}"
            if e.symptom:
                s += f" {q(e.symptom.value)}"
            if e.node:
                s += f" node {q(e.node.value)}"
            if e.captures is not None:
                s += f" captures {table(e.captures)}"
        return s
    if isinstance(c, A.Param):
        return f"{c.name.value} = {value(c.value)}"
    if isinstance(c, A.EntryDecl):
        k = str(c.key.value) if isinstance(c.key, A.Int) else q(c.key.value)
        return f"entry {k} {table(c.table)}"
    if isinstance(c, A.FilterAction):
        s = c.action
        if c.event_type:
            s += f" {c.event_type.value}"
        if c.patterns:
            s += f" {strs(c.patterns)}"
        if c.nodes:
            s += f" on node {strs(c.nodes)}"
        if c.condition:
            s += " " + condition_text(c.condition)
        return s
    if isinstance(c, A.GroupAdd):
        s = f"add {c.type.value}"
        if c.symptom:
            s += f" {q(c.symptom.value)}"
        if c.fields is not None:
            s += f" fields {table(c.fields)}"
        return s
    if isinstance(c, A.GroupAct):
        return f"{c.action} them"
    if isinstance(c, A.RefineWhen):
        s = "unless" if c.negate else "when"
        if c.quant:
            s += f" {c.quant}"
        s += f" {strs(c.patterns)}"
        if c.scope:
            s += " " + scope_text(c.scope)
        return s + f" {c.action} {strs(c.targets)}"
    if isinstance(c, A.RefineAlways):
        return f"{c.action} {strs(c.targets)}"
    if isinstance(c, A.OutcomeWhen):
        s = ("unless" if c.negate else "when") + f" outcome {words(c.outcomes)}"
        if c.patterns:
            s += " and" + (f" {c.quant}" if c.quant else "") + f" {strs(c.patterns)}"
        s += f" set outcome {word(c.set_outcome)}"
        if c.set_sub_domain is not None:
            s += f" sub_domain {word(c.set_sub_domain)}"
        return s
    if isinstance(c, A.Prefer):
        return "prefer " + " over ".join(q(x.value) for x in c.order)
    if isinstance(c, A.GatherClause):
        s = f"gather {words(c.fields)} from"
        if c.event_type:
            s += f" {c.event_type.value}"
        if c.patterns:
            s += f" {strs(c.patterns)}"
        if c.unique:
            s += " unique"
        return s
    if isinstance(c, A.MetricClause):
        return f"metric {q(c.name.value)}" + (f" labels {table(c.labels)}" if c.labels is not None else "")
    if isinstance(c, A.MetricWhenClause):
        s = f"when {c.aggregate.value} {c.op.value} {value(c.threshold)}"
        if c.for_ is not None:
            s += f" for {c.for_.value}"
        if c.window is not None:
            s += f" window {c.window.value}"
        return s
    if isinstance(c, A.SeriesTestClause):
        s = f"test series {value(c.samples)}"
        if c.options is not None:
            s += f" with {table(c.options)}"
        return s + expect_text(c.expect)
    if isinstance(c, A.SeriesClause):
        s = f"series {q(c.name.value)} on {q(c.node.value)}"
        if c.labels is not None:
            s += f" labels {table(c.labels)}"
        return s + f" {value(c.samples)}"
    if isinstance(c, A.JobClause):
        return f"job {table(c.table)}"
    if isinstance(c, A.ExpectClause):
        return f"expect {table(c.table)}"
    raise TypeError(f"no layout for {type(c).__name__}")


def expect_text(e) -> str:
    if isinstance(e, A.ExpectNothing):
        return " => nothing"
    if isinstance(e, A.ExpectEvent):
        s = f" => {e.type.value}"
        if e.symptom:
            s += f" {q(e.symptom.value)}"
        if e.node:
            s += f" node {q(e.node.value)}"
        if e.captures is not None:
            s += f" captures {table(e.captures)}"
        return s
    return ""


def scope_text(scope: str) -> str:
    return "on same node" if scope == "same_node" else "anywhere"


def condition_text(c: A.Condition) -> str:
    s = ("unless " if c.negate else "when ") + strs(c.patterns)
    return s + (" " + scope_text(c.scope) if c.scope else "")


def header_text(d) -> str:
    if isinstance(d, (A.SymptomDecl, A.PrefixDecl, A.CaseDecl)):
        head = f"{d.kind} {q(d.name.value)}"
    else:
        head = f"{d.kind} {word(d.name)}"
    if isinstance(d, (A.FilterDecl, A.RefinerDecl)) and d.priority is not None:
        head += f" {d.priority.stratum.value}"
        if d.priority.offset is not None:
            head += f" + {d.priority.offset.value}"
    return head + " {"


# ---- printer ----------------------------------------------------------------------

class _Printer:
    def __init__(self, comments: list[A.Comment]):
        self.pending = sorted(comments, key=lambda c: (c.span.line, c.span.col))
        self.out: list[str] = []

    def _own_line_before(self, line: int, depth: int) -> None:
        while self.pending and self.pending[0].span.line < line:
            c = self.pending.pop(0)
            self.out.append(INDENT * depth + c.text)
            nxt = self.pending[0].span.line if self.pending and self.pending[0].span.line < line else line
            if nxt > c.span.line + 1:  # the comment stood apart from what follows: keep one blank line
                self.out.append("")

    def _trailing(self, first: int, last: int) -> str:
        got = []
        while self.pending and first <= self.pending[0].span.line <= last:
            got.append(self.pending.pop(0).text)
        return ("  " + " ".join(got)) if got else ""

    def line(self, depth: int, text: str, node: A.Node | None) -> None:
        if node is None:
            self.out.append(INDENT * depth + text)
            return
        self._own_line_before(node.span.line, depth)
        self.out.append(INDENT * depth + text + self._trailing(node.span.line, node.span.end_line))

    def block(self, depth: int, header: str, node: A.Node | None, children: list, end_line: int | None) -> None:
        if node is not None:
            self._own_line_before(node.span.line, depth)
            self.out.append(INDENT * depth + header + self._trailing(node.span.line, node.span.line))
        else:
            self.out.append(INDENT * depth + header)
        for c in children:
            self.clause(depth + 1, c)
        if node is not None and end_line:
            self._own_line_before(end_line, depth + 1)
            self.out.append(INDENT * depth + "}" + self._trailing(end_line, end_line))
        else:
            self.out.append(INDENT * depth + "}")

    def clause(self, depth: int, c) -> None:
        real = c if c.span.line > 0 else None
        if isinstance(c, A.MemberDecl):
            self.block(depth, f"member {word(c.name)} {{", real, c.clauses, c.span.end_line if real else None)
        elif isinstance(c, A.PerNode):
            head = "for each node with"
            if c.at_least:
                head += f" at least {c.at_least.value}"
            if c.event_type:
                head += f" {c.event_type.value}"
            head += f" {strs(c.patterns)} {{"
            self.block(depth, head, real, c.body, c.span.end_line if real else None)
        elif isinstance(c, A.ObserveClause):
            head = f"observe {word(c.source)}"
            if c.node:
                head += f" on {q(c.node.value)}"
            if c.format:
                head += f" format {word(c.format)}"
            self.block(depth, head + " {", real, [_Line(s.span, q(s.value)) for s in c.lines],
                       c.span.end_line if real else None)
        elif isinstance(c, _Line):
            self.line(depth, c.text, c if c.span.line > 0 else None)
        else:
            self.line(depth, clause_text(c), real)

    def module(self, m: A.Module) -> str:
        for i, item in enumerate(m.items):
            real = item if item.span.line > 0 else None
            if i:
                self.out.append("")
            if isinstance(item, A.FileAuthor):
                self.line(0, f"author {q(item.value.value)}", real)
            else:
                self.block(0, header_text(item), real, item.clauses, item.end_line if real else None)
        if self.pending:
            if self.out:
                self.out.append("")
            self._own_line_before(10 ** 9, 0)
        text = "\n".join(self.out).rstrip("\n")
        return text + "\n" if text else ""


class _Line(A.Node):
    def __init__(self, span, text: str):
        self.span = span
        self.text = text


def render_module(m: A.Module) -> str:
    """The canonical text of a module (comments from `m.comments`)."""
    return _Printer(m.comments).module(m)


def format_dsl(text: str, path: str = "<dsl>") -> str:
    """`text` in the canonical layout; returned unchanged if it has syntax errors."""
    module, diags = parse_ast(text, path)
    if diags:
        return text
    out = render_module(module)
    return out.replace("\n", "\r\n") if "\r\n" in text else out  # keep the file's line endings


# ---- TOML -------------------------------------------------------------------------

_HEADER = re.compile(r"^\[\[?\s*[A-Za-z0-9_.\-\"]+\s*\]\]?\s*(#.*)?$")


_TABLE_HEADER = re.compile(r"^\s*(\[\[?)\s*([A-Za-z0-9_.\-\" ]+?)\s*(\]\]?)\s*(#.*)?$")
_KEY_VALUE = re.compile(r"^\s*([A-Za-z0-9_\-]+|\"[^\"\\]*\"|'[^']*')\s*=\s*(\S.*)$")


def _normalize_line(ln: str) -> str:
    """`  [[ extractor.test ]]` -> `[[extractor.test]]`; `  name="X"` -> `name = "X"`."""
    m = _TABLE_HEADER.match(ln)
    if m and (m.group(1) == "[" or m.group(3) == "]]") and len(m.group(1)) == len(m.group(3)):
        name = ".".join(part.strip() for part in m.group(2).split("."))
        return f"{m.group(1)}{name}{m.group(3)}" + (f"  {m.group(4)}" if m.group(4) else "")
    m = _KEY_VALUE.match(ln)
    if m:
        return f"{m.group(1)} = {m.group(2)}"
    return ln


def _bracket_balance(ln: str) -> int:
    """`[` minus `]` outside strings and comments (a multi-line array opens or closes)."""
    n, q, i = 0, None, 0
    while i < len(ln):
        ch = ln[i]
        if q:
            if ch == "\\" and q == '"':
                i += 2
                continue
            if ch == q:
                q = None
        elif ch in "\"'":
            q = ch
        elif ch == "#":
            break
        elif ch == "[":
            n += 1
        elif ch == "]":
            n -= 1
        i += 1
    return n


def format_toml(text: str) -> str:
    """Normalize a TOML rule file's layout, keeping comments: table headers and keys
    at the start of the line, `key = value` with one space each side, no trailing
    spaces, one blank line before each top-level table header (and its leading comments), at
    most one blank line in a row, one final newline.  The text is checked with
    tomlkit (and tomllib); the result must hold the same data, else (or when the
    text is not TOML) the text comes back as is.  Lines are edited on the original
    text, not on tomlkit's re-serialization, which may move comments between
    arrays of tables."""
    import tomlkit

    try:
        before = tomllib.loads(text)
        tomlkit.parse(text)
    except Exception:  # noqa: BLE001 - not TOML: leave it to `rulekit check`
        return text
    out: list[str] = []
    in_multiline = False
    depth = 0  # open `[` of a multi-line array value
    lines = split_lines(text)
    if lines and lines[-1] == "":
        lines.pop()
    for raw in lines:
        was_multiline = in_multiline
        ln = raw if in_multiline else raw.rstrip()
        for q3 in ('"""', "'''"):
            if raw.count(q3) % 2 == 1:
                in_multiline = not in_multiline
        if not was_multiline and depth == 0:
            ln = _normalize_line(ln)
        if not was_multiline and not _HEADER.match(ln):
            depth = max(0, depth + _bracket_balance(ln))
        if not in_multiline and _HEADER.match(ln) and "." not in ln.split("]")[0]:
            j = len(out)
            while j > 0 and out[j - 1].lstrip().startswith("#"):
                j -= 1
            if j > 0 and out[j - 1] != "":
                out.insert(j, "")
        if ln == "" and (not out or out[-1] == "") and not in_multiline:
            continue
        out.append(ln)
    while out and out[-1] == "":
        out.pop()
    result = "\n".join(out) + "\n" if out else ""
    try:
        if tomllib.loads(result) != before:
            return text
    except tomllib.TOMLDecodeError:
        return text
    return result
