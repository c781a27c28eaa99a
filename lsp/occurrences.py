"""Static name occurrences in one rule file: where each symptom or rule name is
defined or referenced, with the exact span of the name text (quotes excluded).

Works on TOML rule files, `.rule` DSL files, `*.test.toml` job tests and Python
plugin files.  Python files are parsed with `ast` and never executed.  Tolerant
of broken text: a file that does not parse yields what could be found (TOML is
scanned line by line; a Python file with a syntax error yields nothing).
Pure functions of (text, path); no I/O, no LSP types, no cross-file knowledge
(the workspace classifies plain strings against the corpus's names).
"""
from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass

from rulekit.diagnostics import Span

# roles
DEF = "def"  # the defining occurrence (symptom name, rule name)
ALIAS = "alias"  # a symptom alias (defines a second name for a symptom)
REF = "ref"  # a reference whose kind is known from its key (emit symptom, requires)
STR = "str"  # any other string: a reference if it equals a known name

SYMPTOM = "symptom"
RULE = "rule"

RULE_SECTIONS = ("extractor", "family", "catalog", "accumulator", "filter", "refiner", "collector")
SYMPTOM_KEYS = ("symptom", "symptoms", "root_cause", "absent_symptoms", "patterns", "targets", "order")
RULE_KEYS = ("requires", "uses")
NOT_NAME_KEYS = ("type", "expect", "outcome", "sub_domain", "source", "format", "author", "match_re", "line", "docs")


@dataclass(frozen=True, slots=True)
class Occurrence:
    name: str
    span: Span  # the name's text, without quotes
    role: str  # DEF / ALIAS / REF / STR
    kind: str | None  # SYMPTOM / RULE / None (decided by the workspace for STR)
    key: str = ""  # the key or clause the string belongs to
    section: str = ""  # TOML table / DSL declaration kind / Python call
    edit_prefix: str = ""  # text of the full name before the span ("Family." for members)


_NAME_LIKE = re.compile(r"^[^\s]{1,200}$")


def could_be_name(value: str) -> bool:
    """Plain strings are kept only if they could be a symptom or rule name (no spaces):
    docs and test lines would otherwise dominate the index's memory."""
    return bool(_NAME_LIKE.match(value))


def occurrences(text: str, path: str) -> list[Occurrence]:
    if path.endswith(".rule"):
        return dsl_occurrences(text, path)
    if path.endswith(".py"):
        return python_occurrences(text, path)
    if path.endswith(".toml"):
        return toml_occurrences(text, path)
    return []


# ---- TOML ------------------------------------------------------------------------------

_TOML_TOKEN = re.compile(
    r'(?P<ml>"""|\'\'\')'
    r'|(?P<bstr>"(?:[^"\\\n]|\\.)*")'
    r"|(?P<lstr>'[^'\n]*')"
    r"|(?P<comment>#.*)"
    r"|(?P<header>^\s*\[\[?\s*[A-Za-z0-9_.\-\" ]+\s*\]\]?)"
    r"|(?P<key>[A-Za-z0-9_\-]+(?:\s*\.\s*[A-Za-z0-9_\-]+)*\s*=)"
    r"|(?P<open>\{)|(?P<close>\})"
)


