"""bench/attribute_vs_rg.py's Amdahl bound for `-j 2`: from -j 1's times with one job
and with all of them, the fixed part every process pays and the best -j 2 could do."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench" / "attribute_vs_rg.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("attribute_vs_rg_under_test", BENCH)
    mod = importlib.util.module_from_spec(spec)
    saved, had = list(sys.path), set(sys.modules)
    try:
        spec.loader.exec_module(mod)  # (it puts bench/ on sys.path and imports its neighbours)
    finally:
        sys.path[:] = saved
        for name in set(sys.modules) - had:  # bench/corpus.py and the like: not importable names for others
            if getattr(sys.modules[name], "__file__", "") and str(BENCH.parent) in sys.modules[name].__file__:
                del sys.modules[name]
    return mod


def test_bound_from_one_and_all_jobs(bench, capsys):
    report = {"many": {}}
    # one job 0.40 s, six 1.60 s: a later job 0.24 s, fixed 0.16 s; 2 workers: 0.16 + 3 * 0.24
    bench.print_many_bound(6, 1.60, 0.40, report)
    got = report["many"]
    assert got["per_job"] == pytest.approx(0.24)
    assert got["fixed"] == pytest.approx(0.16)
    assert got["bound"] == pytest.approx(1.60 / 0.88)
    assert "1.82x" in capsys.readouterr().out


def test_odd_job_count_rounds_up_and_no_fixed_part_is_two(bench):
    report = {"many": {}}
    bench.print_many_bound(4, 4.0, 1.0, report)  # nothing fixed: 4 jobs on 2 workers, 2 each
    assert report["many"]["bound"] == pytest.approx(2.0)
    bench.print_many_bound(5, 5.0, 1.0, report)  # 5 jobs: the busier worker runs 3
    assert report["many"]["bound"] == pytest.approx(5 / 3)


def test_one_job_has_no_bound(bench):
    report = {"many": {}}
    bench.print_many_bound(1, 1.0, 1.0, report)
    assert report["many"] == {}
