"""Syntax and compile errors of the DSL: one pass reports every syntax error with
its exact span and the expected tokens in words (RK003); compile errors use the
TOML codes; the loader reports cross-file problems of .rule files like TOML's;
`uses python` references are checked (RK206)."""
from __future__ import annotations

import pytest

from rulekit.rules.dsl import check_references, parse_file
from rulekit.rules.loader import load_corpus

BROKEN = '''symptom "X" {
  outcome hardware
  sub_domain gpu
  rank "high"
}

extractor A {
  match /abc/
  emit bad_node "X" nodee "y"
  test "abc" => bad_node "X"
}

extractor B {
  match /unterminated
  emit bad_node "X"
}

refiner R FINAL {
  when any "XID-171-*" discard
}

extractor Fine {
  match /fine/
  emit bad_node "X"
}

filter F LATE {
  demote "X"
'''

# (line, col, end_col, words that must be among the expected ones)
EXPECTED = [
    (4, 8, 14, ["an integer"]),
    (9, 21, 26, ["`node`", "`fields`", "`test`", "`}`"]),
    (14, 9, 10, ["a regex /.../"]),
    (20, 1, 2, ["a string"]),
    (28, 12, 13, ["`}`", "`demote`"]),
]


def test_every_syntax_error_in_one_pass():
    ruleset, diags = parse_file(BROKEN, "broken.rule")
    syntax = [d for d in diags if d.code == "RK003"]
    assert [(d.span.line, d.span.col, d.span.end_col) for d in syntax] == [e[:3] for e in EXPECTED]
    for d, (_, _, _, words) in zip(syntax, EXPECTED):
        assert d.span.file == "broken.rule"
        assert "expected" in d.message
        for w in words:
            assert w in d.data["expected"], (d.message, w)
    # declarations without errors still compile (partial results for the editor)
    names = [r.name for r in ruleset.rules]
    assert "Fine" in names and "F" in names and "R" in names
    assert [s.name for s in ruleset.symptoms] == []  # its rank line was dropped; no noise about it
    assert [d.code for d in diags] == ["RK003"] * len(EXPECTED)


@pytest.mark.parametrize("text, message", [
    ('symptom "X" { rank "high" }', 'unexpected string `"high"`; expected an integer'),
    ("extractor A { match /x/ emit }", "unexpected symbol `}`; expected a name"),
    ('extractor A { match "unterminated }', "unterminated string"),
    ("filter F LATE + { demote \"X\" }", "expected an integer"),
    ("frobnicate X { }", "expected `author`, `case`, `catalog`, `collector`, `extractor`"),
])
def test_message_words(text, message):
    _, diags = parse_file(text, "m.rule")
    assert diags and diags[0].code == "RK003"
    assert message in diags[0].message


