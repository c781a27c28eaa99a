"""The real-world scorer (`tests/realworld/score.py`): selection by family glob and collected
date, the error-line yardstick, the miss classes, and the report's shape.  The classification
tests stub the engine run, so they hold whatever the corpus answers; one end-to-end run checks
the report on real cases.  This module only reads the case files."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
_spec = importlib.util.spec_from_file_location("realworld_score", HERE / "realworld" / "score.py")
score = importlib.util.module_from_spec(_spec)
sys.modules["realworld_score"] = score  # dataclasses look their module up
_spec.loader.exec_module(score)

from test_realworld import CASES  # noqa: E402
from rulekit.rules.model import JobTestCase, ObservationSpec  # noqa: E402


def test_default_selects_every_case_and_filters_narrow():
    assert len(list(score.select([], []))) == len(CASES)
    dated = list(score.select([], ["2026-12-04"]))
    assert dated and all(m["collected"] == "2026-12-04" for _, m, _ in dated)
    fabric = list(score.select(["fabric_*"], []))
    assert fabric and all(f.startswith("fabric_") for f, _, _ in fabric)
    both = list(score.select(["fabric_*"], ["2026-12-04"]))
    assert both and set(id(c) for *_, c in both) == set(id(c) for *_, c in fabric) & set(id(c) for *_, c in dated)
    assert list(score.select(["no_such_family"], [])) == []


@pytest.mark.parametrize("line,is_error", [
    ("RuntimeError: CUDA error: uncorrectable ECC error encountered", True),
    ("node0001:35:89 [5] ofi_process_cq:1039 NCCL WARN NET/OFI Request completed with error. RC: 20", True),
    ("libfabric:451707:1708520807::efa:cq:efa_rdm_txe_handle_error():737<warn> err: 5, message: Invalid address", True),
    ("F1007 19:40:40.235829 26752 syncedmem.cpp:66] Check failed: error == cudaSuccess (2 vs. 0)  out of memory", True),
    ("=>> PBS: job killed: walltime 259217 exceeded limit 259200", True),
    ("link mlx5_7/1 subnet_prefix fe80:0000:0000:0000 lid 3403 sm_lid 1 lmc 0 state DOWN physical_state POLLING", True),
    ("kernel: NVRM: Xid (PCI:...): 145, RLW_RXPIPE Nonfatal XC0 i0 Link 11 (...)", True),
    ("node0001:21471:22316 [7] NCCL INFO Ring 00 : 7 -> 8 [send] via NET/AWS Libfabric/0", False),
    ("Epoch 1,   100/15756; ; ppl: 29296.45 ; lr: 0.0000084", False),
    ("INFO: Function: main Line: 57: NET/OFI Server: Listening on dev 0", False),
])
def test_error_line_yardstick(line, is_error):
    case = JobTestCase(name="x", job={}, observations=(ObservationSpec(source="applog", lines=(line,)),),
                       expect={"outcome": "network"})
    assert score.has_error_line(case) is is_error


def _case(outcome, bad, line="NCCL WARN something failed"):
    return JobTestCase(name="c", job={}, observations=(ObservationSpec(source="applog", lines=(line,)),),
                       expect={"outcome": outcome, "bad_nodes": bad})


class _Result:
    def __init__(self, actual):
        self.actual = actual


@pytest.mark.parametrize("want,got,classes,both_ok", [
    (("network", []), ("network", []), [], True),
    (("network", []), ("unknown", []), [score.UNKNOWN_ON_ERROR], False),
    (("hardware", ["n1"]), ("timeout", []), [score.WRONG_OUTCOME, score.CULPRIT_MISSED], False),
    (("infrastructure", []), ("infrastructure", ["n1"]), [score.HEALTHY_BLAMED], False),
    (("hardware", ["n1"]), ("hardware", ["n2"]), [score.HEALTHY_BLAMED, score.CULPRIT_MISSED], False),
])
def test_miss_classes(monkeypatch, want, got, classes, both_ok):
    monkeypatch.setattr(score, "run_job_test",
                        lambda engine, case: _Result({"outcome": got[0], "bad_nodes": got[1], "root_cause": "X"}))
    s = score.score_case(None, "fam", {"provenance": "o/r#1"}, _case(*want))
    assert s.classes == classes and s.both_ok is both_ok and s.outcome_ok is (want[0] == got[0])


def test_unknown_without_an_error_line_is_a_wrong_outcome(monkeypatch):
    monkeypatch.setattr(score, "run_job_test", lambda engine, case: _Result({"outcome": "unknown", "bad_nodes": []}))
    s = score.score_case(None, "fam", {}, _case("network", [], line="all ranks started"))
    assert s.classes == [score.WRONG_OUTCOME]


def test_report_on_real_cases(bundled, capsys):
    assert score.main(["socket_bind", "--collected", "2026-12-04"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("socket_bind collected 2026-12-04: 3 cases from 3 threads")
    for label in ("outcome right:", "outcome + bad_nodes right:", "unknown although a line reads as error:",
                  "a node blamed where no node is at fault:", "hardware", "network", "other",
                  score.UNKNOWN_ON_ERROR, score.WRONG_OUTCOME, score.HEALTHY_BLAMED, score.CULPRIT_MISSED):
        assert label in out


def test_bad_arguments_are_refused(capsys):
    with pytest.raises(SystemExit) as e:
        score.main(["--collected", "2026-13-01"])
    assert e.value.code == 2 and "expected a date YYYY-MM-DD" in capsys.readouterr().err
    assert score.main(["no_such_family"]) == 2
    assert "no case matches no_such_family" in capsys.readouterr().err