def toml_occurrences(text: str, path: str) -> list[Occurrence]:
    out: list[Occurrence] = []
    section = ""
    family = ""
    in_ml: str | None = None
    key_stack: list[str] = []
    key = ""
    for lineno, line in enumerate(text.split("\n"), start=1):
        pos = 0
        if in_ml is not None:
            end = line.find(in_ml)
            if end < 0:
                continue
            pos = end + 3
            in_ml = None
        for m in _TOML_TOKEN.finditer(line, pos):
            kind = m.lastgroup
            if in_ml is not None:
                if kind == "ml" and m.group() == in_ml:
                    in_ml = None
                continue
            if kind == "ml":
                in_ml = m.group()
                continue
            if kind == "comment":
                break
            if kind == "header":
                if line[: m.start()].strip():
                    continue
                section = m.group().strip().strip("[]").strip().replace('"', "")
                key, key_stack = "", []
                continue
            if kind == "key":
                key = re.split(r"\s*\.\s*", m.group()[:-1].strip())[-1]
                continue
            if kind == "open":
                key_stack.append(key)
                continue
            if kind == "close":
                key = key_stack.pop() if key_stack else ""
                continue
            raw = m.group()
            value = _toml_string(raw)
            span = Span(path, lineno, m.start() + 2, lineno, m.end())
            nested = bool(key_stack)
            if key == "name" and not nested and section == "symptom":
                out.append(Occurrence(value, span, DEF, SYMPTOM, key, section))
            elif key == "aliases" and section == "symptom":
                out.append(Occurrence(value, span, ALIAS, SYMPTOM, key, section))
            elif key == "name" and not nested and section in RULE_SECTIONS:
                out.append(Occurrence(value, span, DEF, RULE, key, section))
                if section == "family":
                    family = value
            elif key == "name" and not nested and section == "family.member" and family:
                out.append(Occurrence(f"{family}.{value}", span, DEF, RULE, key, section, edit_prefix=family + "."))
            elif key in SYMPTOM_KEYS and "{" not in value and "$" not in value:
                out.append(Occurrence(value, span, REF, SYMPTOM, key, section))
            elif key in RULE_KEYS:
                out.append(Occurrence(value, span, REF, RULE, key, section))
            elif could_be_name(value) and key not in NOT_NAME_KEYS:
                out.append(Occurrence(value, span, STR, None, key, section))
    return out


def _toml_string(raw: str) -> str:
    if raw.startswith("'"):
        return raw[1:-1]
    try:
        return json.loads(raw)
    except ValueError:
        return raw[1:-1]


# ---- DSL ---------------------------------------------------------------------------------

def dsl_occurrences(text: str, path: str, module=None) -> list[Occurrence]:
    from rulekit.rules.dsl import ast as A
    from rulekit.rules.dsl import parse_ast

    if module is None:
        module, _ = parse_ast(text, path)
    lines = text.split("\n")
    out: list[Occurrence] = []

    def inner(node) -> Span:
        s = node.span
        if s.line == s.end_line and 0 < s.line <= len(lines):
            seg = lines[s.line - 1][s.col - 1 : s.end_col - 1]
            if len(seg) >= 2 and seg[0] == '"' and seg[-1] == '"':
                return Span(s.file, s.line, s.col + 1, s.line, s.end_col - 1)
        return s

    def add(node, role, kind, key, section, name=None, prefix=""):
        if isinstance(node, (A.Str, A.Name)) and isinstance(node.value, str):
            out.append(Occurrence(name or node.value, inner(node), role, kind, key, section, prefix))

    def walk(node, key: str, section: str) -> None:
        if isinstance(node, (A.Str, A.Name)):
            if isinstance(node.value, str) and could_be_name(node.value):
                add(node, STR, None, key, section)
            return
        if isinstance(node, list):
            for x in node:
                walk(x, key, section)
            return
        if not hasattr(node, "__dataclass_fields__"):
            return
        if isinstance(node, A.Pair):
            walk(node.value, str(node.key.value), section)
            return
        cls = type(node).__name__
        for fname in node.__dataclass_fields__:
            if fname == "span":
                continue
            walk(getattr(node, fname), cls + "." + fname, section)

    symptom_fields = {"EmitClause.symptom", "ExpectEvent.symptom", "GroupAdd.symptom", "FilterAction.patterns",
                      "Condition.patterns", "RefineWhen.patterns", "RefineWhen.targets", "RefineAlways.targets",
                      "Prefer.order", "GatherClause.patterns", "PerNode.patterns"}
    rule_fields = {"RequiresClause.names", "UsesClause.names"}

    for item in module.items:
        if not isinstance(item, A.Decl):
            continue
        kind = item.kind
        if kind == "symptom":
            add(item.name, DEF, SYMPTOM, "name", kind)
        elif kind in RULE_SECTIONS:
            add(item.name, DEF, RULE, "name", kind)
        for c in item.clauses:
            if isinstance(c, A.AliasesClause) and kind == "symptom":
                for v in c.values:
                    add(v, ALIAS, SYMPTOM, "aliases", kind)
            elif isinstance(c, A.MemberDecl) and kind == "family":
                fam = str(item.name.value)
                add(c.name, DEF, RULE, "member", kind, name=f"{fam}.{c.name.value}", prefix=fam + ".")
                walk(c.clauses, "member", kind)
            else:
                walk(c, "", kind)
    # reclassify the plain strings found by the walk
    result = []
    for o in out:
        if o.role == STR:
            if o.key in symptom_fields and "{" not in o.name and "*" not in o.name:
                o = Occurrence(o.name, o.span, REF, SYMPTOM, o.key, o.section)
            elif o.key in rule_fields:
                o = Occurrence(o.name, o.span, REF, RULE, o.key, o.section)
            elif o.key in ("root_cause", "symptoms", "absent_symptoms"):
                o = Occurrence(o.name, o.span, REF, SYMPTOM, o.key, o.section)
        result.append(o)
    return result


