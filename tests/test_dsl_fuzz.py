"""Hypothesis fuzz: random edits of valid DSL files (deletions, insertions of
grammar-significant characters and keywords, duplicated or swapped slices) never
raise: parse_file / parse_ast / format_dsl / check_references return data and
Diagnostics only, and every Diagnostic has a span inside the file."""
from __future__ import annotations

import dataclasses

import re
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rulekit.rules.dsl import check_references, format_dsl, parse_ast, parse_file

ROOT = Path(__file__).resolve().parent.parent
SEEDS = [b for b in re.findall(r"```rule\n(.*?)```", (ROOT / "grammar" / "README.md").read_text(), re.S)]
SEEDS.append((ROOT / "bundled_rules" / "cascades.rule").read_text())
FRAGMENTS = ['"', "/", "{", "}", "[", "]", ",", "=", "=>", "+", "#", "\n", "\\", " ", "*", "(?P<x>", "${x}", "{x}",
             "extractor", "filter", "refiner", "symptom", "member", "entry", "test", "when", "on same node",
             "emit", "match", "FINAL", "LATE", "999999999999999999999", "-1", "\u00e9", "\t", "nothing", "them"]


@st.composite
def edited(draw):
    text = draw(st.sampled_from(SEEDS))
    for _ in range(draw(st.integers(1, 6))):
        n = len(text)
        i = draw(st.integers(0, n))
        j = draw(st.integers(i, min(n, i + 40)))
        op = draw(st.sampled_from(["delete", "insert", "replace", "duplicate"]))
        if op == "delete":
            text = text[:i] + text[j:]
        elif op == "insert":
            text = text[:i] + draw(st.sampled_from(FRAGMENTS)) + text[i:]
        elif op == "replace":
            text = text[:i] + draw(st.sampled_from(FRAGMENTS + [""])) + text[j:]
        else:
            text = text[:j] + text[i:j] + text[j:]
    return text


def _inside(d, text: str) -> bool:
    if d.span is None:
        return True
    lines = text.count("\n") + 1
    return 1 <= d.span.line <= lines and 1 <= d.span.end_line <= lines + 1 and d.span.col >= 1


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(edited())
def test_random_edits_only_give_diagnostics(text):
    module, syntax = parse_ast(text, "fuzz.rule")
    ruleset, diags = parse_file(text, "fuzz.rule")
    assert all(_inside(d, text) for d in diags), [str(d) for d in diags]
    assert all(d.code == "RK003" for d in syntax)
    check_references(ruleset, {"HandleXidBurstEvents"})
    out = format_dsl(text, "fuzz.rule")
    if not syntax:
        # a file that parses formats into a file that parses to the same rules
        again, diags2 = parse_file(out, "fuzz.rule")
        assert [_meaning(r) for r in again.rules] == [_meaning(r) for r in ruleset.rules]
        assert [(s.name, s.outcome, s.sub_domain, s.rank, s.docs, s.aliases) for s in again.symptoms] == \
            [(s.name, s.outcome, s.sub_domain, s.rank, s.docs, s.aliases) for s in ruleset.symptoms]
        assert [c.code for c in diags2] == [c.code for c in diags]
        assert format_dsl(out) == out


def _meaning(r) -> tuple:
    emit = getattr(r, "emit", None)
    return (r.name, r.kind.value, getattr(r, "match_re", None), emit and (emit.type, emit.symptom, emit.node, emit.fields),
            getattr(r, "priority", None), r.requires, getattr(r, "symptoms", None), r.docs,
            [tuple(getattr(t, f, None) for f in ("line", "samples", "expect", "symptom", "node", "captures", "labels",
                                                 "source", "format")) for t in getattr(r, "tests", ())],
            getattr(r, "metric", None), getattr(r, "labels", None),
            getattr(r, "condition", None) and dataclasses.replace(r.condition, span=None))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(list('ab"/{}[],=#\n\\ +*') + ["filter ", "x", " LATE", "extractor ", "test ", "=>"]),
                max_size=60).map("".join))
def test_garbage_only_gives_diagnostics(text):
    parse_file(text, "garbage.rule")
    format_dsl(text)
