"""The loader and setup_rules() against the spec's "Initialization order" and the
engine issue's list of rule-author mistakes (one diagnostic each, all in one pass)."""
from __future__ import annotations

import pytest

import rulekit.api as api
from rulekit.diagnostics import RulekitError
from rulekit.rules.loader import RuleLoader, bundled_rules_path, load_corpus
from rulekit.rules.model import ExtractorRule, FilterRule

SYMPTOMS = """
[[symptom]]
name = "S_HW"
outcome = "hardware"
sub_domain = "gpu"
rank = 900
blame = "node"

[[symptom]]
name = "S_APP"
outcome = "application"
sub_domain = "python"
rank = 600
blame = "workload"
"""

EXTRACTOR = """
[[extractor]]
name = "HwLine"
author = "t"
match_re = 'HW FAULT (?P<what>\\w+)'
emit = { type = "bad_node", symptom = "S_HW" }
"""


def codes(res) -> list[str]:
    return sorted(d.code for d in res.diagnostics)


def test_default_path_is_the_bundled_rules_and_setup_is_idempotent(monkeypatch):
    monkeypatch.setattr(api, "initialized", False)
    monkeypatch.setattr(api, "_rules_engine", None)
    e1 = api.setup_rules()
    assert e1.by_name["NVRXInjectedException"].span.file.startswith(str(bundled_rules_path()))
    assert api.setup_rules() is e1  # idempotent
    e2 = api.setup_rules(force=True)  # force reloads
    assert e2 is not e1 and e2.rule_names() == e1.rule_names()
    assert api._symptom_registry is e2.registry and api.initialized


def test_setup_rules_stores_global_config(monkeypatch, make_corpus):
    monkeypatch.setattr(api, "initialized", False)
    folder = make_corpus({"s.toml": SYMPTOMS + EXTRACTOR})
    engine = api.setup_rules([folder], force=True, node_name_mapping={"n1-ib0": "node-01"},
                             ignored_hostname_prefixes=["login"], node_domain_resolver=lambda n: "rack-7")
    cfg = engine.config
    assert cfg.canonical_node("n1-ib0") == "node-01"
    assert cfg.canonical_node("login03") is None
    assert cfg.canonical_node("node-05.cluster.local") == "node-05"
    assert cfg.node_domain("node-05") == "rack-7"


def test_only_top_level_py_and_toml_sorted_skipping_test_toml(make_corpus):
    folder = make_corpus({
        "b.toml": SYMPTOMS,
        "a.toml": EXTRACTOR,
        "cases.test.toml": '[[case]]\nname = "c"\njob = {id = "x"}\n[case.expect]\noutcome = "unknown"\n',
        "sub/ignored.toml": '[[extractor]]\nname = "Nested"\nmatch_re = "x"\nemit = {type="bad_node", symptom="S_HW"}\n',
        "common/helpers.py": "from rulekit.plugin import filter_def\n"
                             "@filter_def(name='FromCommon', author='t', priority='EARLY')\n"
                             "def f(ctx):\n    pass\n"
                             "VALUE = 41\n",
        "c_plugin.py": "from rulekit.plugin import filter_def\nfrom .common.helpers import VALUE\n"
                       "@filter_def(name='UsesCommon', author='t', priority='MID')\n"
                       "def g(ctx):\n    return VALUE\n",
    })
    loader = RuleLoader().load_all([folder])
    assert [f.name for f in loader.files] == ["a.toml", "b.toml", "c_plugin.py"]
    names = {r.name for r in loader.ruleset.rules}
    assert "Nested" not in names  # non-recursive
    assert "UsesCommon" in names
    # common/ is importable by rule modules, but its decorators ran inside the import of c_plugin:
    # they registered into c_plugin's sink, never by loading common/ directly as a rule file
    assert [f.name for f in loader.files if "common" in str(f)] == []
    assert [c.name for c in loader.ruleset.job_tests] == ["c"]


def test_each_plugin_is_executed_fresh(make_corpus):
    folder = make_corpus({
        "s.toml": SYMPTOMS,
        "p.py": "from rulekit.plugin import filter_def\nimport itertools\n"
                "from .common import state\nstate.COUNT += 1\n"
                "@filter_def(name=f'Fresh{state.COUNT}', author='t', priority='EARLY')\n"
                "def f(ctx):\n    pass\n",
        "common/state.py": "COUNT = 0\n",
    })
    first = load_corpus([folder])
    second = load_corpus([folder])
    assert "Fresh1" in first.engine.by_name
    assert "Fresh1" in second.engine.by_name  # module state did not survive between loads


def test_duplicate_rule_names_name_both_locations(make_corpus):
    folder = make_corpus({"a.toml": SYMPTOMS + EXTRACTOR, "b.toml": EXTRACTOR})
    with pytest.raises(RulekitError) as exc:
        RuleLoader().load_all([folder]).build(strict=True)
    [d] = [d for d in exc.value.diagnostics if d.code == "RK201"]
    assert d.span.file.endswith("b.toml") and d.related[0].span.file.endswith("a.toml")
    assert "a.toml" in d.message


