"""Catalogs keyed on several spellings, and catalog entries that register their own
symptom: one row per authoritative entry, every spelling of it a branch of one
pattern (TOML and DSL alike)."""
from __future__ import annotations

import re

import pytest

from rulekit.rules.dsl import parse_file, toml_to_dsl
from rulekit.rules.expand import drop_branch, expand_catalog_keys
from rulekit.rules.toml_frontend import parse_rules

CATALOG = r'''
[[catalog]]
name = "Codes"
match_re = '(?:code (?P<num>\d+)\b|\b(?P<enum>ERR_[A-Z_]+)\b|error: (?P<text>[a-z ]+[a-z]))'
key = ["num", "enum", "text"]
emit = { type = "bad_node", symptom = "{sym}" }
[catalog.entries]
7 = { enum = "ERR_SEVEN", text = "seven went wrong", sym = "CODE_SEVEN", outcome = "application", sub_domain = "cuda", rank = 600, blame = "workload", docs = "seven" }
8 = { text = "eight went wrong", sym = "CODE_EIGHT", outcome = "hardware", sub_domain = "gpu", rank = 900, blame = "node", action = "reset_gpu" }
9 = { enum = "ERR_NINE", sym = "CODE_SEVEN", outcome = "application", sub_domain = "cuda", rank = 600, blame = "workload" }
'''


def rules_of(text: str):
    rs, diags = parse_rules(text, "c.toml")
    return rs, diags


def test_drop_branch_takes_the_alternative_holding_the_group():
    p = r"(?:a(?P<x>\d)|b(?P<y>\w)|c)"
    assert drop_branch(p, "x") == r"(?:b(?P<y>\w)|c)"
    assert drop_branch(p, "y") == r"(?:a(?P<x>\d)|c)"
    assert drop_branch(r"a(?P<x>b)c", "x") is None  # no alternation to drop it from
    assert drop_branch(r"[|(](?P<x>b)|c", "x") == "c"  # `|` and `(` in a class are not structure


def test_expand_fills_each_group_from_its_field_and_drops_the_missing():
    p = r"(?:n(?P<a>\d+)|e(?P<b>\w+)|t(?P<c>.+))"
    got, bad = expand_catalog_keys(p, ["a", "b", "c"], {"a": "7", "c": "x.y"})
    assert bad == [] and got == r"(?:n(?P<a>7)|t(?P<c>x\.y))"


def test_every_spelling_of_an_entry_is_one_rule():
    rs, diags = rules_of(CATALOG)
    assert not diags, diags
    by = {r.catalog_key: r for r in rs.rules}
    assert set(by) == {"7", "8", "9"}
    seven = re.compile(by["7"].match_re)
    for line in ("failed with code 7", "ERR_SEVEN raised", "error: seven went wrong"):
        assert seven.search(line), line
    for line in ("failed with code 77", "ERR_SEVENTY", "error: eight went wrong"):
        assert not seven.search(line), line
    assert "enum" not in by["8"].match_re  # entry 8 has no enum spelling: its branch is gone
    assert re.compile(by["8"].match_re).search("code 8 ...")


def test_entries_register_their_symptoms_once():
    rs, _ = rules_of(CATALOG)
    syms = {s.name: s for s in rs.symptoms}
    assert set(syms) == {"CODE_SEVEN", "CODE_EIGHT"}  # 7 and 9 share CODE_SEVEN and agree on it
    assert (syms["CODE_EIGHT"].outcome, syms["CODE_EIGHT"].rank, syms["CODE_EIGHT"].blame,
            syms["CODE_EIGHT"].action) == ("hardware", 900, "node", "reset_gpu")
    assert syms["CODE_SEVEN"].docs == "seven"
    # symptom fields are not lookup fields (events do not carry them)
    assert dict(next(r for r in rs.rules if r.catalog_key == "7").lookup).keys() == {"enum", "text", "sym", "docs"}


@pytest.mark.parametrize("entry, code, words", [
    ('9 = { enum = "ERR_NINE", sym = "CODE_SEVEN", outcome = "hardware", sub_domain = "cuda", rank = 600 }',
     "RK202", "earlier entry"),
    ('9 = { enum = "ERR_NINE", sym = "CODE_NINE", outcome = "hardware", sub_domain = "cuda" }', "RK102", "`rank`"),
    ('9 = { enum = "ERR_NINE", sym = "CODE_NINE", outcome = "hardware", sub_domain = "cuda", rank = "high" }',
     "RK103", "`rank`"),
])
def test_bad_entry_symptoms_are_reported_at_the_entry(entry, code, words):
    text = CATALOG.replace(CATALOG.strip().splitlines()[-1], entry)
    _rs, diags = rules_of(text)
    got = [d for d in diags if d.code == code]
    assert got and words in got[0].message, diags
    assert got[0].span.line == len(text.splitlines())  # the entry's own line


def test_a_symptom_named_from_the_line_cannot_be_registered():
    text = CATALOG.replace('symptom = "{sym}"', 'symptom = "X-{num}-{enum}"')
    _rs, diags = rules_of(text)
    assert any(d.code == "RK107" and "own fields" in d.message for d in diags)


def test_a_key_group_outside_any_alternation_needs_the_field():
    text = '''
[[catalog]]
name = "C"
match_re = 'code (?P<num>\\d+) name (?P<enum>\\w+)'
key = ["num", "enum"]
emit = { symptom = "S" }
[catalog.entries]
1 = { enum = "ONE" }
2 = { }
'''
    rs, diags = rules_of(text)
    assert [r.catalog_key for r in rs.rules] == ["1"]
    assert any(d.code == "RK107" and "`enum`" in d.message for d in diags)


def test_the_dsl_reads_the_same_catalog():
    rs, _ = rules_of(CATALOG)
    dsl = toml_to_dsl(CATALOG, "c.toml")
    assert "key num, enum, text" in dsl
    drs, diags = parse_file(dsl, "c.rule")
    assert not [d for d in diags if d.severity == "error"], diags
    assert [(r.name, r.match_re, r.lookup) for r in drs.rules] == [(r.name, r.match_re, r.lookup) for r in rs.rules]
    assert sorted((s.name, s.outcome, s.rank, s.blame, s.action) for s in drs.symptoms) == \
        sorted((s.name, s.outcome, s.rank, s.blame, s.action) for s in rs.symptoms)
