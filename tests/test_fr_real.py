"""Real flight-recorder dumps: job directories written by `tests/fr_real/make_dumps.py`
(torch.distributed on gloo, a fault injected; `truth.json` names the injected ranks).

The committed cases always run: exactly the injected ranks are named and no healthy
rank or node ever is.  One live run drives torch itself, when it is importable."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from rulekit.engine.jobrun import attribute_dir

HERE = Path(__file__).resolve().parent
CASES = HERE / "data" / "fr_real"
NAMES = sorted(p.name for p in CASES.iterdir() if (p / "truth.json").exists())
TASKS_PER_NODE = 2


def _node(rank: int) -> str:
    return f"node{rank // TASKS_PER_NODE + 1:04d}"


def _check(res: dict, truth: dict, name: str) -> None:
    fr = res["collectors"]["flight_recorder"]
    want = truth["culprits"]
    kinds = set(truth["kinds"].values())
    got = fr["culprit_ranks"]
    allowed = {_node(r) for r in want}
    # never a bystander: no rank and no node that was not injected
    assert set(got) <= set(want), (name, got, fr["reason"])
    assert {b["node"] for b in res["bad_nodes"]} <= allowed, (name, res["bad_nodes"])
    if kinds == {"mismatch"}:
        assert [m["ranks"] for m in fr["mismatches"]] == [want], fr["mismatches"]
        assert (res["outcome"], res["root_cause"]["symptom"]) == ("application", "NCCL_FR_COLLECTIVE_MISMATCH")
        assert got == [] and res["bad_nodes"] == []
        return
    if name != "gpu-w4-tp2-two":  # there the second fault sits behind the first: no dump can show it
        assert got == want, (name, got, fr["reason"])
    verdicts = {c["rank"]: c["verdict"] for c in fr["culprits"]}
    if kinds == {"gpu"}:  # the Xid on the culprit's node: hardware, certain
        assert res["outcome"] == "hardware" and set(verdicts.values()) <= {"hardware"}
        assert {b["node"] for b in res["bad_nodes"]} == allowed
        assert {b["confidence"] for b in res["bad_nodes"]} == {"certain"}
    elif kinds == {"raise"}:  # its own traceback: the workload
        assert res["outcome"] == "application" and set(verdicts.values()) == {"workload"}
        assert res["bad_nodes"] == []
    else:  # sleep, GIL: who, not why; never hardware, never a certain bad node
        assert res["outcome"] != "hardware", (name, res["outcome"])
        assert {b["node"] for b in res["bad_nodes"]} == allowed
        assert {b["confidence"] for b in res["bad_nodes"]} == {"suspected"}


@pytest.mark.parametrize("name", NAMES)
def test_real_dumps_name_exactly_the_injected_ranks(bundled, name):
    truth = json.loads((CASES / name / "truth.json").read_text())
    res = attribute_dir(bundled, CASES / name)
    assert not res.get("rule_errors")
    _check(res, truth, name)
    if truth["earlier"]:  # a restart in the same folder: its first attempt is analysed apart
        fr = res["collectors"]["flight_recorder"]
        assert fr["earlier_epochs"] and fr["epoch"] == len(fr["earlier_epochs"])
        assert all(set(e["culprit_ranks"]) <= set(sum(truth["earlier"], [])) for e in fr["earlier_epochs"])


def test_the_sweep_covers_every_fault_and_layout():
    kinds, layouts = set(), set()
    for name in NAMES:
        truth = json.loads((CASES / name / "truth.json").read_text())
        kinds |= set(truth["kinds"].values())
        layouts.add((truth["world"], truth["tp"]))
    assert {"sleep", "raise", "gpu", "gil", "mismatch"} <= kinds
    assert any(t["earlier"] for t in (json.loads((CASES / n / "truth.json").read_text()) for n in NAMES))
    assert len(layouts) >= 3


def test_a_live_gloo_run_names_the_sleeping_rank(bundled, tmp_path):
    pytest.importorskip("torch")
    import sys

    sys.path.insert(0, str(HERE / "fr_real"))
    from make_dumps import make_case, sweep

    job = make_case("sleep-w4-tp2", sweep()["sleep-w4-tp2"], tmp_path)
    res = attribute_dir(bundled, job)
    _check(res, json.loads((job / "truth.json").read_text()), "sleep-w4-tp2")
