"""Grammar coverage: every construct of the DSL parses into the typed AST (a span
on every node, no Lark type anywhere) and compiles into the rule model exactly
as its TOML twin does."""
from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from rulekit.diagnostics import Span
from rulekit.rules.dsl import ast as A
from rulekit.rules.dsl import parse_ast, parse_file
from rulekit.rules.model import FilterPriority, RefinerPriority
from rulekit.rules.toml_frontend import parse_rules

README = Path(__file__).resolve().parent.parent / "grammar" / "README.md"
ALL = "\n".join(re.findall(r"```rule\n(.*?)```", README.read_text(), re.S))


def walk(node, seen=None):
    if isinstance(node, list):
        for x in node:
            yield from walk(x)
        return
    if not dataclasses.is_dataclass(node) or isinstance(node, Span):
        return
    yield node
    for f in dataclasses.fields(node):
        yield from walk(getattr(node, f.name))


def test_every_node_has_a_span_and_no_lark_type_leaks():
    module, diags = parse_ast(ALL, "all.rule")
    assert diags == []
    lines = ALL.splitlines()
    kinds = set()
    for node in walk(module):
        kinds.add(type(node).__name__)
        assert isinstance(node.span, Span) and node.span.file == "all.rule"
        assert 1 <= node.span.line <= node.span.end_line <= len(lines) + 1
        for f in dataclasses.fields(node):
            v = getattr(node, f.name)
            assert not type(v).__module__.startswith("lark"), (type(node).__name__, f.name)
    expected = {c.__name__ for c in vars(A).values()
                if isinstance(c, type) and issubclass(c, A.Node) and c not in (A.Node, A.Decl, A.Comment, A.Module)}
    assert expected - kinds <= {"Float", "Bool"}, sorted(expected - kinds)


def test_spans_point_at_the_text():
    text = 'extractor Foo {\n  match /a\\/b (?P<x>\\d+)/\n  emit bad_node "S-{x}"\n}\n'
    module, _ = parse_ast(text, "f.rule")
    decl = module.items[0]
    assert isinstance(decl, A.ExtractorDecl)
    assert (decl.name.span.line, decl.name.span.col, decl.name.span.end_col) == (1, 11, 14)
    m = decl.first(A.MatchClause)
    line = text.splitlines()[1]
    assert line[m.pattern.content.col - 1:m.pattern.content.end_col - 1] == "a\\/b (?P<x>\\d+)"
    assert m.pattern.value == "a/b (?P<x>\\d+)"
    rs, _ = parse_file(text, "f.rule")
    assert rs.rules[0].match_span == m.pattern.content and rs.rules[0].match_re == "a/b (?P<x>\\d+)"


