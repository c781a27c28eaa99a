"""Each check's documentation lives beside its code (rulekit/codes.py): every code
has What it does / Why / Example / Fix; each Example that is a rule file really
produces its code when checked (`rulekit check`, then the tests, coverage and lint
on a corpus that loads); a code no rule file can produce says why, in data; the
docs' code table is generated from the same table; `rulekit explain CODE` prints
the four sections."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rulekit.analysis.check import check_paths
from rulekit.analysis.coverage import coverage
from rulekit.analysis.lint import lint_corpus
from rulekit.analysis.settings import load_settings
from rulekit.analysis.testrun import run_tests
from rulekit.cli import app
from rulekit.codes import CODES, SECTIONS, Code, markdown
from rulekit.rules.loader import load_corpus

REPO = Path(__file__).resolve().parent.parent
CHECKED = [c for c in CODES.values() if c.not_from_rule_file is None]
UNCHECKED = [c for c in CODES.values() if c.not_from_rule_file is not None]


@pytest.mark.parametrize("code", list(CODES.values()), ids=list(CODES))
def test_every_code_has_the_four_sections(code: Code):
    for section, text in code.sections().items():
        assert text and text.strip() and "TODO" not in text, f"{code.code}: {section} is empty"
    assert code.what[0].islower() or code.what[0] == "`", "What it does continues `What it does: ...`"
    doc = code.doc
    for section in SECTIONS:
        assert f"{section}" in doc, (code.code, section)


@pytest.mark.parametrize("code", UNCHECKED, ids=[c.code for c in UNCHECKED])
def test_a_code_no_rule_file_produces_says_why(code: Code):
    assert code.example_file is None
    assert len(code.not_from_rule_file.split()) >= 5, code.not_from_rule_file


def test_rule_file_codes_are_the_ones_a_corpus_can_produce():
    # the job-input and Blueprint ranges cannot come from a rule file; everything else can, but RK008 (the
    # project file), RK009 (a folder's name), RK109 and RK308
    assert {c.code for c in UNCHECKED} == {c for c in CODES if c[2] in "56"} | {"RK008", "RK009", "RK109", "RK308"}


def produced(code: Code, folder: Path) -> set[str]:
    """What checking the Example as the only file of a rule folder reports: `rulekit check`,
    then (a corpus that loads) `rulekit test --coverage` and `rulekit lint --no-cost` with the
    default settings and the packaged benign sample."""
    folder.mkdir()
    (folder / code.example_file).write_bytes(code.example.encode(code.example_encoding))
    got = {d.code for d in check_paths([folder]).diagnostics}
    load = load_corpus([folder])
    if load.ok:
        settings, bad = load_settings(None)
        assert not bad
        run = run_tests(load.engine, [])
        got |= {r.diagnostic().code for r in run.results if not r.passed}
        got |= {d.code for d in lint_corpus(load, None, settings, run.results, cost=False)}
        got |= {d.code for d in coverage(load.engine, run.results, settings["coverage"])}  # test --coverage
    return got


@pytest.mark.parametrize("code", CHECKED, ids=[c.code for c in CHECKED])
def test_each_example_produces_its_code(code: Code, tmp_path, monkeypatch):
    monkeypatch.setenv("RULEKIT_PLUGIN_TIMEOUT", "1")  # RK006's example loops forever
    got = produced(code, tmp_path / "rules")
    assert code.code in got, f"{code.code}'s Example ({code.example_file}) produces {sorted(got)}"


def test_the_docs_code_table_is_generated_from_the_code_table():
    assert (REPO / "docs" / "codes.md").read_text(encoding="utf-8") == markdown(), \
        "docs/codes.md is stale: rulekit explain --list --format markdown > docs/codes.md"
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert "docs/codes.md" in readme


def test_explain_prints_the_four_sections():
    res = CliRunner().invoke(app, ["explain", "RK203"])
    assert res.exit_code == 0, res.output
    for section in ("What it does: ", "Why: ", "Example (`rules.toml`):", "Fix: "):
        assert section in res.output
    assert '    emit = { type = "bad_node", symptom = "NOT_REGISTERED_ANYWHERE" }' in res.output
    js = json.loads(CliRunner().invoke(app, ["explain", "unused-symptom", "--format", "json"]).output)
    assert js["code"] == "RK205" and js["example_file"] == "rules.toml" and js["why"]
    assert set(SECTIONS) <= set(js["sections"])


def test_explain_lists_every_code():
    res = CliRunner().invoke(app, ["explain", "--list"])
    assert res.exit_code == 0
    assert [ln.split()[0] for ln in res.output.splitlines()] == list(CODES)
    md = CliRunner().invoke(app, ["explain", "--list", "--format", "markdown"]).output
    assert md == markdown()
