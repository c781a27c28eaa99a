"""The bundled corpus passes `check`, `test` and `lint` in `make test`.

`check` and `test` must be clean.  `lint` findings on the bundled corpus are
real corpus problems routed to the corpus owners; until they are fixed they are
listed, one line each, in tests/data/bundled_lint_known.txt.  The test fails on
any finding not listed there (a new overlap, a new weak key, ...), so the list
can only shrink; RULEKIT_UPDATE_GOLDEN=1 rewrites it from the current findings.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from rulekit.analysis.check import check_paths
from rulekit.analysis.lint import lint_corpus
from rulekit.analysis.testrun import default_example_paths, run_tests
from rulekit.loader import bundled_rules_path, load_corpus

KNOWN = Path(__file__).parent / "data" / "bundled_lint_known.txt"


@pytest.fixture(scope="module")
def corpus():
    return load_corpus()


@pytest.fixture(scope="module")
def results(corpus):
    return run_tests(corpus.engine, default_example_paths([bundled_rules_path()])).results


def test_check_is_clean():
    report = check_paths()
    assert report.clean, "\n".join(str(d) for d in report.diagnostics)


def test_every_bundled_test_passes(results):
    assert results, "the bundled corpus has no tests"
    failed = [f"{r.span}: {r.name}: {r.error or r.mismatches}" for r in results if not r.passed]
    assert not failed, "\n".join(failed)
    assert {"line", "job", "example"} <= {r.kind for r in results}


def _key(d) -> str:
    return " ".join(x for x in (d.code, d.data.get("rule", ""), d.data.get("other", "")) if x)


def test_lint_has_no_new_findings(corpus, results):
    diags = lint_corpus(corpus, None, None, results, cost=False)
    errors = [str(d) for d in diags if d.severity.value == "error"]
    assert not errors
    found = sorted({_key(d) for d in diags if d.severity.value in ("error", "warning")})
    if os.environ.get("RULEKIT_UPDATE_GOLDEN") == "1":
        KNOWN.write_text("# Known lint findings on bundled_rules/ (routed to the corpus owners); may only shrink.\n"
                         + "".join(f"{k}\n" for k in found))
    known = {ln.strip() for ln in KNOWN.read_text().splitlines() if ln.strip() and not ln.startswith("#")}
    new = [k for k in found if k not in known]
    assert not new, "new lint findings on the bundled corpus:\n" + "\n".join(
        str(d) for d in diags if _key(d) in new)