TWINS = [
    (  # individual extractor with every clause
        '''
author = "fleet"
[[extractor]]
name = "A"
author = "me"
docs = "d"
source = ["applog", "syslog"]
format = "text"
requires = ["B"]
match_re = 'x (?P<h>\\S+) (?P<g>\\d)'
emit = { type = "bad_node", symptom = "S", node = "{h}", fields = { gpu = "{g}" } }
[[extractor.test]]
line = "x n1 3"
symptom = "S"
node = "n1"
captures = { g = "3" }
[[extractor.test]]
line = "y"
expect = "nothing"
source = "syslog"
[[extractor.test]]
line = "x n2 4"
''',
        '''
author "fleet"
extractor A {
  author "me"
  docs "d"
  source applog, syslog
  format text
  requires B
  match /x (?P<h>\\S+) (?P<g>\\d)/
  emit bad_node "S" node "{h}" fields { gpu = "{g}" }
  test "x n1 3" => bad_node "S" node "n1" captures { g = "3" }
  test "y" with { source = "syslog" } => nothing
  test "x n2 4"
}
'''),
    (  # family
        '''
[[family]]
name = "F"
source = "applog"
template = { match_re = 'CANCELLED ${suffix}', emit = { type = "bad_node", symptom = "${symptom}" } }
[[family.member]]
name = "T"
suffix = 'DUE TO \\w+'
symptom = "S_T"
docs = "t docs"
[[family.member.test]]
line = "CANCELLED DUE TO X"
[[family.member]]
name = "P"
suffix = "P"
symptom = "S_P"
''',
        '''
family F {
  source applog
  match /CANCELLED ${suffix}/
  emit bad_node "${symptom}"
  member T {
    suffix = /DUE TO \\w+/
    symptom = "S_T"
    docs = "t docs"
    test "CANCELLED DUE TO X"
  }
  member P {
    suffix = "P"
    symptom = "S_P"
  }
}
'''),
    (  # catalog
        '''
[[catalog]]
name = "C"
match_re = 'Xid (?P<xid>\\d+),'
key = "xid"
source = "syslog"
emit = { type = "bad_node", symptom = "XID-{xid}-{name}" }
[catalog.entries]
79 = { name = "OFF" }
13 = { name = "GR", type = "interesting_node" }
"007" = { name = "ZERO" }
[[catalog.test]]
line = "Xid 79,"
symptom = "XID-79-OFF"
''',
        '''
catalog C {
  match /Xid (?P<xid>\\d+),/
  key xid
  source syslog
  emit bad_node "XID-{xid}-{name}"
  entry 79 { name = "OFF" }
  entry 13 { name = "GR", type = "interesting_node" }
  entry "007" { name = "ZERO" }
  test "Xid 79," => bad_node "XID-79-OFF"
}
'''),
    (  # symptoms and outcome rules
        '''
[[symptom]]
name = "S"
outcome = "hardware"
sub_domain = "gpu"
rank = 5
docs = "line1\\nline2 \\"q\\""
aliases = ["s1", "s2"]
[[outcome_rule]]
prefix = "XID-"
outcome = "hardware"
rank = 3
''',
        '''
symptom "S" { outcome hardware sub_domain gpu rank 5 docs "line1\\nline2 \\"q\\"" aliases "s1", "s2" }
prefix "XID-" { outcome hardware rank 3 }
'''),
]


def key(rs):
    rules = [(r.name, r.author, r.match_re, r.emit.type, r.emit.symptom, r.emit.node, r.emit.fields, r.sources,
              r.formats, r.requires, r.origin, r.lookup, r.docs,
              [(t.line, t.expect, t.symptom, t.node, t.captures, t.source, t.format) for t in r.tests])
             for r in rs.rules]
    return rules, [(s.name, s.outcome, s.sub_domain, s.rank, s.docs, s.aliases) for s in rs.symptoms], \
        [(o.prefix, o.outcome, o.sub_domain, o.rank) for o in rs.outcome_rules]


@pytest.mark.parametrize("toml_text, dsl_text", TWINS, ids=["extractor", "family", "catalog", "symptoms"])
def test_dsl_compiles_like_its_toml_twin(toml_text, dsl_text):
    want, d1 = parse_rules(toml_text, "t.toml")
    got, d2 = parse_file(dsl_text, "t.rule")
    assert d1 == [] and d2 == []
    assert key(got) == key(want)
    assert key(got)[0] or key(got)[1]


def test_expanded_names_and_patterns():
    rs, _ = parse_file(TWINS[2][1], "c.rule")
    assert [r.name for r in rs.rules] == ["C[79]", "C[13]", "C[007]"]
    assert rs.rules[0].match_re == "Xid (?P<xid>79),"
    assert rs.rules[1].emit.type == "interesting_node"
    rs, _ = parse_file(TWINS[1][1], "f.rule")
    assert [r.name for r in rs.rules] == ["F.T", "F.P"]
    assert rs.rules[0].match_re == "CANCELLED DUE TO \\w+" and rs.rules[0].origin == "family:F"


