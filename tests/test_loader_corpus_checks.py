"""Corpus-wide checks run because the corpus needs them, and table-level
errors are reported once (issue 19's two loader bugs)."""
from __future__ import annotations

import sys

import pytest

from rulekit.config import GlobalConfig
from rulekit.rules.loader import RuleLoader, load_corpus

CATALOG = '''
[[symptom]]
name = "X_SYM"
outcome = "hardware"
sub_domain = "gpu"
rank = 10
blame = "node"

[[catalog]]
name = "Cat"
author = 7
source = 5
match_re = 'code (?P<code>\\d+)'
key = "code"
emit = { type = "bad_node", symptom = "X_SYM" }
entries = { 1 = "one", 2 = "two", 3 = "three" }
'''

FAMILY = '''
[[symptom]]
name = "X_SYM"
outcome = "hardware"
sub_domain = "gpu"
rank = 10
blame = "node"

[[family]]
name = "Fam"
author = 7
template = { match_re = 'thing ${word}', emit = { type = "bad_node", symptom = "X_SYM" } }
[[family.member]]
name = "FamA"
word = "a"
[[family.member]]
name = "FamB"
word = "b"
[[family.member]]
name = "FamC"
word = "c"
'''


def _codes(tmp_path, text):
    (tmp_path / "r.toml").write_text(text, encoding="utf-8")
    return [d for d in load_corpus([tmp_path]).diagnostics if d.code == "RK103"]


def test_a_bad_catalog_field_is_reported_once_not_per_entry(tmp_path):
    errs = _codes(tmp_path, CATALOG)
    assert sorted(d.message.split("`")[1] for d in errs) == ["author", "source"], [str(d) for d in errs]


def test_a_bad_family_field_is_reported_once_not_per_member(tmp_path):
    errs = _codes(tmp_path, FAMILY)
    assert len(errs) == 1 and "author" in errs[0].message, [str(d) for d in errs]


def test_dsl_reference_check_runs_even_if_the_dsl_module_was_not_imported_before(tmp_path, monkeypatch):
    (tmp_path / "a.rule").write_text(
        'symptom "S" {\n  outcome hardware\n  sub_domain gpu\n  rank 5\n  blame node\n}\n'
        'filter UsesMissing at STANDARD {\n  uses python NoSuchPluginRule\n}\n', encoding="utf-8")
    loader = RuleLoader(GlobalConfig()).load_all([tmp_path])
    # the check must not depend on what happens to be imported already
    monkeypatch.delitem(sys.modules, "rulekit.rules.dsl")
    loader.build(strict=False)
    assert any(d.code == "RK206" and "NoSuchPluginRule" in d.message for d in loader.diagnostics), \
        [str(d) for d in loader.diagnostics]


# ---- the explicit list of corpus-wide checks; catalog keys; the public parse functions ---------

from pathlib import Path  # noqa: E402

from rulekit.rules import loader as loader_mod  # noqa: E402
from rulekit.rules.loader import CORPUS_CHECKS, FINALIZE, check_corpus, parse_rule_text, read_rule_file  # noqa: E402


def test_the_corpus_checks_are_an_explicit_ordered_list():
    assert [n for n, _ in CORPUS_CHECKS] == ["symptoms", "aliases", "missing-blame", "outcome-rules", "rules",
                                             "dependencies"]
    assert [n for n, _ in FINALIZE] == ["unused-symptoms", "plugin-literals", "dsl-references"]


def test_the_loader_runs_every_listed_check(tmp_path, monkeypatch):
    """Replacing one step of the list changes what the loader reports: the list is what runs."""
    (tmp_path / "r.toml").write_text(CATALOG.replace("author = 7\nsource = 5\n", ""), encoding="utf-8")
    assert load_corpus([tmp_path]).ok

    def extra(v):
        v.add("RK201", "injected by the test", None)

    monkeypatch.setattr(loader_mod, "FINALIZE", FINALIZE + (("extra", extra),))
    got = load_corpus([tmp_path], options=loader_mod.EngineOptions(cache_dir=None))
    assert any(d.message == "injected by the test" for d in got.diagnostics)


def test_check_corpus_gives_what_the_loader_gives(tmp_path):
    sym = '[[symptom]]\nname = "{n}"\noutcome = "hardware"\nsub_domain = "x"\nrank = 1\nblame = "node"\n\n'
    ext = ('[[extractor]]\nname = "R"\nauthor = "t"\nmatch_re = "zzz"\nrequires = ["Nope"]\n'
           'emit = {{ type = "bad_node", symptom = "{n}" }}\n\n')
    (tmp_path / "r.toml").write_text(sym.format(n="S") + sym.format(n="UNUSED") + ext.format(n="S") + ext.format(n="S"),
                                     encoding="utf-8")
    loader = RuleLoader(GlobalConfig(), use_cache=False).load_all([tmp_path])
    own = list(loader.diagnostics)
    loader.build(strict=False)
    by_loader = sorted(str(d) for d in loader.diagnostics if d not in own)
    direct = sorted(str(d) for d in check_corpus(loader.ruleset, loader.registry(), {}))
    assert by_loader == direct
    assert sorted({d.split()[2] for d in direct}) == ["RK201", "RK204", "RK205"], direct


