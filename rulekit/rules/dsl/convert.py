"""Conversion between TOML rule files and the DSL (`rulekit convert`).

`toml_to_dsl` turns a TOML rule file (symptoms, outcome rules, extractors,
families, catalogs) or a `*.test.toml` job-test file into DSL text with the same
meaning: compiled, it yields the same rules, symptoms and tests.  `dsl_to_toml`
goes back for everything TOML can express; DSL-only declarations (filters,
refiners, collectors) are listed in a comment.  Input with errors raises
`RulekitError` carrying the diagnostics (a user's mistake, never a traceback).
Pure text functions, no I/O.
"""
from __future__ import annotations

import tomllib
from typing import Any

from rulekit.diagnostics import RulekitError, Severity, Span
from rulekit.rules.dsl import ast as A
from rulekit.rules.dsl.fmt import regex_literal, render_module
from rulekit.rules.dsl.parser import parse_ast

G = Span("<generated>", 0, 0, 0, 0)


def _s(v: str) -> A.Str:
    return A.Str(G, v)


def _n(v: str) -> A.Name:
    return A.Name(G, v)


def _rx(v: str) -> A.Regex:
    return A.Regex(G, v, G, quoted=regex_literal(v) is None)


def _val(v: Any, pattern_like: bool = False) -> A.Value:
    if isinstance(v, bool):
        return A.Bool(G, v)
    if isinstance(v, int):
        return A.Int(G, v)
    if isinstance(v, float):
        return A.Float(G, v)
    if isinstance(v, list):
        return A.ListV(G, [_val(x) for x in v])
    if isinstance(v, dict):
        return _table(v)
    if isinstance(v, str) and pattern_like and "\\" in v and regex_literal(v) is not None:
        return A.Regex(G, v, G)
    return _s(str(v))


def _key_clause(key: Any) -> A.KeyClause:
    names = [key] if isinstance(key, str) else [str(k) for k in key]
    return A.KeyClause(G, _n(names[0]), [_n(k) for k in names[1:]])


def _table(d: dict) -> A.Table:
    return A.Table(G, [A.Pair(G, _n(str(k)), _val(v)) for k, v in d.items()])


def _list(v: Any) -> list[str]:
    if v is None:
        return []
    return [v] if isinstance(v, str) else [str(x) for x in v]


def _common(tbl: dict, src: dict | None = None) -> list:
    """author, docs, source, format, requires clauses (source/format from `src` first)."""
    src = src or {}
    out: list = []
    if isinstance(tbl.get("author"), str):
        out.append(A.AuthorClause(G, _s(tbl["author"])))
    if isinstance(tbl.get("docs"), str) and tbl["docs"]:
        out.append(A.DocsClause(G, _s(tbl["docs"])))
    for key, cls in (("source", A.SourceClause), ("format", A.FormatClause)):
        vals = _list(src.get(key, tbl.get(key)))
        if vals:
            out.append(cls(G, [_n(x) for x in vals]))
    if _list(tbl.get("requires")):
        out.append(A.RequiresClause(G, [_n(x) for x in _list(tbl["requires"])]))
    return out


def _emit(raw: dict) -> A.EmitClause:
    fields = raw.get("fields")
    return A.EmitClause(G, _n(str(raw.get("type", "bad_node"))),
                        _s(raw["symptom"]) if isinstance(raw.get("symptom"), str) else None,
                        _s(raw["node"]) if isinstance(raw.get("node"), str) else None,
                        _table({k: str(v) for k, v in fields.items()}) if isinstance(fields, dict) and fields else None)


def _tests(raw: Any) -> list[A.TestClause]:
    if isinstance(raw, dict):
        raw = [raw]
    out = []
    for t in raw or []:
        opts = {k: t[k] for k in ("source", "format") if isinstance(t.get(k), str)}
        expect = t.get("expect")
        node = t.get("node")
        exp: A.ExpectNothing | A.ExpectEvent | None
        if expect == "nothing":
            exp = A.ExpectNothing(G)
            if node is not None:
                opts["node"] = node
        elif expect is None and t.get("symptom") is None and node is None and not t.get("captures"):
            exp = None
        else:
            exp = A.ExpectEvent(G, _n(expect or "bad_node"), _s(t["symptom"]) if t.get("symptom") is not None else None,
                                _s(node) if node is not None else None,
                                _table({k: str(v) for k, v in t["captures"].items()}) if t.get("captures") else None)
            if expect is None:
                exp = _DefaultExpect(exp)
        out.append(A.TestClause(G, _s(t["line"]), _table(opts) if opts else None, exp))
    return out


