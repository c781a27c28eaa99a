"""Every diagnostic code of RK0xx–RK4xx fires on the "every check" fixtures
(tests/fixtures/every_check/), through the same analysis functions the
commands call; the test fails if a code is added to rulekit/codes.py and no
fixture makes it fire."""
from __future__ import annotations

from pathlib import Path

import pytest

from rulekit.analysis.check import check_paths
from rulekit.analysis.coverage import coverage
from rulekit.analysis.lint import lint_corpus
from rulekit.analysis.settings import load_settings
from rulekit.analysis.testrun import default_example_paths, run_tests
from rulekit.codes import CODES
from rulekit.diagnostics import RulekitError
from rulekit.rules.loader import load_corpus
from rulekit.rules.project import read_project

FIX = Path(__file__).parent / "fixtures" / "every_check"

# Codes that cannot fire from a corpus, with the reason.  (None today: keep it that way.)
ALLOWLIST: dict[str, str] = {}


@pytest.fixture(scope="module")
def fired() -> dict[str, list]:
    out: dict[str, list] = {}

    def add(diags):
        for d in diags:
            out.setdefault(d.code, []).append(d)

    add(check_paths([FIX / "check"]).diagnostics)
    add(check_paths([FIX / "empty"]).diagnostics)
    add(check_paths([FIX / "rulekit"]).diagnostics)  # RK009: a rule folder named like the package
    add(load_corpus([FIX / "plugins"], plugin_timeout=0.5).diagnostics)  # RK006 (a short limit), RK007
    add(load_settings(FIX / "bad_settings.toml")[1])
    try:  # RK008: a project file with a key it does not know
        read_project(FIX / "project" / "rulekit.toml")
    except RulekitError as e:
        add(e.diagnostics)
    settings, bad = load_settings(FIX / "lint_settings.toml")
    assert not bad
    load = load_corpus([FIX / "lint"])
    assert load.ok, [str(d) for d in load.diagnostics]
    run = run_tests(load.engine, default_example_paths([FIX / "lint"]))
    add(r.diagnostic() for r in run.results if not r.passed)
    add(coverage(load.engine, run.results, settings["coverage"]))
    add(lint_corpus(load, (FIX / "benign.log").read_bytes(), settings, run.results, cost=True))
    return out


def test_every_code_fires(fired):
    wanted = {c for c in CODES if c[2] in "01234"} - set(ALLOWLIST)
    missing = sorted(wanted - set(fired))
    assert not missing, f"codes that no fixture makes fire: {missing}"


def test_allowlist_only_names_real_codes():
    assert set(ALLOWLIST) <= set(CODES)


@pytest.mark.parametrize("code,fragment", [
    ("RK201", "defined twice"), ("RK302", "lookahead"), ("RK307", "GpuErrorGeneric"),
    ("RK306", "both match"), ("RK305", "benign sample lines"), ("RK405", "expected.json"),
])
def test_messages_name_the_problem(fired, code, fragment):
    assert any(fragment in d.message for d in fired[code]), [d.message for d in fired[code]]


def test_duplicates_carry_both_locations(fired):
    d = fired["RK201"][0]
    assert d.span is not None and d.related and d.related[0].span.line != d.span.line


def test_suppression_comment_drops_a_finding(fired):
    # `Suppressed` in check/b_rules.toml has a lookahead under `# rulekit: ignore[RK302]`
    assert not any("Suppressed" in d.message for d in fired["RK302"])
    assert any("Lookahead" in d.message for d in fired["RK302"])


def test_regex_findings_point_at_the_construct(fired):
    d = next(d for d in fired["RK302"] if "Lookahead" in d.message)
    text = (FIX / "check" / "b_rules.toml").read_text().splitlines()[d.span.line - 1]
    assert text[d.span.col - 1:d.span.end_col - 1] == "(?!"


def test_overlap_witnesses_match_both_rules(fired):
    import re2

    load = load_corpus([FIX / "lint"])
    by = load.engine.by_name
    for d in fired["RK306"] + fired["RK307"]:
        w = d.data["witness"]
        assert re2.search(by[d.data["rule"]].match_re, w) and re2.search(by[d.data["other"]].match_re, w)
        assert d.data["method"] in ("exact", "sample", "test line")
        assert w in d.data["fix"]
    methods = {d.data["method"] for d in fired["RK306"]}
    assert {"exact", "sample"} <= methods  # constructed by the search, and found on the benign sample


def test_overlap_quick_fix_is_a_passing_job_case(fired, tmp_path):
    import shutil

    from rulekit.analysis.testing import run_job_tests

    d = next(d for d in fired["RK306"] if d.data.get("fix_case"))
    rules = tmp_path / "lint"
    shutil.copytree(FIX / "lint", rules)
    (rules / "pin.test.toml").write_text(d.data["fix_case"] + "\n")
    load = load_corpus([rules])
    assert load.ok, [str(x) for x in load.diagnostics]
    pinned = [r for r in run_job_tests(load.engine) if r.name.startswith("overlap of")]
    assert len(pinned) == 1 and pinned[0].passed, pinned[0].mismatches if pinned else "not collected"
