"""Document symbols (the outline of a rule file) and workspace symbols (every
symptom and rule of every corpus, filtered by a query).  Pure: no LSP types.
"""
from __future__ import annotations

import ast

from rulekit.diagnostics import Span
from rulekit_lsp.features import SymbolEntry
from rulekit_lsp.occurrences import ALIAS, DEF, RULE, SYMPTOM
from rulekit_lsp.workspace import Corpus


def document_symbols(corpus: Corpus, path: str) -> list[SymbolEntry]:
    st = corpus.files.get(path)
    if st is None:
        return []
    a = corpus.analyze()
    out: list[SymbolEntry] = []
    if st.kind == "rule" and st.module is not None:
        for item in getattr(st.module, "items", []):
            name = getattr(item, "name", None)
            if name is None:
                continue
            kind = getattr(item, "kind", "")
            sel = name.span
            entry = SymbolEntry(str(name.value), "symptom" if kind == "symptom" else "case" if kind == "case"
                                else "prefix" if kind == "prefix" else "rule", _block(item), sel, kind)
            for c in getattr(item, "clauses", []):
                cname = type(c).__name__
                if cname == "TestClause":
                    entry.children.append(SymbolEntry(f"test: {c.line.value[:60]}", "test", c.span, c.line.span))
                elif cname == "MemberDecl":
                    entry.children.append(SymbolEntry(f"{name.value}.{c.name.value}", "rule", c.span, c.name.span,
                                                      "member"))
            out.append(entry)
        return out
    if st.kind == "py":
        return _python_symbols(st)
    # TOML: one symbol per defining occurrence, its range the model's span of the rule/symptom
    rules = {r.name: r for r in st.ruleset.rules}
    for o in st.occ:
        if o.role != DEF:
            continue
        if o.kind == SYMPTOM:
            out.append(SymbolEntry(o.name, "symptom", o.span, o.span, "symptom"))
        elif o.kind == RULE:
            r = rules.get(o.name)
            entry = SymbolEntry(o.name, "rule", o.span, o.span, o.section)
            if r is not None:
                for i, t in enumerate(getattr(r, "tests", ())):
                    if t.span is not None and t.span.file == path:
                        entry.children.append(SymbolEntry(f"test #{i + 1}: {t.line[:60]}", "test", t.span, t.span))
            out.append(entry)
    for c in st.ruleset.job_tests:
        if c.span is not None:
            out.append(SymbolEntry(c.name or "case", "case", c.span, c.span, "job test"))
    _ = a
    return out


def _block(item) -> Span:
    s = item.span
    end = getattr(item, "end_line", 0) or s.end_line
    return Span(s.file, s.line, s.col, max(end, s.line), 2 if end > s.line else s.end_col)


def _python_symbols(st) -> list[SymbolEntry]:
    out = []
    defs = {(o.span.line, o.name): o for o in st.occ if o.role in (DEF, ALIAS)}
    tree = st.py_tree
    if tree is None:
        return out
    for o in st.occ:
        if o.role == DEF and o.kind == SYMPTOM:
            out.append(SymbolEntry(o.name, "symptom", o.span, o.span, "register_symptom"))
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.decorator_list:
            names = [o for (ln, _), o in defs.items() if o.kind == RULE and any(
                d.lineno <= ln <= (d.end_lineno or d.lineno) for d in node.decorator_list)]
            if not names:
                continue
            o = names[0]
            span = Span(st.path, node.decorator_list[0].lineno, 1, node.end_lineno or node.lineno, 1)
            out.append(SymbolEntry(o.name, "rule", span, o.span, o.section))
    out.sort(key=lambda s: (s.selection.line, s.selection.col))
    return out


def workspace_symbols(corpora: list[Corpus], query: str) -> list[SymbolEntry]:
    q = query.lower()
    out: list[SymbolEntry] = []
    for c in corpora:
        for (kind, name), occs in c.index().items():
            if q and q not in name.lower():
                continue
            for p, o in occs:
                if o.role == DEF and p not in c.context:  # the bundled rules underneath are not the workspace's
                    out.append(SymbolEntry(name, kind, o.span, o.span, kind))
                    break
    out.sort(key=lambda s: (not s.name.lower().startswith(q), s.name))
    return out[:1000]