def test_filter_refiner_collector_model():
    rs, diags = parse_file('''
filter A EARLY { demote "X" }
filter B STANDARD + 7 { discard data "Y*" }
refiner C SCRUB { discard "Z" }
refiner D POST_OUTCOME + 999 { prefer "P" over "Q*" }
collector G { requires A  gather node from bad_node }
''', "m.rule")
    assert diags == []
    by = {r.name: r for r in rs.rules}
    assert by["A"].priority == FilterPriority.EARLY and by["A"].symptoms == ("X",)
    assert by["B"].priority == FilterPriority.STANDARD + 7 and by["B"].symptoms == ()
    assert by["C"].priority == RefinerPriority.SCRUB and by["C"].symptoms == ("Z",)
    assert by["D"].priority == RefinerPriority.POST_OUTCOME + 999 and by["D"].symptoms == ("P",)
    assert by["G"].requires == ("A",) and isinstance(by["G"].decl, A.CollectorDecl)
    assert all(callable(r.func) for r in rs.rules)


def test_job_case_model():
    rs, diags = parse_file('''
case "c" {
  job { id = "t", state = "FAILED", nodes = ["a", "b"], tasks_per_node = 8, ranks = { "0" = "a" } }
  observe syslog on "a" format text { "l1" "l2" }
  observe applog { "l3" }
  expect { outcome = "hardware", bad_nodes = ["a"], ambiguous = false }
}''', "c.rule")
    assert diags == []
    c = rs.job_tests[0]
    assert c.name == "c" and c.job == {"id": "t", "state": "FAILED", "nodes": ["a", "b"], "tasks_per_node": 8,
                                       "ranks": {"0": "a"}}
    assert [(o.source, o.node, o.format, o.lines) for o in c.observations] == [
        ("syslog", "a", "text", ("l1", "l2")), ("applog", None, "text", ("l3",))]
    assert c.expect == {"outcome": "hardware", "bad_nodes": ["a"], "ambiguous": False}


def test_string_escapes_and_quoted_patterns():
    rs, diags = parse_file('extractor "odd name" { match "a\\\\/b" emit bad_node "tab\\there \\u00e9 \\d" }', "s.rule")
    assert diags == []
    r = rs.rules[0]
    assert r.name == "odd name" and r.match_re == "a\\/b" and r.emit.symptom == "tab\there \u00e9 \\d"


def test_keywords_are_names_where_a_name_is_expected():
    rs, diags = parse_file('extractor source { match /x/ emit data fields { node = "1", match = "2" } }\n'
                           'family filter { match /${symptom}/ emit bad_node "S" member test2 { symptom = "a" } }',
                           "k.rule")
    assert diags == []
    assert [r.name for r in rs.rules] == ["source", "filter.test2"]
    assert rs.rules[0].emit.fields == (("node", "1"), ("match", "2"))


@pytest.mark.parametrize("text, line, col, must, must_not", [
    ('extractor A {\n  match /x/\n  em\n}\n', 3, 5, ["`emit`", "`test`", "`}`"], ["`demote`", "`extractor`"]),
    ('filter F LATE {\n  demote "X" \n}\n', 2, 14, ["`when`", "`on`", "`demote`"], ["`match`"]),
    ('', 1, 1, ["`extractor`", "`symptom`", "`refiner`"], ["`}`"]),
    ('refiner R FINAL {\n  when any "A" ', 2, 16, ["`discard`", "`demote`", "`on`", "`,`"], ["`promote`"]),
    ('extractor A {\n  emit bad_node "S" ', 2, 20, ["`node`", "`fields`", "`test`"], []),
])
def test_expected_at(text, line, col, must, must_not):
    from rulekit.rules.dsl import expected_at

    got = expected_at(text, line, col)
    for w in must:
        assert w in got, (w, got)
    for w in must_not:
        assert w not in got, (w, got)


def test_expected_at_after_an_error_is_empty():
    from rulekit.rules.dsl import expected_at

    assert expected_at('extractor A { } }\n', 1, 18) == []


def test_every_terminal_has_words_for_error_messages():
    from rulekit.rules.dsl.parser import _terminal_words, lark_parser

    words = _terminal_words()
    for t in lark_parser().terminals:
        if t.name in ("WS", "COMMENT"):
            continue
        assert t.name in words, t.name
        assert words[t.name] != t.name.lower()
