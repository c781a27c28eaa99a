"""Each rule's own check is remembered per rule object and registry: an edit in the
editor re-checks the edited file's rules only, and says exactly what a fresh check
of the whole corpus says (a registry change, such as a symptom removed in another
file, re-checks every rule)."""
from __future__ import annotations

from rulekit.rules import loader
from rulekit.rules.loader import load_corpus
from rulekit_lsp.workspace import Corpus

SYMPTOMS = '''
[[symptom]]
name = "FOO_FAULT"
outcome = "hardware"
sub_domain = "gpu"
rank = 10
'''


def _rules(prefix: str, n: int, symptom: str = "FOO_FAULT") -> str:
    return "".join(f'''
[[extractor]]
name = "{prefix}{i}"
author = "t"
match_re = '{prefix.lower()} fault (?P<code>\\d+) number {i}'
emit = {{ type = "bad_node", symptom = "{symptom}" }}
[[extractor.test]]
line = "{prefix.lower()} fault 7 number {i}"
''' for i in range(n))


def _fresh(folder) -> list[tuple]:
    loader._RULE_CHECKS.by_id = {}
    res = load_corpus([str(folder)])
    return sorted((d.code, str(d.span), d.message) for d in res.diagnostics)


def _editor(c: Corpus) -> list[tuple]:
    return sorted((d.code, str(d.span), d.message) for ds in c.diagnostics_by_file().values() for d in ds)


def test_an_edit_rechecks_the_edited_files_rules_and_says_what_a_fresh_check_says(make_corpus, monkeypatch):
    folder = make_corpus({"s.toml": SYMPTOMS, "a.toml": _rules("Alpha", 30), "b.toml": _rules("Beta", 30)})
    checked: list[str] = []
    real = loader._ExtractorType.validate

    def counting(rule, v):
        checked.append(rule.name)
        return real(rule, v)

    monkeypatch.setattr(loader._ExtractorType, "validate", staticmethod(counting))
    c = Corpus([folder])
    first = _editor(c)
    assert sorted(set(checked)) == sorted([f"Alpha{i}" for i in range(30)] + [f"Beta{i}" for i in range(30)])

    # an edit of b.toml: one rule now names a symptom nobody registered
    checked.clear()
    b = folder / "b.toml"
    text = _rules("Beta", 29) + _rules("Beta", 30)[len(_rules("Beta", 29)):].replace("FOO_FAULT", "NO_SUCH", 1)
    c.update(str(b), text)
    after = _editor(c)
    assert checked and all(n.startswith("Beta") for n in checked), checked
    assert any(code == "RK203" and "Beta29" in msg for code, _s, msg in after)
    assert after != first
    b.write_text(text)
    assert [x for x in after if x[0] in ("RK203", "RK107", "RK108")] == \
        [x for x in _fresh(folder) if x[0] in ("RK203", "RK107", "RK108")]

    # the symptom's registration removed from another file: every rule is checked again
    checked.clear()
    c.update(str(folder / "s.toml"), SYMPTOMS.replace("FOO_FAULT", "OTHER_FAULT"))
    after = _editor(c)
    assert {n for n in checked if n.startswith("Alpha")} == {f"Alpha{i}" for i in range(30)}
    assert sum(1 for code, _s, msg in after if code == "RK203" and "FOO_FAULT" in msg) == 59