class _DefaultExpect(A.ExpectEvent):
    """An expectation whose type TOML left to default (the rule's emit type)."""

    def __init__(self, e: A.ExpectEvent):
        super().__init__(e.span, e.type, e.symptom, e.node, e.captures)


def _fix_default_expects(clauses: list, emit_type: str) -> list:
    for c in clauses:
        if isinstance(c, A.TestClause) and isinstance(c.expect, _DefaultExpect):
            c.expect = A.ExpectEvent(G, _n(emit_type), c.expect.symptom, c.expect.node, c.expect.captures)
    return clauses


def toml_to_dsl(text: str, path: str = "<toml>") -> str:
    """DSL text with the same meaning as a TOML rule file (or `*.test.toml` job-test file)."""
    from rulekit.rules.toml_frontend import parse_job_tests, parse_rules

    is_tests = path.endswith(".test.toml")
    diags = (parse_job_tests if is_tests else parse_rules)(text, path)[1]
    errors = [d for d in diags if d.severity is Severity.ERROR]
    if errors:
        raise RulekitError(errors)
    data = tomllib.loads(text)
    items: list = []
    if isinstance(data.get("author"), str):
        items.append(A.FileAuthor(G, _s(data["author"])))
    for s in data.get("symptom", []):
        cl: list = [A.OutcomeClause(G, _n(s["outcome"])), A.SubDomainClause(G, _word(s["sub_domain"])),
                    A.RankClause(G, A.Int(G, s["rank"]))]
        for key, typ in (("blame", A.BlameClause), ("action", A.ActionClause)):
            if s.get(key) is not None:
                cl.append(typ(G, _word(s[key])))
        if s.get("docs"):
            cl.append(A.DocsClause(G, _s(s["docs"])))
        if s.get("aliases"):
            cl.append(A.AliasesClause(G, [_s(a) for a in _list(s["aliases"])]))
        items.append(A.SymptomDecl(G, _s(s["name"]), cl))
    for o in data.get("outcome_rule", []):
        cl = []
        if o.get("outcome") is not None:
            cl.append(A.OutcomeClause(G, _n(o["outcome"])))
        if o.get("sub_domain") is not None:
            cl.append(A.SubDomainClause(G, _word(o["sub_domain"])))
        if o.get("rank") is not None:
            cl.append(A.RankClause(G, A.Int(G, o["rank"])))
        for key, typ in (("blame", A.BlameClause), ("action", A.ActionClause)):
            if o.get(key) is not None:
                cl.append(typ(G, _word(o[key])))
        items.append(A.PrefixDecl(G, _s(o["prefix"]), cl))
    for e in data.get("extractor", []):
        emit = _emit(e["emit"])
        cl = _common(e) + [A.MatchClause(G, _rx(e["match_re"])), emit] + _tests(e.get("test"))
        items.append(A.ExtractorDecl(G, _n(e["name"]), _fix_default_expects(cl, emit.type.value)))
    for f in data.get("family", []):
        tmpl = f["template"]
        emit = _emit(tmpl.get("emit") or {})
        cl = _common(f, tmpl) + [A.MatchClause(G, _rx(tmpl["match_re"])), emit]
        for m in f.get("member", []):
            params = [A.Param(G, _n(k), _val(v, pattern_like=True)) for k, v in m.items() if k not in ("name", "test")]
            mcl = params + _tests(m.get("test"))
            # a member's default expectation is its own emit type, which may be a parameter
            etype = emit.type.value.replace("${", "").replace("}", "")
            mtype = str(m.get(etype, emit.type.value)) if "${" in emit.type.value else emit.type.value
            cl.append(A.MemberDecl(G, _n(m["name"]), _fix_default_expects(mcl, mtype)))
        items.append(A.FamilyDecl(G, _n(f["name"]), cl))
    for c in data.get("catalog", []):
        emit = _emit(c["emit"])
        cl = _common(c) + [A.MatchClause(G, _rx(c["match_re"])), _key_clause(c["key"]), emit]
        first_type = emit.type.value
        for i, (k, entry) in enumerate(c.get("entries", {}).items()):
            if isinstance(entry, str):
                entry = {"name": entry}
            if i == 0:
                first_type = str(entry.get("type", first_type))
            key: A.Str | A.Int = A.Int(G, int(k)) if k.isdigit() and str(int(k)) == k else _s(k)
            cl.append(A.EntryDecl(G, key, _table(entry)))
        cl += _fix_default_expects(_tests(c.get("test")), first_type)
        items.append(A.CatalogDecl(G, _n(c["name"]), cl))
    for mr in data.get("metric_rule", []):
        items.append(A.MetricRuleDecl(G, _n(mr["name"]), _metric_clauses(mr)))
    for case in data.get("case", []):
        cl = []
        if case.get("job"):
            cl.append(A.JobClause(G, _table(case["job"])))
        for o in case.get("observation", []):
            lines = o.get("lines", [])
            if isinstance(lines, str):
                lines = lines.splitlines()
            cl.append(A.ObserveClause(G, _word(o["source"]), _s(o["node"]) if o.get("node") is not None else None,
                                      _word(o["format"]) if o.get("format") not in (None, "text") else None,
                                      [_s(str(x)) for x in lines]))
        for m in case.get("metric", []):
            cl.append(A.SeriesClause(G, _s(m["name"]), _s(m["node"]),
                                     _table(m["labels"]) if m.get("labels") else None, _val(m["samples"])))
        cl.append(A.ExpectClause(G, _table(case.get("expect", {}))))
        items.append(A.CaseDecl(G, _s(case["name"]), cl))
    return render_module(A.Module(G, items, []))