def test_catalog_entries_carry_their_key_from_the_front_end(tmp_path):
    (tmp_path / "r.toml").write_text(CATALOG.replace("author = 7\nsource = 5\n", ""), encoding="utf-8")
    rules = load_corpus([tmp_path]).ruleset.rules
    assert {r.name: r.catalog_key for r in rules} == {"Cat[1]": "1", "Cat[2]": "2", "Cat[3]": "3"}
    dsl = tmp_path / "d"
    dsl.mkdir()
    (dsl / "x.rule").write_text(
        'symptom "XID-79-OFF" {\n  outcome hardware\n  sub_domain gpu\n  rank 5\n  blame node\n}\n'
        'symptom "XID-7-ZERO" {\n  outcome hardware\n  sub_domain gpu\n  rank 5\n  blame node\n}\n'
        'catalog Xid {\n  match /Xid (?P<xid>\\d+),/\n  key xid\n  emit bad_node "XID-{xid}-{name}"\n'
        '  entry 79 { name = "OFF" }\n  entry "7" { name = "ZERO" }\n}\n', encoding="utf-8")
    got = load_corpus([dsl])
    assert got.ok, [str(d) for d in got.diagnostics]
    cat = [r for r in got.ruleset.rules if r.name.startswith("Xid")]
    assert [(r.name, r.catalog_key) for r in cat] == [("Xid[79]", "79"), ("Xid[7]", "7")]


def test_the_key_is_not_sliced_out_of_the_name(tmp_path):
    """A catalog whose *name* holds a bracket: its entries' symptoms are still checked one
    by one (slicing `Cat[v2][3]` for the key found no key, and the entry fell back to a
    prefix check that hid the unregistered `X_3`)."""
    text = CATALOG.replace("author = 7\nsource = 5\n", "").replace('name = "Cat"', 'name = "Cat[v2]"')
    text = text.replace('symptom = "X_SYM"', 'symptom = "X_{code}"').replace('name = "X_SYM"', 'name = "X_1"')
    text += '\n[[symptom]]\nname = "X_2"\noutcome = "hardware"\nsub_domain = "gpu"\nrank = 10\nblame = "node"\n'
    (tmp_path / "r.toml").write_text(text, encoding="utf-8")
    got = load_corpus([tmp_path])
    assert [r.catalog_key for r in got.ruleset.rules] == ["1", "2", "3"]
    assert [d.code for d in got.diagnostics] == ["RK203"] and "`X_3`" in got.diagnostics[0].message, \
        [str(d) for d in got.diagnostics]


def test_no_code_slices_rule_names_for_catalog_keys():
    root = Path(loader_mod.__file__).resolve().parents[1]
    for f in root.rglob("*.py"):
        text = f.read_text(encoding="utf-8")
        assert 'name.index("[")' not in text and "name[name.index" not in text, f


def test_read_and_parse_are_public_and_match_the_loader(tmp_path):
    f = tmp_path / "r.toml"
    f.write_text(CATALOG, encoding="utf-8")
    text, problem = read_rule_file(f)
    assert problem is None and text == CATALOG
    parsed = parse_rule_text(text, str(f))
    assert [r.name for r in parsed.ruleset.rules] == ["Cat[1]", "Cat[2]", "Cat[3]"]
    assert sorted(d.code for d in parsed.diagnostics) == ["RK103", "RK103"]
    bad = tmp_path / "latin1.toml"
    bad.write_bytes(b"name = '\xe9'\n")
    assert read_rule_file(bad)[1].code == "RK001" and "not UTF-8" in read_rule_file(bad)[1].message
    assert read_rule_file(tmp_path / "absent.toml")[1].code == "RK001"
    rule = tmp_path / "a.rule"
    rule.write_text('symptom "S" {\n  outcome hardware\n', encoding="utf-8")
    p = parse_rule_text(rule.read_text(), str(rule))
    assert p.module is not None and any(d.code == "RK003" for d in p.diagnostics)
    tests = tmp_path / "x.test.toml"
    tests.write_text("[[job_test]]\nname = 't'\n", encoding="utf-8")
    assert parse_rule_text(tests.read_text(), str(tests)).ruleset.rules == []
    with pytest.raises(ValueError):
        parse_rule_text("", str(tmp_path / "p.py"))
