"""Every sample job under examples/ with an expected.json attributes as expected
(through `rulekit.analysis.testing.run_example`, the same runner `rulekit test` uses)."""
from __future__ import annotations

from pathlib import Path

import pytest

from rulekit.analysis.testing import find_examples, run_example

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
DIRS = find_examples([EXAMPLES])


def test_the_seed_example_is_there():
    assert EXAMPLES / "xid149-nvlink" in DIRS


@pytest.mark.parametrize("job_dir", DIRS, ids=[d.name for d in DIRS])
def test_example_attributes_as_expected(bundled, job_dir):
    res = run_example(bundled, job_dir)
    assert res.error is None, res.error
    assert res.passed, "\n".join(res.mismatches) + f"\nactual: {res.actual}"
