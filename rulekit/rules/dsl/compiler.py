"""DSL AST -> rule model (`RuleSet`) + file-local Diagnostics.

Compiles each declaration into the same IR the TOML front-end and Python
plugins produce: symptoms, outcome rules, extractors (families and catalogs
expanded with `rulekit.rules.expand`, exactly as in TOML), declarative filters /
refiners / collectors (closures from `rulekit.rules.dsl.actions`, the AST node kept in
`decl`) and job-level test cases.  Reports only file-local problems with the
TOML codes (RK101-RK108); cross-file checks (names, symptoms, regexes) are the
loader's.  Never raises on user input.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any

from rulekit.diagnostics import Diagnostic, Span
from rulekit.rules.dsl import actions
from rulekit.rules.dsl import ast as A
from rulekit.rules.catalog import ENTRY_EMIT_OVERRIDES, add_symptom, entry_pattern, entry_symptom, lookup_fields
from rulekit.rules.expand import substitute_params, template_names
from rulekit.rules.model import (
    EMIT_TYPES,
    OUTCOMES,
    CollectorRule,
    Emit,
    ExtractorRule,
    FilterPriority,
    FilterRule,
    JobTestCase,
    LineTest,
    MetricCondition,
    MetricRule,
    MetricSpec,
    MetricTest,
    ObservationSpec,
    OutcomeRule,
    RefinerPriority,
    RefinerRule,
    RuleSet,
    Symptom,
)

DEFAULT_AUTHOR = "unknown"
TEST_OPTIONS = {"source", "format", "node"}
MEMBER_RESERVED = {"name", "test", "author", "docs"}
EXPECT_KEYS = {"outcome", "sub_domain", "root_cause", "root_node", "bad_nodes", "affected_nodes", "interesting_nodes",
               "interesting_symptoms", "symptoms", "absent_symptoms", "ambiguous", "confidence"}
GROUP_PLACEHOLDERS = {"node", "count", "symptom", "symptoms"}
SINGLE = (A.AuthorClause, A.DocsClause, A.OutcomeClause, A.SubDomainClause, A.RankClause, A.AliasesClause,
          A.BlameClause, A.ActionClause,
          A.SourceClause, A.FormatClause, A.RequiresClause, A.MatchClause, A.KeyClause, A.EmitClause,
          A.JobClause, A.ExpectClause, A.MetricClause, A.MetricWhenClause)
CLAUSE_WORD = {A.AuthorClause: "author", A.DocsClause: "docs", A.OutcomeClause: "outcome",
               A.SubDomainClause: "sub_domain", A.RankClause: "rank", A.AliasesClause: "aliases",
               A.BlameClause: "blame", A.ActionClause: "action",
               A.SourceClause: "source", A.FormatClause: "format", A.RequiresClause: "requires",
               A.MatchClause: "match", A.KeyClause: "key", A.EmitClause: "emit", A.JobClause: "job",
               A.ExpectClause: "expect", A.MetricClause: "metric", A.MetricWhenClause: "when"}


class _Compiler:
    def __init__(self, module: A.Module, path: str):
        self.m = module
        self.path = path
        self.diags: list[Diagnostic] = []
        self.out = RuleSet(files=[path])
        authors = [i for i in module.items if isinstance(i, A.FileAuthor)]
        self.author = authors[0].value.value if authors else DEFAULT_AUTHOR
        for extra in authors[1:]:
            self.err("RK003", "the file author is given twice", extra.span)

    def err(self, code: str, msg: str, span: Span | None, **data: Any) -> None:
        self.diags.append(Diagnostic(code, msg, span, data=data))

    def run(self) -> tuple[RuleSet, list[Diagnostic]]:
        for item in self.m.items:
            if isinstance(item, A.FileAuthor):
                continue
            self.check_single(item)
            getattr(self, "d_" + item.kind)(item)
        return self.out, self.diags

    def check_single(self, decl: A.Decl) -> None:
        seen: dict[type, A.Node] = {}
        for c in decl.clauses:
            t = type(c)
            if t in SINGLE:
                if t in seen:
                    self.err("RK003", f"`{CLAUSE_WORD[t]}` is given twice in {decl.kind} `{decl.name.value}`", c.span)
                seen[t] = c
        for member in decl.all(A.MemberDecl):
            names: set[str] = set()
            for p in member.clauses:
                if isinstance(p, A.Param):
                    if p.name.value in names:
                        self.err("RK003", f"parameter `{p.name.value}` is given twice in member `{member.name.value}`", p.span)
                    names.add(p.name.value)

    # ---- helpers ----
    def rule_author(self, decl: A.Decl) -> str:
        a = decl.first(A.AuthorClause)
        return a.value.value if isinstance(a, A.AuthorClause) else self.author

    def docs(self, decl: A.Decl) -> str:
        d = decl.first(A.DocsClause)
        return d.value.value if isinstance(d, A.DocsClause) else ""

    def words(self, decl: A.Decl, typ: type) -> tuple[str, ...]:
        c = decl.first(typ)
        if c is None:
            return ()
        vals = c.values if hasattr(c, "values") else c.names
        return tuple(v.value for v in vals)

    def emit(self, c: A.EmitClause, what: str, symptom: str | None = None, node: str | None = None,
             etype: str | None = None, fields: tuple[tuple[str, str], ...] | None = None) -> Emit | None:
        etype = etype if etype is not None else c.type.value
        if etype not in EMIT_TYPES:
            self.err("RK104", f"unknown emit type `{etype}` in {what}; use one of {', '.join(EMIT_TYPES)}", c.type.span,
                     type=etype)
            return None
        symptom = symptom if symptom is not None else (c.symptom.value if c.symptom else None)
        node = node if node is not None else (c.node.value if c.node else None)
        if fields is None:
            fields = self.fields(c.fields, what, "emit fields")
        if etype != "data" and not symptom:
            self.err("RK102", f"emit of {what} needs a symptom (every {etype} event carries one): "
                     f"`emit {etype} \"SYMPTOM\"`", c.span, key="symptom")
        return Emit(type=etype, symptom=symptom, node=node, fields=fields, span=c.span)

    def fields(self, t: A.Table | None, what: str, where: str) -> tuple[tuple[str, str], ...]:
        if t is None:
            return ()
        out = []
        for p in t.pairs:
            v = p.value
            if isinstance(v, (A.ListV, A.Table)):
                self.err("RK103", f"`{p.key.value}` in the {where} of {what} must be a string or number", v.span)
                continue
            out.append((p.key.value, _text(v)))
        return tuple(out)

    def tests(self, clauses: list, what: str, default_expect: str | None) -> tuple[LineTest, ...]:
        out = []
        for t in clauses:
            if not isinstance(t, A.TestClause):
                continue
            opts: dict[str, str] = {}
            if t.options is not None:
                for p in t.options.pairs:
                    if p.key.value not in TEST_OPTIONS:
                        self.err("RK101", f"unknown test option `{p.key.value}` in {what}; known: "
                                 f"{', '.join(sorted(TEST_OPTIONS))}", p.key.span, key=p.key.value)
                    elif isinstance(p.value, (A.ListV, A.Table)):
                        self.err("RK103", f"test option `{p.key.value}` must be a string", p.value.span)
                    else:
                        opts[p.key.value] = _text(p.value)
            symptom = node = None
            caps: tuple[tuple[str, str], ...] = ()
            if isinstance(t.expect, A.ExpectNothing):
                expect = "nothing"
            elif isinstance(t.expect, A.ExpectEvent):
                expect = t.expect.type.value
                if expect not in EMIT_TYPES:
                    self.err("RK108", f"a test of {what} expects `{expect}`; use nothing, "
                             f"{', '.join(EMIT_TYPES)}", t.expect.type.span)
                    continue
                symptom = t.expect.symptom.value if t.expect.symptom else None
                node = t.expect.node.value if t.expect.node else None
                caps = tuple(sorted(self.fields(t.expect.captures, what, "test captures")))
            else:
                expect = default_expect or "bad_node"
            node = node if node is not None else opts.get("node")
            out.append(LineTest(line=t.line.value, expect=expect, symptom=symptom, node=node, captures=caps,
                                source=opts.get("source"), format=opts.get("format"), span=t.line.span))
        return tuple(out)

    def need(self, decl: A.Decl, typ: type, how: str) -> Any:
        c = decl.first(typ)
        if c is None:
            self.err("RK102", f"{decl.kind} `{decl.name.value}` needs {how}", decl.name.span,
                     key=CLAUSE_WORD.get(typ, ""))
        return c

    # ---- declarations ----
    def d_symptom(self, d: A.SymptomDecl) -> None:
        oc = self.need(d, A.OutcomeClause, "`outcome WORD`")
        sd = self.need(d, A.SubDomainClause, "`sub_domain WORD`")
        rk = self.need(d, A.RankClause, "`rank N`")
        if None in (oc, sd, rk):
            return
        self.out.symptoms.append(Symptom(
            name=d.name.value, outcome=oc.value.value, sub_domain=sd.value.value, rank=rk.value.value,
            docs=self.docs(d), aliases=self.words(d, A.AliasesClause), span=d.name.span,
            blame=self._word_of(d, A.BlameClause), action=self._word_of(d, A.ActionClause)))

    @staticmethod
    def _word_of(d, typ) -> str | None:
        c = d.first(typ)
        return c.value.value if c else None

    def d_prefix(self, d: A.PrefixDecl) -> None:
        for c in d.all(A.DocsClause) + d.all(A.AliasesClause):
            self.err("RK101", f"an outcome prefix takes only outcome, sub_domain, rank, blame and action, not `{CLAUSE_WORD[type(c)]}`",
                     c.span)
        oc, sd, rk = d.first(A.OutcomeClause), d.first(A.SubDomainClause), d.first(A.RankClause)
        self.out.outcome_rules.append(OutcomeRule(
            prefix=d.name.value, outcome=oc.value.value if oc else None, sub_domain=sd.value.value if sd else None,
            rank=rk.value.value if rk else None, span=d.name.span,
            blame=self._word_of(d, A.BlameClause), action=self._word_of(d, A.ActionClause)))

    def d_extractor(self, d: A.ExtractorDecl) -> None:
        what = f"extractor `{d.name.value}`"
        m = self.need(d, A.MatchClause, "a pattern: `match /.../`")
        e = self.need(d, A.EmitClause, "`emit TYPE \"SYMPTOM\"`")
        emit = self.emit(e, what) if e else None
        if m is None or emit is None:
            return
        self.out.rules.append(ExtractorRule(
            name=d.name.value, author=self.rule_author(d), span=d.name.span, match_re=m.pattern.value,
            match_span=m.pattern.content, emit=emit, sources=self.words(d, A.SourceClause),
            formats=self.words(d, A.FormatClause), requires=self.words(d, A.RequiresClause),
            tests=self.tests(d.clauses, what, emit.type), docs=self.docs(d)))

    def d_family(self, d: A.FamilyDecl) -> None:
        fname = d.name.value
        what = f"family `{fname}`"
        m = self.need(d, A.MatchClause, "a template pattern: `match /... ${param} .../`")
        e = self.need(d, A.EmitClause, "a template emit: `emit TYPE \"${param}\"`")
        members = d.all(A.MemberDecl)
        for t in d.all(A.TestClause):
            self.err("RK108", f"tests of {what} belong inside a member: `member NAME {{ ... test \"...\" }}`", t.span)
        if not members:
            self.err("RK102", f"{what} has no members: add `member NAME {{ param = \"...\" }}`", d.name.span)
        if m is None or e is None:
            return
        for mem in members:
            params: dict[str, Any] = {}
            mauthor = mdocs = None
            for p in mem.clauses:
                if isinstance(p, A.Param):
                    if isinstance(p.value, (A.ListV, A.Table)):
                        self.err("RK103", f"parameter `{p.name.value}` of member `{mem.name.value}` must be a string",
                                 p.value.span)
                        continue
                    if p.name.value == "author":
                        mauthor = _text(p.value)
                    elif p.name.value == "docs":
                        mdocs = _text(p.value)
                    elif p.name.value not in MEMBER_RESERVED:
                        params[p.name.value] = _text(p.value)
            params["name"] = mem.name.value
            missing: list[str] = []
            pattern, miss = substitute_params(m.pattern.value, params)
            missing += miss
            sym = node = None
            if e.symptom:
                sym, miss = substitute_params(e.symptom.value, params)
                missing += miss
            if e.node:
                node, miss = substitute_params(e.node.value, params)
                missing += miss
            fields = []
            for k, v in self.fields(e.fields, what, "emit fields"):
                v2, miss = substitute_params(v, params)
                missing += miss
                fields.append((k, v2))
            etype, miss = substitute_params(e.type.value, params)
            missing += miss
            if missing:
                self.err("RK107", f"member `{mem.name.value}` of {what} does not define "
                         f"{', '.join('`' + x + '`' for x in sorted(set(missing)))} used by the template",
                         mem.name.span, missing=sorted(set(missing)))
                continue
            mname = f"{fname}.{mem.name.value}"
            emit = self.emit(e, f"family member `{mname}`", symptom=sym, node=node, etype=etype, fields=tuple(fields))
            if emit is None:
                continue
            self.out.rules.append(ExtractorRule(
                name=mname, author=mauthor or self.rule_author(d), span=mem.name.span, match_re=pattern,
                match_span=m.pattern.content, emit=emit, sources=self.words(d, A.SourceClause),
                formats=self.words(d, A.FormatClause), requires=self.words(d, A.RequiresClause),
                tests=self.tests(mem.clauses, f"family member `{mname}`", emit.type), origin=f"family:{fname}",
                docs=mdocs or self.docs(d)))

    def d_catalog(self, d: A.CatalogDecl) -> None:
        cname = d.name.value
        what = f"catalog `{cname}`"
        m = self.need(d, A.MatchClause, "a pattern with the key group: `match /...(?P<key>...).../`")
        k = self.need(d, A.KeyClause, "`key GROUP` (the named group that selects the entry)")
        e = self.need(d, A.EmitClause, "`emit TYPE \"SYMPTOM-{field}\"`")
        entries = d.all(A.EntryDecl)
        if not entries:
            self.err("RK102", f"{what} has no entries: add `entry KEY {{ name = \"...\" }}`", d.name.span)
        if m is None or k is None or e is None:
            return
        keys = k.names
        missing = [x for x in keys if f"(?P<{x}>" not in m.pattern.value]
        if missing:
            self.err("RK107", f"the pattern of {what} has no named group "
                              f"{', '.join(f'`(?P<{x}>...)`' for x in missing)} for its key "
                              f"{', '.join(f'`{x}`' for x in missing)}",
                     m.pattern.content, missing=missing)
            return
        out: list[ExtractorRule] = []
        seen: set[str] = set()
        symptoms: dict[str, Symptom] = {}
        for ent in entries:
            kv = str(ent.key.value)
            if kv in seen:
                self.err("RK003", f"entry `{kv}` is given twice in {what}", ent.key.span)
                continue
            seen.add(kv)
            raw = {p.key.value: p.value for p in ent.table.pairs}
            bad = [p for p in ent.table.pairs if isinstance(p.value, (A.ListV, A.Table))]
            for p in bad:
                self.err("RK103", f"field `{p.key.value}` of entry `{kv}` must be a string or number", p.value.span)
            plain = {f: v.value for f, v in raw.items() if not isinstance(v, (A.ListV, A.Table))}
            lookup = lookup_fields(plain)
            over = {f: _text(v) for f, v in raw.items() if f in ENTRY_EMIT_OVERRIDES}
            ename = f"{cname}[{kv}]"
            emit = self.emit(e, f"catalog entry `{ename}`", symptom=over.get("symptom"), node=over.get("node"),
                             etype=over.get("type"))
            if emit is None:
                continue
            ewhat = f"entry `{kv}` of {what}"
            expanded, problem = entry_pattern(m.pattern.value, keys, kv, lookup, ewhat)
            if problem is None:
                sym, problem = entry_symptom(plain, emit.symptom, {keys[0]: kv, **lookup}, ent.key.span, ewhat)
                if sym is not None:
                    problem = add_symptom(symptoms, sym, ewhat)
            if problem is not None:
                self.err(problem[0], problem[1], ent.key.span)
            if expanded is None:  # unbalanced group: the loader's regex check reports the pattern
                continue
            out.append(ExtractorRule(
                name=ename, author=self.rule_author(d), span=ent.key.span, match_re=expanded,
                match_span=m.pattern.content, emit=emit, sources=self.words(d, A.SourceClause),
                formats=self.words(d, A.FormatClause), requires=self.words(d, A.RequiresClause), tests=(),
                origin=f"catalog:{cname}", lookup=tuple(sorted(lookup.items())),
                docs=lookup.get("docs") or self.docs(d), catalog_key=kv))
        self.out.symptoms.extend(symptoms.values())
        tests = self.tests(d.clauses, what, out[0].emit.type if out else None)
        if out and tests:
            out[0] = replace(out[0], tests=tests)
        self.out.rules.extend(out)

    def priority(self, d: A.FilterDecl | A.RefinerDecl, strata: type) -> Any:
        p = d.priority
        assert p is not None
        name = p.stratum.value
        if name not in strata.__members__:
            names = " < ".join(m.name for m in strata)
            self.err("RK105", f"`{name}` is not a {d.kind} stratum; use one of {names} (plus an offset 0..999)",
                     p.stratum.span, rule=d.name.value)
            return int(min(strata))  # reported here, at the stratum; the file does not load anyway
        off = p.offset.value if p.offset else 0
        if not 0 <= off <= 999:
            self.err("RK105", f"priority offset {off} of {d.kind} `{d.name.value}` must be 0..999", p.offset.span)
            off = max(0, min(off, 999))
        return int(strata[name]) + off

    def event_type(self, n: A.Name | None, what: str) -> bool:
        if n is not None and n.value not in EMIT_TYPES:
            self.err("RK104", f"unknown event type `{n.value}` in {what}; use one of {', '.join(EMIT_TYPES)}", n.span)
            return False
        return True

    def retype_ok(self, action: str, etype: A.Name | None, span: Span) -> bool:
        """demote works on bad_node events, promote on interesting_node events."""
        need = {"demote": "bad_node", "promote": "interesting_node"}.get(action)
        if need is None or etype is None or etype.value == need or etype.value not in EMIT_TYPES:
            return True
        other = "interesting_node" if need == "bad_node" else "bad_node"
        self.err("RK104", f"`{action}` turns {need} events into {other} events; `{etype.value}` events cannot be "
                 f"{action}d (use `discard`, or select {need} events)", span)
        return False

    def d_filter(self, d: A.FilterDecl) -> None:
        what = f"filter `{d.name.value}`"
        ok = True
        named: list[str] = []
        for c in d.clauses:
            if isinstance(c, A.FilterAction):
                ok &= self.event_type(c.event_type, what)
                named += _exact(c.patterns) + (_exact(c.condition.patterns) if c.condition else [])
                ok &= self.retype_ok(c.action, c.event_type, c.event_type.span if c.event_type else c.span)
            elif isinstance(c, A.PerNode):
                ok &= self.event_type(c.event_type, what)
                named += _exact(c.patterns)
                for s in c.body:
                    if isinstance(s, A.GroupAct):
                        ok &= self.retype_ok(s.action, c.event_type or A.Name(c.span, "bad_node"), s.span)
                    if isinstance(s, A.GroupAdd):
                        ok &= self.event_type(s.type, what)
                        if s.symptom:
                            bad = [x for x in template_names(s.symptom.value) if x not in GROUP_PLACEHOLDERS]
                            if bad:
                                self.err("RK107", f"`add` in {what} uses {{{bad[0]}}}; available: "
                                         f"{', '.join('{' + x + '}' for x in sorted(GROUP_PLACEHOLDERS))}", s.symptom.span)
                                ok = False
                            elif not template_names(s.symptom.value):
                                named.append(s.symptom.value)
                        elif s.type.value != "data":
                            self.err("RK102", f"`add {s.type.value}` in {what} needs a symptom", s.span)
                            ok = False
        if not ok:
            return
        self.out.rules.append(FilterRule(
            name=d.name.value, author=self.rule_author(d), span=d.name.span, priority=self.priority(d, FilterPriority),
            func=actions.build_filter(d, d.name.value), requires=self.words(d, A.RequiresClause), docs=self.docs(d),
            decl=d, symptoms=tuple(dict.fromkeys(named)), selects=actions.decl_selections(d)))

    def d_refiner(self, d: A.RefinerDecl) -> None:
        named: list[str] = []
        for c in d.clauses:
            if isinstance(c, A.RefineWhen):
                named += _exact(c.patterns) + _exact(c.targets)
            elif isinstance(c, A.RefineAlways):
                named += _exact(c.targets)
            elif isinstance(c, A.Prefer):
                named += _exact(c.order)
            elif isinstance(c, A.OutcomeWhen):
                named += _exact(c.patterns)
                for w in [*c.outcomes, c.set_outcome]:
                    if w.value not in OUTCOMES:
                        self.err("RK106", f"`{w.value}` is not an outcome; use one of {', '.join(OUTCOMES)}", w.span)
        prio = self.priority(d, RefinerPriority)
        if any(isinstance(c, A.OutcomeWhen) for c in d.clauses) and not (
                isinstance(prio, int) and prio >= RefinerPriority.POST_OUTCOME):
            self.err("RK105", f"refiner `{d.name.value}` changes the outcome, which exists only in POST_OUTCOME; "
                     "give it the POST_OUTCOME stratum", d.priority.stratum.span if d.priority else d.name.span)
        job_wide = isinstance(prio, int) and prio >= RefinerPriority.FINAL
        self.out.rules.append(RefinerRule(
            name=d.name.value, author=self.rule_author(d), span=d.name.span, priority=prio,
            func=actions.build_refiner(d, d.name.value, job_wide), requires=self.words(d, A.RequiresClause),
            docs=self.docs(d), decl=d, symptoms=tuple(dict.fromkeys(named))))

    def d_collector(self, d: A.CollectorDecl) -> None:
        what = f"collector `{d.name.value}`"
        ok = True
        for g in d.all(A.GatherClause):
            ok &= self.event_type(g.event_type, what)
        if not d.all(A.GatherClause):
            self.err("RK102", f"{what} needs `gather FIELD, ... from ...`", d.name.span)
            ok = False
        if not ok:
            return
        self.out.rules.append(CollectorRule(
            name=d.name.value, author=self.rule_author(d), span=d.name.span, func=actions.build_collector(d),
            requires=self.words(d, A.RequiresClause), docs=self.docs(d), decl=d))

    def d_metric_rule(self, d: A.MetricRuleDecl) -> None:
        from rulekit.rules.metricspec import parse_condition, parse_duration

        what = f"metric rule `{d.name.value}`"
        mc = self.need(d, A.MetricClause, "`metric \"NAME\"`")
        wc = self.need(d, A.MetricWhenClause, "a condition: `when rate > 10 [for 60s] [window 5m]`")
        e = self.need(d, A.EmitClause, "`emit interesting_node \"SYMPTOM\"`")
        emit = self.emit(e, what) if e else None
        if emit is not None and emit.type == "data":
            self.err("RK104", f"emit of {what} must be a node event (bad_node, interesting_node), not `data`", e.type.span)
            emit = None
        cond = None
        if wc is not None:
            got = parse_condition(f"{wc.aggregate.value} {wc.op.value} {wc.threshold.value}")
            if isinstance(got, str):
                self.err("RK111", got, wc.aggregate.span)
            else:
                durs: dict[str, float | None] = {"for": 0.0, "window": None}
                bad = False
                for key, tok in (("for", wc.for_), ("window", wc.window)):
                    if tok is None:
                        continue
                    val = parse_duration(int(tok.value) if tok.value.isdigit() else tok.value)
                    if isinstance(val, str):
                        self.err("RK111", f"`{key}` in {what}: {val}", tok.span)
                        bad = True
                    else:
                        durs[key] = val
                if durs["window"] is not None and got[0] == "value":
                    self.err("RK111", f"`window` in {what} applies to rate and increase, not to `value`", wc.window.span)
                    bad = True
                if not bad:
                    cond = MetricCondition(got[0], got[1], got[2], float(durs["for"] or 0.0), durs["window"], span=wc.span)
        labels = self.labels(mc.labels if mc else None, what)
        tests = []
        for t in d.all(A.SeriesTestClause):
            samples = self.samples(t.samples, what)
            opts = A.plain(t.options) if t.options is not None else {}
            for k in opts:
                if k not in ("node", "labels"):
                    self.err("RK101", f"unknown test option `{k}` in {what}; known: labels, node", t.options.span, key=k)
            if isinstance(t.expect, A.ExpectNothing):
                expect, symptom = "nothing", None
            elif isinstance(t.expect, A.ExpectEvent):
                expect, symptom = t.expect.type.value, (t.expect.symptom.value if t.expect.symptom else None)
                if expect not in EMIT_TYPES:
                    self.err("RK108", f"a test of {what} expects `{expect}`; use nothing, {', '.join(EMIT_TYPES)}",
                             t.expect.type.span)
                    continue
            else:
                expect, symptom = (emit.type if emit else "interesting_node"), None
            tlabels = opts.get("labels")
            if samples is None:
                continue
            tests.append(MetricTest(samples=samples, expect=expect, symptom=symptom,
                                    labels=tuple(sorted((str(k), str(v)) for k, v in tlabels.items()))
                                    if isinstance(tlabels, dict) else labels,
                                    node=str(opts.get("node", "node-under-test")), span=t.samples.span))
        if mc is None or cond is None or emit is None:
            return
        self.out.rules.append(MetricRule(
            name=d.name.value, author=self.rule_author(d), span=d.name.span, metric=mc.name.value, condition=cond,
            emit=emit, labels=labels, requires=self.words(d, A.RequiresClause), tests=tuple(tests), docs=self.docs(d)))

    def labels(self, t: A.Table | None, what: str) -> tuple[tuple[str, str], ...]:
        if t is None:
            return ()
        out = []
        for p in t.pairs:
            if not isinstance(p.value, A.Str):
                self.err("RK103", f"label `{p.key.value}` of {what} must be a string", p.value.span)
                continue
            out.append((p.key.value, p.value.value))
        return tuple(sorted(out))

    def samples(self, v: A.ListV, what: str) -> tuple[tuple[float, float], ...] | None:
        pts = []
        for it in v.items:
            if not (isinstance(it, A.ListV) and len(it.items) == 2
                    and all(isinstance(x, (A.Int, A.Float)) for x in it.items)):
                self.err("RK108", f"samples of {what} must be a list of [unix_seconds, value] pairs", it.span)
                return None
            pts.append((float(it.items[0].value), float(it.items[1].value)))
        return tuple(sorted(pts, key=lambda p: p[0]))

    def d_case(self, d: A.CaseDecl) -> None:
        what = f"test case `{d.name.value}`"
        job = d.first(A.JobClause)
        exp = self.need(d, A.ExpectClause, "`expect { outcome = \"...\", ... }`")
        if exp is None:
            return
        for p in exp.table.pairs:
            if p.key.value not in EXPECT_KEYS:
                self.err("RK101", f"unknown key `{p.key.value}` in expect of {what}; known keys: "
                         f"{', '.join(sorted(EXPECT_KEYS))}", p.key.span, key=p.key.value)
        obs = tuple(ObservationSpec(source=o.source.value, lines=tuple(s.value for s in o.lines),
                                    node=o.node.value if o.node else None,
                                    format=o.format.value if o.format else "text", span=o.span)
                    for o in d.all(A.ObserveClause))
        metrics = []
        for sc in d.all(A.SeriesClause):
            samples = self.samples(sc.samples, what)
            if samples is not None:
                metrics.append(MetricSpec(node=sc.node.value, name=sc.name.value, samples=samples,
                                          labels=self.labels(sc.labels, what), span=sc.span))
        self.out.job_tests.append(JobTestCase(
            name=d.name.value, job=A.plain(job.table) if job else {}, observations=obs,
            expect=A.plain(exp.table), span=d.name.span, metrics=tuple(metrics)))


def _text(v: Any) -> str:
    return str(v.value)  # as the TOML front-end does (str() of the value)


def _exact(pats: list[A.Str]) -> list[str]:
    return [p.value for p in pats if not p.value.endswith("*")]


def compile_module(module: A.Module, path: str) -> tuple[RuleSet, list[Diagnostic]]:
    return _Compiler(module, path).run()