def _metric_clauses(mr: dict) -> list:
    """The DSL clauses of one `[[metric_rule]]` table."""
    import re

    cl: list = []
    if mr.get("author"):
        cl.append(A.AuthorClause(G, _s(mr["author"])))
    if mr.get("docs"):
        cl.append(A.DocsClause(G, _s(mr["docs"])))
    if mr.get("requires"):
        cl.append(A.RequiresClause(G, [_word(x) for x in _list(mr["requires"])]))
    cl.append(A.MetricClause(G, _s(mr["metric"]), _table(mr["labels"]) if mr.get("labels") else None))
    m = re.match(r"^\s*(\w+)\s*(>=|<=|==|!=|>|<)\s*(\S+)\s*$", mr["when"])
    assert m is not None  # parse_rules accepted it
    num = float(m.group(3))
    thr: A.Int | A.Float = A.Int(G, int(num)) if num.is_integer() and "." not in m.group(3) and "e" not in m.group(3).lower() \
        else A.Float(G, num)

    def dur(v: Any) -> A.Name | None:
        if v is None:
            return None
        if isinstance(v, (int, float)):
            return _n(str(int(v))) if float(v).is_integer() else _n(f"{int(v * 1000)}ms")
        return _n(str(v).replace(" ", ""))

    cl.append(A.MetricWhenClause(G, _n(m.group(1)), _n(m.group(2)), thr, dur(mr.get("for")), dur(mr.get("window"))))
    cl.append(_emit(mr["emit"]))
    for t in mr.get("test", []) or []:
        opts = {k: t[k] for k in ("node", "labels") if k in t}
        expect: Any
        if t.get("expect") == "nothing":
            expect = A.ExpectNothing(G)
        elif "expect" in t or "symptom" in t:
            expect = A.ExpectEvent(G, _n(t.get("expect", mr["emit"].get("type", "bad_node"))),
                                   _s(t["symptom"]) if t.get("symptom") else None, None, None)
        else:
            expect = None
        cl.append(A.SeriesTestClause(G, _val(t["samples"]), _table(opts) if opts else None, expect))
    return cl


def _word(v: str) -> A.Name | A.Str:
    from rulekit.rules.dsl.fmt import _NAME

    return _n(v) if _NAME.fullmatch(v) else _s(v)


# ---- DSL -> TOML ------------------------------------------------------------------------

