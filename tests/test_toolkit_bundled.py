"""The bundled corpus passes `check`, `test` and `lint` in `make test`.

`check`, `test` and `lint` must all be clean: an intended overlap is suppressed
on its rule with a reason, never listed here.
"""
from __future__ import annotations

import pytest

from rulekit.analysis.check import check_paths
from rulekit.analysis.lint import lint_corpus
from rulekit.analysis.testrun import default_example_paths, run_tests
from rulekit.rules.loader import bundled_rules_path, load_corpus


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


def test_lint_is_clean(corpus, results):
    """Every lint finding on the bundled corpus is fixed or suppressed on its rule
    with `# rulekit: ignore[CODE]  (reason)`; none is tolerated here."""
    diags = lint_corpus(corpus, None, None, results, cost=False)
    assert not diags, "lint findings on the bundled corpus:\n" + "\n".join(str(d) for d in diags)