# ---- Python ------------------------------------------------------------------------------

RULE_DECORATORS = {"filter_def": "filter", "refiner_def": "refiner", "collector_def": "collector",
                   "accumulator_def": "accumulator"}


def python_occurrences(text: str, path: str, tree: ast.AST | None = None) -> list[Occurrence]:
    if tree is None:
        try:
            tree = ast.parse(text, path)
        except (SyntaxError, ValueError):
            return []
    lines = text.split("\n")
    out: list[Occurrence] = []
    special: dict[int, tuple[str, str | None, str, str]] = {}  # id(Constant) -> (role, kind, key, section)

    def mark(node, role, kind, key, section):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            special[id(node)] = (role, kind, key, section)
        elif isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            for e in node.elts:
                mark(e, role, kind, key, section)

    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        fn = call_name(node)
        if fn in RULE_DECORATORS:
            for kw in node.keywords:
                if kw.arg == "name":
                    mark(kw.value, DEF, RULE, "name", RULE_DECORATORS[fn])
                elif kw.arg == "requires":
                    mark(kw.value, REF, RULE, "requires", fn)
                elif kw.arg == "symptoms":
                    mark(kw.value, REF, SYMPTOM, "symptoms", fn)
        elif fn == "register_symptom":
            if node.args:
                mark(node.args[0], DEF, SYMPTOM, "name", fn)
            for kw in node.keywords:
                if kw.arg == "name":
                    mark(kw.value, DEF, SYMPTOM, "name", fn)
                elif kw.arg == "aliases":
                    mark(kw.value, ALIAS, SYMPTOM, "aliases", fn)
        elif fn == "EventSpec":
            for kw in node.keywords:
                if kw.arg == "symptom":
                    mark(kw.value, REF, SYMPTOM, "symptom", fn)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.lineno == node.end_lineno:
            span = _py_inner_span(node, lines, path)
            if span is None:
                continue
            role, kind, key, section = special.get(id(node), (STR, None, "", ""))
            if role == STR and not could_be_name(node.value):
                continue
            out.append(Occurrence(node.value, span, role, kind, key, section))
    out.sort(key=lambda o: (o.span.line, o.span.col))
    return out


def call_name(node: ast.Call) -> str:
    f = node.func
    if isinstance(f, ast.Name):
        return f.id
    if isinstance(f, ast.Attribute):
        return f.attr
    return ""


def _py_inner_span(node: ast.Constant, lines: list[str], path: str) -> Span | None:
    """The span of a one-line string constant's text (quotes excluded), in code points."""
    if not (0 < node.lineno <= len(lines)) or node.end_col_offset is None:
        return None
    line = lines[node.lineno - 1]
    b = line.encode("utf-8", "surrogatepass")
    start = len(b[: node.col_offset].decode("utf-8", "ignore"))
    end = len(b[: node.end_col_offset].decode("utf-8", "ignore"))
    seg = line[start:end]
    m = re.match(r"[rRbBuU]{0,2}('|\")", seg)
    if not m or seg[m.end() : len(seg) - 1] != node.value:
        return None  # escapes, implicit concatenation, f-strings: no exact span
    return Span(path, node.lineno, start + m.end() + 1, node.lineno, end)