def dsl_to_toml(text: str, path: str = "<dsl>") -> str:
    """TOML text for the declarations of a `.rule` file that TOML can express."""
    import tomlkit

    from rulekit.rules.dsl import parse_file

    module, _ = parse_ast(text, path)
    diags = parse_file(text, path)[1]
    errors = [d for d in diags if d.severity is Severity.ERROR]
    if errors:
        raise RulekitError(errors)
    doc = tomlkit.document()
    skipped: list[str] = []
    author = next((i for i in module.items if isinstance(i, A.FileAuthor)), None)
    if author:
        doc.add("author", author.value.value)
    aots: dict[str, Any] = {}

    def add(key: str, tbl: Any) -> None:
        if key not in aots:
            aots[key] = tomlkit.aot()
        aots[key].append(tbl)

    for item in module.items:
        if isinstance(item, A.SymptomDecl):
            t = tomlkit.table()
            t.add("name", item.name.value)
            for c in item.clauses:
                _put_clause(t, c)
            add("symptom", t)
        elif isinstance(item, A.PrefixDecl):
            t = tomlkit.table()
            t.add("prefix", item.name.value)
            for c in item.clauses:
                _put_clause(t, c)
            add("outcome_rule", t)
        elif isinstance(item, A.ExtractorDecl):
            t = tomlkit.table()
            t.add("name", item.name.value)
            tests = []
            for c in item.clauses:
                if isinstance(c, A.TestClause):
                    tests.append(_test_table(c))
                else:
                    _put_clause(t, c)
            if tests:
                t.add("test", _aot(tests))
            add("extractor", t)
        elif isinstance(item, A.FamilyDecl):
            t = tomlkit.table()
            t.add("name", item.name.value)
            tmpl = tomlkit.inline_table()
            members = []
            for c in item.clauses:
                if isinstance(c, A.MatchClause):
                    tmpl.append("match_re", _pattern_str(c.pattern.value))
                elif isinstance(c, A.EmitClause):
                    tmpl.append("emit", _emit_inline(c))
                elif isinstance(c, A.MemberDecl):
                    m = tomlkit.table()
                    m.add("name", c.name.value)
                    mtests = []
                    for p in c.clauses:
                        if isinstance(p, A.Param):
                            m.add(p.name.value, _pattern_str(p.value.value) if isinstance(p.value, A.Regex)
                                  else A.plain(p.value))
                        else:
                            mtests.append(_test_table(p))
                    if mtests:
                        m.add("test", _aot(mtests))
                    members.append(m)
                else:
                    _put_clause(t, c)
            t.add("template", tmpl)
            t.add("member", _aot(members))
            add("family", t)
        elif isinstance(item, A.CatalogDecl):
            t = tomlkit.table()
            t.add("name", item.name.value)
            entries = tomlkit.table()
            tests = []
            for c in item.clauses:
                if isinstance(c, A.EntryDecl):
                    it = tomlkit.inline_table()
                    for p in c.table.pairs:
                        it.append(p.key.value, A.plain(p.value))
                    entries.add(str(c.key.value), it)
                elif isinstance(c, A.TestClause):
                    tests.append(_test_table(c))
                else:
                    _put_clause(t, c)
            t.add("entries", entries)
            if tests:
                t.add("test", _aot(tests))
            add("catalog", t)
        elif isinstance(item, A.MetricRuleDecl):
            add("metric_rule", _metric_table(item))
        elif isinstance(item, A.CaseDecl):
            t = tomlkit.table()
            t.add("name", item.name.value)
            obs = []
            series = []
            for c in item.clauses:
                if isinstance(c, A.JobClause):
                    t.add("job", _inline(A.plain(c.table)))
                elif isinstance(c, A.ObserveClause):
                    o = tomlkit.table()
                    o.add("source", c.source.value)
                    if c.node:
                        o.add("node", c.node.value)
                    if c.format:
                        o.add("format", c.format.value)
                    o.add("lines", [s.value for s in c.lines])
                    obs.append(o)
                elif isinstance(c, A.SeriesClause):
                    sm = tomlkit.table()
                    sm.add("node", c.node.value)
                    sm.add("name", c.name.value)
                    if c.labels is not None:
                        sm.add("labels", _inline(A.plain(c.labels)))
                    sm.add("samples", A.plain(c.samples))
                    series.append(sm)
                elif isinstance(c, A.ExpectClause):
                    exp = tomlkit.table()
                    for k, v in A.plain(c.table).items():  # type: ignore[union-attr]
                        exp.add(k, v)
                    t.add("expect", exp)
            if obs:
                t.add("observation", _aot(obs))
            if series:
                t.add("metric", _aot(series))
            add("case", t)
        elif isinstance(item, A.Decl):
            skipped.append(f"{item.kind} {item.name.value}")
    for key, aot in aots.items():
        doc.add(key, aot)
    out = tomlkit.dumps(doc)
    if skipped:
        out = ("# not converted (DSL only: declarative filters, refiners and collectors have no TOML form):\n"
               + "".join(f"#   {s}\n" for s in skipped) + out)
    return out