def test_every_author_mistake_reported_in_one_pass_with_positions(make_corpus):
    folder = make_corpus({
        "0_symptoms.toml": SYMPTOMS,
        "1_bad_syntax.toml": "[[extractor]\nname = 'x'\n",
        "2_emit.toml": """
            [[extractor]]
            name = "BadEmit"
            match_re = 'x y z'
            emit = { type = "very_bad", symptom = "S_HW" }
        """,
        "3_unregistered.toml": """
            [[extractor]]
            name = "Unreg"
            match_re = 'abc def'
            emit = { type = "bad_node", symptom = "NOPE_NOT_REGISTERED" }
        """,
        "4_dep.toml": """
            [[extractor]]
            name = "NeedsOther"
            match_re = 'abc ghi'
            requires = ["DoesNotExist"]
            emit = { type = "bad_node", symptom = "S_APP" }
        """,
        "5_regex.toml": """
            [[extractor]]
            name = "Lookahead"
            match_re = 'error(?! ignored)'
            emit = { type = "bad_node", symptom = "S_APP" }
        """,
        "6_priority.py": "from rulekit.plugin import filter_def\n"
                         "@filter_def(name='BadPriority', author='t', priority=99999)\n"
                         "def f(ctx):\n    pass\n",
        "7_raises.py": "x = 1\nraise ValueError('boom at import')\n",
    })
    res = load_corpus([folder])
    assert res.engine is None
    got = {d.code: d for d in res.diagnostics}
    for code in ("RK002", "RK104", "RK203", "RK204", "RK302", "RK105", "RK004"):
        assert code in got, f"{code} missing from {codes(res)}"
        assert got[code].span is not None and got[code].span.line >= 1
    assert got["RK002"].span.file.endswith("1_bad_syntax.toml") and got["RK002"].span.line == 1
    assert got["RK004"].span.line == 2 and "boom at import" in got["RK004"].message
    # the regex diagnostic points at the lookahead inside the pattern
    lk = got["RK302"]
    assert lk.span.file.endswith("5_regex.toml") and lk.span.line == 3
    line = (folder / "5_regex.toml").read_text().splitlines()[2]
    assert line[lk.span.col - 1: lk.span.end_col - 1] == "(?!"
    # strict mode raises with all the errors at once
    with pytest.raises(RulekitError) as exc:
        RuleLoader().load_all([folder]).build(strict=True)
    assert {d.code for d in exc.value.diagnostics} >= {"RK002", "RK104", "RK203", "RK204", "RK302", "RK105", "RK004"}


def test_schema_errors_point_at_the_key(make_corpus):
    folder = make_corpus({"a.toml": SYMPTOMS + """
[[extractor]]
name = "Typo"
match_re = 'abc'
emit = { type = "bad_node", symptom = "S_HW" }
sorce = "applog"
"""})
    res = load_corpus([folder])
    [d] = [d for d in res.diagnostics if d.code == "RK101"]
    lines = (folder / "a.toml").read_text().splitlines()
    assert lines[d.span.line - 1].startswith("sorce =") and "sorce" in d.message and "source" in d.message


def test_family_and_catalog_expand_at_load(make_corpus):
    folder = make_corpus({"a.toml": SYMPTOMS + """
[[symptom]]
name = "XID-79-OFF_BUS"
outcome = "hardware"
sub_domain = "gpu"
rank = 960
blame = "node"

[[symptom]]
name = "XID-13-GR"
outcome = "application"
sub_domain = "gpu"
rank = 600
blame = "workload"

[[family]]
name = "Fam"
template = { match_re = 'FAM ${word} here', emit = { type = "bad_node", symptom = "${sym}" } }
[[family.member]]
name = "One"
word = "one"
sym = "S_HW"
[[family.member]]
name = "Two"
word = "two"
sym = "S_APP"

[[catalog]]
name = "Xid"
match_re = 'Xid \\(PCI:[0-9a-f:]+\\): (?P<xid>\\d+),'
key = "xid"
emit = { type = "bad_node", symptom = "XID-{xid}-{name}" }
[catalog.entries]
79 = { name = "OFF_BUS" }
13 = { name = "GR", type = "interesting_node" }
"""})
    res = load_corpus([folder])
    assert res.engine is not None, [str(d) for d in res.diagnostics]
    by = res.engine.by_name
    assert by["Fam.One"].match_re == "FAM one here" and by["Fam.Two"].emit.symptom == "S_APP"
    assert by["Xid[79]"].match_re.endswith("(?P<xid>79),") and by["Xid[13]"].emit.type == "interesting_node"
    assert all(isinstance(by[n], ExtractorRule) for n in ("Fam.One", "Xid[79]"))


def test_bundled_corpus_loads_without_errors(bundled):
    assert len(bundled.extractors) > 100
    assert any(isinstance(r, FilterRule) and r.name == "HandleXidBurstEvents" for r in bundled.filters)


def test_suppression_comment_silences_a_code(make_corpus):
    folder = make_corpus({"a.toml": SYMPTOMS + """
[[symptom]]
name = "NEVER_USED"  # rulekit: ignore[RK205]
outcome = "hardware"
sub_domain = "gpu"
rank = 1
blame = "node"
""" + EXTRACTOR})
    res = load_corpus([folder])
    assert "RK205" not in [d.code for d in res.diagnostics if "NEVER_USED" in d.message]
