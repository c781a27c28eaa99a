"""The pytest plugin: off unless asked; with `--rulekit` / `rulekit_paths` a
project's pytest run collects the corpus's cases as items, failures show
expected vs actual, and `-k` selects them."""
from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

QUIET = ("-p", "no:cacheprovider", "-o", "asyncio_default_fixture_loop_scope=function")
FIX = Path(__file__).resolve().parent / "fixtures" / "every_check"


def test_off_by_default(pytester):
    pytester.makepyfile("def test_one():\n    assert True\n")
    res = pytester.runpytest(*QUIET)
    res.assert_outcomes(passed=1)


def test_collects_the_corpus_from_the_ini_option(pytester):
    pytester.makeini(f"[pytest]\nrulekit_paths = {FIX / 'lint'}\nrulekit_examples = {FIX / 'examples'}\n")
    res = pytester.runpytest(*QUIET, "-q")
    res.assert_outcomes(passed=10, failed=3)
    out = res.stdout.str()
    assert "expected (-) vs actual (+)" in out and "WrongExpectation" in out and "rules.toml:96" in out


def test_flag_with_path_and_k(pytester):
    res = pytester.runpytest(*QUIET, "-q", "--rulekit", "--rulekit-path", str(FIX / "lint"),
                             "--rulekit-examples", str(FIX / "examples"), "-k", "GpuFallenOff")
    res.assert_outcomes(passed=2)


def test_corpus_that_does_not_load_is_one_failure(pytester):
    res = pytester.runpytest(*QUIET, "-q", "--rulekit-path", str(FIX / "check"))
    res.assert_outcomes(failed=1)
    assert "does not load" in res.stdout.str() and "RK201" in res.stdout.str()