def _metric_table(item: A.MetricRuleDecl) -> Any:
    import tomlkit

    t = tomlkit.table()
    t.add("name", item.name.value)
    tests = []
    for c in item.clauses:
        if isinstance(c, A.MetricClause):
            t.add("metric", c.name.value)
            if c.labels is not None:
                t.add("labels", _inline(A.plain(c.labels)))
        elif isinstance(c, A.MetricWhenClause):
            t.add("when", f"{c.aggregate.value} {c.op.value} {c.threshold.value}")
            for key, tok in (("for", c.for_), ("window", c.window)):
                if tok is not None:
                    t.add(key, int(tok.value) if tok.value.isdigit() else tok.value)
        elif isinstance(c, A.SeriesTestClause):
            tt = tomlkit.table()
            tt.add("samples", A.plain(c.samples))
            if isinstance(c.expect, A.ExpectNothing):
                tt.add("expect", "nothing")
            elif isinstance(c.expect, A.ExpectEvent):
                tt.add("expect", c.expect.type.value)
                if c.expect.symptom:
                    tt.add("symptom", c.expect.symptom.value)
            if c.options is not None:
                for k, v in A.plain(c.options).items():  # type: ignore[union-attr]
                    tt.add(k, _inline(v) if isinstance(v, dict) else v)
            tests.append(tt)
        else:
            _put_clause(t, c)
    if tests:
        t.add("test", _aot(tests))
    return t


def _aot(tables: list) -> Any:
    import tomlkit

    a = tomlkit.aot()
    for t in tables:
        a.append(t)
    return a


def _inline(d: dict) -> Any:
    import tomlkit

    it = tomlkit.inline_table()
    for k, v in d.items():
        it.append(k, _inline(v) if isinstance(v, dict) else v)
    return it


def _pattern_str(p: str) -> Any:
    import tomlkit

    if "'" not in p and "\n" not in p:
        return tomlkit.string(p, literal=True)
    return p


def _emit_inline(c: A.EmitClause) -> Any:
    import tomlkit

    it = tomlkit.inline_table()
    it.append("type", c.type.value)
    if c.symptom:
        it.append("symptom", c.symptom.value)
    if c.node:
        it.append("node", c.node.value)
    if c.fields is not None:
        it.append("fields", _inline({p.key.value: A.plain(p.value) for p in c.fields.pairs}))
    return it


def _put_clause(t: Any, c: Any) -> None:
    if isinstance(c, A.AuthorClause):
        t.add("author", c.value.value)
    elif isinstance(c, A.DocsClause):
        t.add("docs", c.value.value)
    elif isinstance(c, A.OutcomeClause):
        t.add("outcome", c.value.value)
    elif isinstance(c, A.SubDomainClause):
        t.add("sub_domain", c.value.value)
    elif isinstance(c, A.RankClause):
        t.add("rank", c.value.value)
    elif isinstance(c, A.BlameClause):
        t.add("blame", c.value.value)
    elif isinstance(c, A.ActionClause):
        t.add("action", c.value.value)
    elif isinstance(c, A.AliasesClause):
        t.add("aliases", [v.value for v in c.values])
    elif isinstance(c, (A.SourceClause, A.FormatClause)):
        vals = [v.value for v in c.values]
        t.add("source" if isinstance(c, A.SourceClause) else "format", vals[0] if len(vals) == 1 else vals)
    elif isinstance(c, A.RequiresClause):
        t.add("requires", [v.value for v in c.names])
    elif isinstance(c, A.MatchClause):
        t.add("match_re", _pattern_str(c.pattern.value))
    elif isinstance(c, A.KeyClause):
        t.add("key", c.names if c.more else c.name.value)
    elif isinstance(c, A.EmitClause):
        t.add("emit", _emit_inline(c))


def _test_table(c: A.TestClause) -> Any:
    import tomlkit

    t = tomlkit.table()
    t.add("line", c.line.value)
    if isinstance(c.expect, A.ExpectNothing):
        t.add("expect", "nothing")
    elif isinstance(c.expect, A.ExpectEvent):
        t.add("expect", c.expect.type.value)
        if c.expect.symptom:
            t.add("symptom", c.expect.symptom.value)
        if c.expect.node:
            t.add("node", c.expect.node.value)
        if c.expect.captures is not None:
            t.add("captures", _inline({p.key.value: A.plain(p.value) for p in c.expect.captures.pairs}))
    if c.options is not None:
        for p in c.options.pairs:
            t.add(p.key.value, A.plain(p.value))
    return t
