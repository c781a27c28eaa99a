"""`rulekit convert`: the whole bundled corpus, its TOML files converted to the DSL
and compiled, yields an engine whose rules, symptoms and results on every example
job (and every job test) equal those of the original; DSL -> TOML -> rules is the
identity for what TOML can express; the CLI converts files and reports bad input."""
from __future__ import annotations

import shutil
from pathlib import Path

import dataclasses

import pytest
from typer.testing import CliRunner

from rulekit.cli import app
from rulekit.diagnostics import RulekitError
from rulekit.rules.dsl import dsl_to_toml, parse_file, toml_to_dsl
from rulekit.rules.loader import bundled_rules_path, load_corpus
from rulekit.analysis.testing import run_example, run_job_tests
from rulekit.rules.toml_frontend import parse_rules

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = sorted(p for p in (REPO / "examples").iterdir() if (p / "expected.json").exists()) \
    if (REPO / "examples").is_dir() else []
TOML_FILES = sorted(p for p in bundled_rules_path().glob("*.toml") if not p.name.endswith(".test.toml"))


def rule_key(r) -> tuple:
    emit = getattr(r, "emit", None)
    tests = tuple((getattr(t, "line", None), getattr(t, "samples", None), t.expect, t.symptom, t.node,
                   getattr(t, "captures", None), getattr(t, "labels", None), getattr(t, "source", None),
                   getattr(t, "format", None)) for t in getattr(r, "tests", ()))
    return (r.kind.value, getattr(r, "match_re", None),
            (emit.type, emit.symptom, emit.node, emit.fields) if emit else None,
            getattr(r, "sources", None), getattr(r, "formats", None), r.requires, getattr(r, "lookup", None),
            getattr(r, "origin", None), getattr(r, "priority", None), tests, r.author, r.docs,
            getattr(r, "metric", None), getattr(r, "labels", None),
            dataclasses.replace(r.condition, span=None) if getattr(r, "condition", None) else None)


def symptom_keys(rs) -> list[tuple]:
    return sorted((s.name, s.outcome, s.sub_domain, s.rank, s.docs, s.aliases) for s in rs.symptoms)


def outcome_keys(rs) -> list[tuple]:
    return sorted((o.prefix, o.outcome or "", o.sub_domain or "", o.rank or 0) for o in rs.outcome_rules)


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    src = bundled_rules_path()
    dst = tmp_path_factory.mktemp("dsl") / "rules"
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("__pycache__"))
    converted = 0
    for f in sorted(dst.glob("*.toml")):
        if f.name.endswith(".test.toml"):
            continue
        f.with_suffix(".rule").write_text(toml_to_dsl(f.read_text(), str(f)))
        f.unlink()
        converted += 1
    assert converted == len(TOML_FILES) > 0
    a, b = load_corpus([src]), load_corpus([dst])
    assert a.engine is not None
    assert [str(d) for d in b.diagnostics if d.severity.value == "error"] == []
    assert b.engine is not None
    return a, b


def test_same_rules(both):
    a, b = both
    ra = {r.name: rule_key(r) for r in a.ruleset.rules}
    rb = {r.name: rule_key(r) for r in b.ruleset.rules}
    assert sorted(ra) == sorted(rb)
    assert [n for n in ra if ra[n] != rb[n]] == []
    assert [r.name for r in a.ruleset.rules] == [r.name for r in b.ruleset.rules]


def test_same_symptom_registry(both):
    a, b = both
    assert symptom_keys(a.ruleset) == symptom_keys(b.ruleset)
    assert outcome_keys(a.ruleset) == outcome_keys(b.ruleset)


def test_same_diagnostics_codes(both):
    a, b = both
    assert sorted((d.code, d.message) for d in a.diagnostics) == sorted(
        (d.code, d.message) for d in b.diagnostics)


@pytest.mark.parametrize("example", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_same_results_on_examples(both, example):
    a, b = both
    ra, rb = run_example(a.engine, example), run_example(b.engine, example)
    assert ra.error is None and rb.error is None
    assert ra.actual == rb.actual
    assert ra.passed == rb.passed


def test_same_results_on_job_tests(both):
    a, b = both
    ra = [(t.name, t.passed, t.actual) for t in run_job_tests(a.engine)]
    rb = [(t.name, t.passed, t.actual) for t in run_job_tests(b.engine)]
    assert ra == rb and ra


@pytest.mark.parametrize("path", TOML_FILES, ids=[p.name for p in TOML_FILES])
def test_dsl_back_to_toml_is_the_same_ruleset(path):
    text = path.read_text()
    original, _ = parse_rules(text, str(path))
    dsl = toml_to_dsl(text, str(path))
    back, diags = parse_rules(dsl_to_toml(dsl, "x.rule"), str(path))
    assert [str(d) for d in diags if d.severity.value == "error"] == []
    assert [rule_key(r) for r in back.rules] == [rule_key(r) for r in original.rules]
    assert symptom_keys(back) == symptom_keys(original)
    assert outcome_keys(back) == outcome_keys(original)


def test_job_test_file_converts():
    text = '''
[[case]]
name = "xid79"
job = { id = "t1", state = "FAILED", nodes = ["node-01", "node-02"], tasks_per_node = 8 }
[[case.observation]]
source = "syslog"
node = "node-02"
lines = ["NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."]
[case.expect]
root_cause = "XID-79-GPU_FELL_OFF_BUS"
bad_nodes = ["node-02"]
'''
    from rulekit.rules.toml_frontend import parse_job_tests

    cases, _ = parse_job_tests(text, "x.test.toml")
    rs, diags = parse_file(toml_to_dsl(text, "x.test.toml"), "x.rule")
    assert diags == []
    assert [(c.name, dict(c.job), [(o.source, o.node, o.lines) for o in c.observations], dict(c.expect))
            for c in rs.job_tests] == [
        (c.name, dict(c.job), [(o.source, o.node, o.lines) for o in c.observations], dict(c.expect)) for c in cases]


def test_dsl_only_declarations_are_listed_not_lost():
    out = dsl_to_toml((bundled_rules_path() / "cascades.rule").read_text(), "cascades.rule")
    assert "refiner Xid171Cascade" in out and "filter DemoteInsufficientPermissions" in out


def test_bad_input_raises_diagnostics_not_tracebacks():
    with pytest.raises(RulekitError) as e:
        toml_to_dsl("[[extractor]]\nname = 'x'\n", "x.toml")
    assert {d.code for d in e.value.diagnostics} == {"RK102"}
    with pytest.raises(RulekitError) as e:
        dsl_to_toml("extractor X { match /a/ ", "x.rule")
    assert {d.code for d in e.value.diagnostics} == {"RK003"}


def test_cli_convert(tmp_path):
    src = bundled_rules_path() / "nvrx_leaf_rules.toml"
    out = tmp_path / "nvrx.rule"
    runner = CliRunner()
    r = runner.invoke(app, ["convert", str(src), "--to", "dsl", "-o", str(out)])
    assert r.exit_code == 0, r.output
    assert out.read_text() == toml_to_dsl(src.read_text(), str(src))
    r = runner.invoke(app, ["convert", str(out), "--to", "toml"])
    assert r.exit_code == 0 and "[[extractor]]" in r.output
    bad = tmp_path / "bad.rule"
    bad.write_text("extractor X {\n  match /a/\n  emit bad_node nodee\n}\n")
    r = runner.invoke(app, ["convert", str(bad), "--to", "toml"])
    assert r.exit_code == 1 and "RK003" in r.output
    r = runner.invoke(app, ["convert", str(bad), "--to", "yaml"])
    assert r.exit_code == 2