@pytest.mark.parametrize("text, code, where", [
    ('symptom "X" { outcome hardware rank 1 }', "RK102", "sub_domain"),
    ("extractor A { emit bad_node \"X\" }", "RK102", "match"),
    ("extractor A { match /x/ }", "RK102", "emit"),
    ("extractor A { match /x/ emit frob \"X\" }", "RK104", "frob"),
    ("extractor A { match /x/ emit bad_node }", "RK102", "symptom"),
    ("extractor A { match /x/ emit bad_node \"X\" fields { a = [1] } }", "RK103", "`a`"),
    ("extractor A { match /x/ emit bad_node \"X\" test \"x\" with { nodes = \"n\" } }", "RK101", "nodes"),
    ("extractor A { match /x/ emit bad_node \"X\" test \"x\" => frob }", "RK108", "frob"),
    ("extractor A { match /x/ match /y/ emit bad_node \"X\" }", "RK003", "given twice"),
    ("family F { match /${a}/ emit bad_node \"S\" member M { b = \"1\" } }", "RK107", "`a`"),
    ("family F { match /x/ emit bad_node \"S\" }", "RK102", "members"),
    ("catalog C { match /(?P<k>\\d+)/ key j emit bad_node \"S\" entry 1 { } }", "RK107", "`j`"),
    ("filter F LATE + 1500 { demote \"X\" }", "RK105", "0..999"),
    ("filter F FINAL { demote \"X\" }", "RK105", "EARLY < MID < STANDARD < LATE"),
    ("refiner R LATE { discard \"X\" }", "RK105", "SCRUB < FINAL < POST_OUTCOME"),
    ("refiner R final { discard \"X\" }", "RK105", "`final` is not a refiner stratum"),
    ("filter F LATE { discard frob \"X\" }", "RK104", "frob"),
    ("filter F LATE { demote data \"X\" }", "RK104", "cannot be demoted"),
    ("filter F LATE { promote bad_node \"X\" }", "RK104", "cannot be promoted"),
    ("filter F LATE { for each node with \"X\" { promote them } }", "RK104", "cannot be promoted"),
    ("filter F LATE { for each node with \"X*\" { add bad_node \"{bogus}\" } }", "RK107", "{bogus}"),
    ("collector C { docs \"nothing gathered\" }", "RK102", "gather"),
    ('case "c" { expect { outcomes = "x" } }', "RK101", "outcomes"),
    ("refiner R FINAL { when outcome unknown set outcome timeout }", "RK105", "POST_OUTCOME"),
    ("refiner R POST_OUTCOME { when outcome unknwn set outcome timeout }", "RK106", "unknwn"),
    ('case "c" { job { id = "x" } }', "RK102", "expect"),
    ('prefix "X-" { docs "d" outcome hardware }', "RK101", "docs"),
])
def test_compile_errors_use_the_toml_codes(text, code, where):
    _, diags = parse_file(text, "c.rule")
    assert [d.code for d in diags] == [code], [str(d) for d in diags]
    assert where in diags[0].message
    assert diags[0].span is not None and diags[0].span.line == 1


def test_loader_reports_dsl_problems_like_toml(make_corpus):
    root = make_corpus({"a.rule": '''
        symptom "KNOWN" {
          outcome hardware
          sub_domain gpu
          rank 10
        }

        extractor One {
          match /one (?P<x>\\d+)/
          emit bad_node "UNKNOWN_SYMPTOM"
          test "one 1"
        }

        extractor Two {
          match /two(?=x)/
          emit bad_node "KNOWN" node "{y}"
          test "two"
        }

        extractor One {
          match /again/
          emit bad_node "KNOWN"
        }

        extractor Three {
          requires Missing
          match /three/
          emit bad_node "KNOWN"
        }

        filter Wrong FINAL {
          demote "KNOWN"
        }

        refiner Uses FINAL {
          uses python NoSuchPlugin
          discard "KNOWN"
        }

        symptom "BAD_OUTCOME" {
          outcome broken
          sub_domain gpu
          rank 1
        }
        '''})
    res = load_corpus([root])
    codes = sorted({d.code for d in res.diagnostics})
    for c in ("RK203", "RK201", "RK204", "RK105", "RK106", "RK107", "RK206"):
        assert c in codes, (c, [str(d) for d in res.diagnostics])
    # a regex problem points inside the /.../ literal
    re2 = [d for d in res.diagnostics if d.code == "RK302"]
    assert len(re2) == 1
    line = root.joinpath("a.rule").read_text().splitlines()[re2[0].span.line - 1]
    assert line[re2[0].span.col - 1:re2[0].span.end_col - 1] == "(?="


def test_check_references():
    rs, _ = parse_file('filter F EARLY { uses python Known, Unknown  demote "X" }\n'
                       'collector C { uses python Gone  gather node from data }', "r.rule")
    diags = check_references(rs, {"Known", "F", "C"})
    assert [(d.code, d.data["missing"], d.span.line) for d in diags] == [("RK206", "Unknown", 1), ("RK206", "Gone", 2)]
    assert diags[0].span.col == len('filter F EARLY { uses python Known, ') + 1


def test_misspelt_declaration_is_one_error():
    text = ('symptom "S" { outcome hardware sub_domain gpu rank 1 }\n\n'
            'extractr Foo {\n  match /x/\n  emit bad_node "S"\n}\n\n'
            'extractor Bar {\n  match /y/\n  emit bad_node "S"\n}\n')
    rs, diags = parse_file(text, "t.rule")
    assert [(d.code, d.span.line, d.span.col) for d in diags] == [("RK003", 3, 1)]
    assert diags[0].message.startswith("unknown declaration `extractr`; expected `author`")
    assert [r.name for r in rs.rules] == ["Bar"] and [s.name for s in rs.symptoms] == ["S"]
