"""Corpus-wide checks run because the corpus needs them, and table-level
errors are reported once (issue 19's two loader bugs)."""
from __future__ import annotations

import sys

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
