"""Flight-recorder dumps: the restricted reader (real PyTorch dumps, malicious and
broken pickles), the cross-rank matching, and the bundled rules end to end on
generated fault-injection jobs (tests/frgen.py)."""
from __future__ import annotations

import io
import itertools
import json
import os
import pickle
from pathlib import Path

import pytest

from frgen import Fault, Sim, write_job, write_json, write_pickle
from rulekit.analysis.explain import explain_job
from rulekit.cli.explain import render_job_trace
from rulekit.engine.jobrun import attribute_dir
from rulekit.inputs.flight_recorder import (
    FRDumpError,
    check_pickle,
    parse_dump_bytes,
    parse_dump_json,
    read_dump_file,
    rank_from_name,
)
from rulekit.inputs.fr_pickle import _ALLOWED, RefusingUnpickler
from rulekit.inputs.fr_analysis import analyze
from rulekit.inputs.jobdir import read_job_dir
from rulekit.rules.loader import bundled_rules_path, load_corpus

REAL = Path(__file__).parent / "data" / "fr_gloo_real"
NODES2 = ["node0001", "node0002"]
NODES4 = ["node0001", "node0002", "node0003", "node0004"]


def _parsed(sim: Sim) -> dict:
    return {r: parse_dump_json(d, f"rank{r}", r) for r, d in sim.dumps().items()}


# ---- the reader --------------------------------------------------------------------------------


def test_real_pytorch_dumps_parse_and_name_the_rank_that_never_joined():
    """tests/data/fr_gloo_real: dumps written by torch 2.13 (`_dump_fr_trace`, gloo, see
    make_dumps.py): rank 0 enqueued all_reduce 5 of the default group, rank 1 never did."""
    dumps = {r: read_dump_file(REAL / f"trace_rank_{r}") for r in (0, 1)}
    assert {r: d.rank for r, d in dumps.items()} == {0: 0, 1: 1}
    assert dumps[0].version == "2.10" and len(dumps[0]) == 6 and len(dumps[0].entries) == 6 and not dumps[0].problems
    a = analyze(dumps)
    assert a.culprit_ranks == [1]
    stuck = next(s for s in a.stuck if s.culprits)
    assert (stuck.group, stuck.desc, stuck.seq, stuck.op) == ("0", "default_pg", 5, "gloo:all_reduce")
    assert stuck.states == {"not_reached": [1], "scheduled": [0]}


def test_rank_from_pytorch_file_names():
    assert rank_from_name("nccl_trace_rank_3") == 3
    assert rank_from_name("fr/nccl_trace_rank_12.json") == 12
    assert rank_from_name("trace_7.pkl") == 7
    assert rank_from_name("README") is None


def test_pickle_and_json_forms_read_alike(tmp_path):
    sim = Sim(world=4, tp=4, faults={2: Fault("hang", 3)})
    write_pickle(sim.dumps(), tmp_path / "p")
    write_json(sim.dumps(), tmp_path / "j")
    for r in range(4):
        p = read_dump_file(tmp_path / "p" / f"nccl_trace_rank_{r}")
        j = read_dump_file(tmp_path / "j" / f"nccl_trace_rank_{r}.json")
        assert p.to_json() | {"where": ""} == j.to_json() | {"where": ""}


class _Evil:
    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


@pytest.mark.parametrize("protocol", range(0, pickle.HIGHEST_PROTOCOL + 1))
def test_malicious_pickle_is_refused_and_never_runs(tmp_path, protocol):
    marker = tmp_path / "pwned"
    payload = pickle.dumps({"version": "2.10", "entries": [_Evil(marker)], "pg_config": {}}, protocol=protocol)
    # control: the same bytes do run code under an ordinary unpickler
    pickle.loads(payload)
    assert marker.exists()
    marker.unlink()
    with pytest.raises(FRDumpError) as e:
        parse_dump_bytes(payload, "fr/nccl_trace_rank_3")
    assert e.value.offset is not None and 0 <= e.value.offset < len(payload)
    assert "refused without being run" in e.value.message
    assert any(op in e.value.message for op in ("GLOBAL", "STACK_GLOBAL", "REDUCE"))
    assert not marker.exists()
    # second line of defence: the unpickler itself refuses every class
    with pytest.raises(pickle.UnpicklingError):
        RefusingUnpickler(io.BytesIO(payload)).load()
    assert not marker.exists()


@pytest.mark.parametrize("data, opcode", [
    (b"(S'touch /tmp/x'\nios\nsystem\n.", "INST"),
    (b"\x80\x02}q\x00}b.", "BUILD"),
    (b"\x80\x02X\x01\x00\x00\x001Q.", "BINPERSID"),
    (b"\x80\x02\x82\x01.", "EXT1"),
])
def test_other_code_running_opcodes_are_refused(data, opcode):
    with pytest.raises(FRDumpError) as e:
        parse_dump_bytes(data, "d")
    assert opcode in e.value.message


def test_truncated_pickle_is_a_located_error():
    good = pickle.dumps(Sim(world=2, tp=2).dumps()[0], protocol=2)
    with pytest.raises(FRDumpError) as e:
        parse_dump_bytes(good[: len(good) // 2], "fr/nccl_trace_rank_0")
    assert "not a complete pickle" in e.value.message and e.value.offset is not None


def test_bombs_and_bad_json_are_bounded_errors():
    deep = 100_000  # nested lists, written by hand (pickle.dumps itself would recurse)
    nest = b"\x80\x02}X\x07\x00\x00\x00entries" + b"]" * deep + b"a" * (deep - 1) + b"s."
    d = parse_dump_bytes(nest, "deep")  # the unpickler is iterative and normalization never recurses
    assert d.entries == [] and d.problems == ["entries[0] is not a record"]
    size = [1] * 1000
    entry = {"collective_seq_id": 1, "profiling_name": "nccl:all_reduce", "state": "scheduled",
             "process_group": ("0", "default_pg"), "input_sizes": [size] * 1000}
    bomb = pickle.dumps({"entries": [entry] * 1000}, protocol=2)  # 10**9 sizes through the memo
    assert len(bomb) < 20_000
    with pytest.raises(FRDumpError, match="reference bomb"):
        parse_dump_bytes(bomb, "bomb")
    with pytest.raises(FRDumpError, match="memo index"):
        parse_dump_bytes(b"\x80\x02]r\xff\xff\xff\x7f.", "memo")
    with pytest.raises(FRDumpError, match="memo index"):
        parse_dump_bytes(b"(lp99999999999\n.", "memo0")
    with pytest.raises(FRDumpError) as e:
        parse_dump_bytes(b'{"entries": [\n  {"state": ]}', "x.json")
    assert (e.value.line, e.value.col) == (2, 13)
    with pytest.raises(FRDumpError, match="entries"):
        parse_dump_json({"entries": {"a": 1}}, "w")


def test_a_deeply_nested_process_group_is_read_without_crashing_the_reader():
    """A million-deep tuple where `process_group` belongs: hashing it recurses in C (a
    crash, not an exception), so the reader checks its shape before anything is hashed.
    Run in a fresh interpreter: a regression kills that one, not the test run."""
    import subprocess
    import sys

    script = """
import pickle
from rulekit.inputs.flight_recorder import parse_dump_bytes
e = {"collective_seq_id": 1, "profiling_name": "nccl:all_reduce", "state": "completed", "process_group": "PH"}
ok = {"collective_seq_id": 2, "profiling_name": "nccl:all_reduce", "state": "completed", "process_group": ("0", "")}
data = pickle.dumps({"entries": [e, ok]}, 2)
data = data.replace(b"X\\x02\\x00\\x00\\x00PH", b")" + b"\\x85" * 1_000_000)
d = parse_dump_bytes(data, "deep", walk=False)  # a reader process's path: no opcode walk first
print(len(d), d.groups[d.pg[1]])
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["2", "('0',", "'')"]


def test_a_deeply_nested_tuple_is_refused_before_the_unpickler_hashes_it():
    """A million-deep tuple as a dict key: the C unpickler hashes it while it builds the
    dict, which overflows the C stack (the process dies).  Read in this process (few files,
    the Service) the opcode walk refuses it first, with the byte offset.  Run in a fresh
    interpreter: a regression kills that one, not the test run."""
    import subprocess
    import sys

    script = """
from rulekit.inputs.flight_recorder import FRDumpError, parse_dump_bytes
data = b"\\x80\\x02}N" + b"\\x85" * 1_000_000 + b"K\\x01s."
try:
    parse_dump_bytes(data, "deep-key")
except FRDumpError as e:
    print("refused", e.offset, e.message)
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.startswith("refused 1004 tuples nest more than 1000 deep"), out.stdout


def test_equal_signatures_are_equal_bytes_whatever_the_dump_shares():
    """Ranks are compared by their signature bytes: a dump whose entries share one sizes
    list (a pickle's memo) and one that copies it, in tuples or lists, pickled or JSON,
    give the same bytes for the same op, sizes and dtypes, so no collective looks
    different on one rank for how its dump was written."""
    d = Sim(world=2, tp=2, steps=4).dumps()[0]
    shared = [1048576]
    a = json.loads(json.dumps(d))
    b = json.loads(json.dumps(d))
    for e in a["entries"]:
        e["input_sizes"] = [shared]
        e["output_sizes"] = [shared]
    for e in b["entries"]:
        e["input_sizes"] = ([1048576],)
        e["output_sizes"] = [(1048576,)]
        e["input_dtypes"] = tuple(e["input_dtypes"])
    got = [parse_dump_json(x, "w", 0) for x in (a, b)]
    got.append(parse_dump_bytes(pickle.dumps(a, protocol=2), "p", 0))
    got.append(parse_dump_bytes(json.dumps(b).encode(), "j", 0))
    blobs = [[x.sigs[x.sig[i]] for i in range(len(x))] for x in got]
    assert all(bl == blobs[0] for bl in blobs[1:])
    assert not got[0].problems and len(set(blobs[0])) == len(got[0].sigs)


def test_scanner_agrees_with_pickletools_on_every_generated_dump():
    """The fast opcode walk accepts what pickletools parses (protocols 0-5) and stops where it stops."""
    import pickletools

    d = Sim(world=2, tp=2, steps=3).dumps()[0]
    for proto in range(pickle.HIGHEST_PROTOCOL + 1):
        data = pickle.dumps(d, protocol=proto)
        assert {op.name for op, _, _ in pickletools.genops(data)} <= _ALLOWED
        check_pickle(data, "ok")
        for cut in range(1, len(data), max(1, len(data) // 40)):
            with pytest.raises(FRDumpError):
                check_pickle(data[:cut], "cut")


def test_malformed_entries_are_skipped_and_listed():
    d = Sim(world=2, tp=2).dumps()[0]
    d["entries"][0]["state"] = "bogus"
    del d["entries"][1]["collective_seq_id"]
    dump = parse_dump_json(d, "w", 0)
    assert len(dump.entries) == len(d["entries"]) - 2
    assert any("entries[0].state" in p for p in dump.problems)
    assert any("entries[1].collective_seq_id" in p for p in dump.problems)


# ---- the matching ------------------------------------------------------------------------------


def test_world_only_two_hangs():
    a = analyze(_parsed(Sim(world=16, tp=16, faults={3: Fault("hang", 4), 12: Fault("hang", 4)})), 16)
    assert a.culprit_ranks == [3, 12]
    s = a.stuck[0]
    assert (s.group, s.seq, s.states["not_reached"]) == ("0", 5, [3, 12])


def test_dead_rank_without_dump_is_named():
    a = analyze(_parsed(Sim(world=16, tp=8, faults={5: Fault("dead", 3)})), 16)
    assert a.culprit_ranks == [5] and a.missing_dumps == [5]


def test_stuck_gpu_is_told_from_a_rank_queued_behind_another_group():
    a = analyze(_parsed(Sim(world=16, tp=4, faults={2: Fault("gpu", 2), 9: Fault("hang", 2, 1)})), 16)
    assert a.culprit_ranks == [2, 9]
    dp0 = next(s for s in a.stuck if s.desc == "DATA_PARALLEL_GROUP" and 0 in s.members)
    assert dp0.culprits == [] and "rank 0 is still on collective 2 (nccl:all_reduce) of pg 1" in dp0.reason


def test_timing_off_cannot_see_a_stuck_gpu():
    a = analyze(_parsed(Sim(world=8, tp=8, timing=False, faults={2: Fault("gpu", 2)})), 8)
    assert a.culprit_ranks == [] and a.stuck and a.stuck[0].inside and a.undecided == [a.stuck[0]]
    assert "every member reached it and none completed it" in a.stuck[0].reason


def test_a_wrapped_ring_buffer_is_not_a_culprit():
    """Rank 0's buffer (TORCH_NCCL_TRACE_BUFFER_SIZE=1) kept only its last entry, and no
    pg_status: what it dropped had completed, so only the rank that never reached the
    stuck collective is named."""
    dumps = Sim(world=4, tp=4, steps=8, faults={2: Fault("hang", 8)}).dumps()
    dumps[0]["entries"] = dumps[0]["entries"][-1:]  # only the stuck all_reduce
    dumps[0]["pg_status"] = {}
    a = analyze({r: parse_dump_json(d, f"r{r}", r) for r, d in dumps.items()}, 4)
    assert a.culprit_ranks == [2]


def test_mismatched_sizes_are_found():
    a = analyze(_parsed(Sim(world=16, tp=8, faults={6: Fault("sizes", 3)})), 16)
    (m,) = a.mismatches
    assert (m.group, m.seq, m.what, m.ranks) == ("1", 3, "sizes", [6])
    assert m.expected["input_sizes"] == [[1048576]] and m.found[6]["input_sizes"] == [[1048576 + 4096]]


def test_p2p_waits_for_the_peer_that_never_posted():
    def entry(name, state, rid):
        return {"record_id": rid, "pg_id": 0, "process_group": ("0", "default_pg"), "collective_seq_id": 0,
                "p2p_seq_id": rid + 1, "profiling_name": name, "state": state, "is_p2p": True,
                "input_sizes": [[8]], "output_sizes": [[8]]}
    cfg = {"0": {"name": "0", "desc": "default_pg", "ranks": "[0, 1]"}}
    d0 = parse_dump_json({"pg_config": cfg, "entries": [entry("nccl:send 0->1", "scheduled", 0)]}, "r0", 0)
    d1 = parse_dump_json({"pg_config": cfg, "entries": []}, "r1", 1)
    assert analyze({0: d0, 1: d1}).culprit_ranks == [1]
    d1 = parse_dump_json({"pg_config": cfg, "entries": [entry("nccl:recv 1<-0", "scheduled", 0)]}, "r1", 1)
    assert analyze({0: d0, 1: d1}).culprit_ranks == []


def test_pipeline_p2p_names_the_stage_both_neighbours_wait_for():
    """A 4-stage pipeline on one group: stage 2 hangs, so stage 1's send to it and stage
    3's receive from it never complete; stage 2 posted neither."""
    def entry(name, state, rid):
        return {"record_id": rid, "pg_id": 0, "process_group": ("0", "default_pg"), "collective_seq_id": 0,
                "p2p_seq_id": rid + 1, "profiling_name": name, "state": state, "is_p2p": True,
                "input_sizes": [[8]], "output_sizes": [[8]]}
    cfg = {"0": {"name": "0", "desc": "default_pg", "ranks": "[0, 1, 2, 3]"}}
    raw = {0: [entry("nccl:send 0->1", "completed", 0)],
           1: [entry("nccl:recv 1<-0", "completed", 0), entry("nccl:send 1->2", "started", 1)],
           2: [],
           3: [entry("nccl:recv 3<-2", "started", 0)]}
    a = analyze({r: parse_dump_json({"pg_config": cfg, "entries": es}, f"r{r}", r) for r, es in raw.items()})
    assert a.culprit_ranks == [2]
    assert sorted((s.op, s.waiting[0]) for s in a.stuck if s.kind == "p2p") == [
        ("nccl:recv 3<-2", 3), ("nccl:send 1->2", 1)]


def _groups_of(sim: Sim, rank: int) -> set[str]:
    return {g for g, (_, rs) in sim.groups().items() if rank in rs and g != "0"}


def test_fault_injection_sweep_never_names_a_healthy_rank():
    """Every pair of faults (hang / dead / gpu) at the same step, for three layouts: the
    culprits are always a subset of the injected ranks, and exactly them unless the
    second fault sits behind the first in a group they share (then it never happened
    before the hang, and no dump can show it)."""
    for tp in (16, 8, 4):
        for kinds in itertools.product(("hang", "dead", "gpu"), repeat=2):
            for a, b in [(3, 12), (3, 5), (0, 15), (1, 9), (7, 8)]:
                for ops in ([(0, 0)] if tp == 16 else list(itertools.product((0, 1), repeat=2))):
                    sim = Sim(world=16, tp=tp, faults={a: Fault(kinds[0], 4, ops[0]), b: Fault(kinds[1], 4, ops[1])})
                    got = analyze(_parsed(sim), 16).culprit_ranks
                    case = (tp, kinds, (a, b), ops)
                    assert set(got) <= {a, b}, case
                    if ops[0] == ops[1] or not (_groups_of(sim, a) & _groups_of(sim, b)):
                        assert got == sorted([a, b]), case


# ---- end to end --------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["pickle", "json"])
@pytest.mark.parametrize("nodes, tp, faults", [
    (NODES2, 8, {3: Fault("hang", 4), 12: Fault("hang", 4)}),
    (NODES4, 4, {1: Fault("hang", 5), 14: Fault("dead", 5)}),
    (NODES4, 16, {6: Fault("gpu", 3), 9: Fault("hang", 3)}),
    (NODES4, 8, {2: Fault("dead", 2, 1), 13: Fault("gpu", 2, 1)}),
])
def test_sixteen_ranks_two_faults_name_exactly_the_injected_ranks(bundled, tmp_path, fmt, nodes, tp, faults):
    sim = Sim(world=16, tp=tp, faults=faults)
    job = write_job(tmp_path / "job", sim, nodes, fmt=fmt)
    res = attribute_dir(bundled, job)
    fr = res["collectors"]["flight_recorder"]
    tpn = 16 // len(nodes)
    want_nodes = sorted({nodes[r // tpn] for r in faults})
    assert fr["culprit_ranks"] == sorted(faults)
    assert fr["culprit_nodes"] == want_nodes
    assert [c["node"] for c in fr["culprits"]] == [nodes[r // tpn] for r in sorted(faults)]
    # who, not why: no device evidence, so not hardware; the nodes are suspected, never certain
    assert (res["outcome"], res["confidence"]) == ("unknown", "low")
    assert res["root_cause"]["symptom"] == "NCCL_FR_CULPRIT_RANK"
    assert sorted(b["node"] for b in res["bad_nodes"]) == want_nodes  # no healthy node blamed
    assert {b["confidence"] for b in res["bad_nodes"]} == {"suspected"}
    assert all(c["verdict"] == "suspected" for c in fr["culprits"])
    assert not res.get("rule_errors")
    # the victims' watchdog timeouts are demoted
    assert "NCCL_WATCHDOG_TIMEOUT" not in res["symptoms"]
    assert any(e["symptom"] == "NCCL_WATCHDOG_TIMEOUT" and e["event_type"] == "Attribution.node.interesting"
               for e in res["evidence"])


def test_gpu_error_on_the_culprit_node_makes_it_hardware(bundled, tmp_path):
    sim = Sim(world=16, tp=8, faults={5: Fault("dead", 4)})
    xid = "Aug 11 03:31:02 node0001 kernel: [ 5120.1] NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."
    job = write_job(tmp_path / "job", sim, NODES2, syslog={"node0001": [xid]})
    res = attribute_dir(bundled, job)
    assert res["outcome"] == "hardware"
    assert res["root_cause"]["symptom"].startswith("XID-79") and res["root_cause"]["node"] == "node0001"
    assert [b["node"] for b in res["bad_nodes"]] == ["node0001"]
    (c,) = res["collectors"]["flight_recorder"]["culprits"]
    assert (c["rank"], c["verdict"], c["confidence"]) == (5, "hardware", "certain")
    assert c["node_hardware"][0].startswith("XID-79")


def test_gil_evidence_on_the_culprit_rank_makes_it_workload(bundled, tmp_path):
    sim = Sim(world=16, tp=8, faults={11: Fault("hang", 4)})
    pyspy = ['[rank11]: Thread 0x7F3A2B1C4740 (active+gil): "MainThread"',
             "[rank11]:     _compile (re/_compiler.py:755)"]
    job = write_job(tmp_path / "job", sim, NODES2, applog_extra=pyspy)
    res = attribute_dir(bundled, job)
    assert res["outcome"] == "application"
    assert res["root_cause"]["symptom"] == "NCCL_FR_CULPRIT_WORKLOAD"
    (c,) = res["collectors"]["flight_recorder"]["culprits"]
    assert (c["rank"], c["node"], c["verdict"]) == (11, "node0002", "workload")
    assert c["evidence"][0]["symptom"] == "PYTHON_GIL_HELD"


def test_nvrx_fault_injection_run_names_the_injected_ranks(bundled, tmp_path):
    """An NVRx resiliency test injecting GPU_SLEEP on ranks 3 and 12: the injector's lines
    explain the job, and the flight recorder names exactly those two ranks."""
    sim = Sim(world=16, tp=8, faults={3: Fault("gpu", 4), 12: Fault("gpu", 4)})
    inj = [f"[default{r}]:INFO:nvidia_resiliency_ext.shared_utils.inject_fault:seed=7 num_ranks_to_inject=2 "
           f"ranks_to_inject=[3, 12] fault=<Fault.GPU_SLEEP: 2> delay=30.000" for r in (3, 12)]
    res = attribute_dir(bundled, write_job(tmp_path / "job", sim, NODES2, applog_extra=inj))
    assert res["root_cause"]["symptom"] == "NVRX_INJECTED_GPU_SLEEP"
    fr = res["collectors"]["flight_recorder"]
    assert fr["culprit_ranks"] == [3, 12] and fr["culprit_nodes"] == NODES2
    assert {c["verdict"] for c in fr["culprits"]} == {"workload"}
    assert "NCCL_FR_CULPRIT_RANK" not in res["symptoms"]


def test_evidence_every_rank_printed_does_not_single_out_the_culprit(bundled, tmp_path):
    sim = Sim(world=16, tp=8, faults={11: Fault("hang", 4)})
    dumps = [f"[rank{r}]: Timeout (0:10:00)!" for r in range(16)]
    res = attribute_dir(bundled, write_job(tmp_path / "job", sim, NODES2, applog_extra=dumps))
    assert res["root_cause"]["symptom"] == "NCCL_FR_CULPRIT_RANK"


def test_mismatch_is_a_workload_bug(bundled, tmp_path):
    sim = Sim(world=16, tp=8, faults={6: Fault("sizes", 3)})
    res = attribute_dir(bundled, write_job(tmp_path / "job", sim, NODES2))
    assert res["outcome"] == "application"
    assert res["root_cause"]["symptom"] == "NCCL_FR_COLLECTIVE_MISMATCH"
    assert res["collectors"]["flight_recorder"]["mismatches"][0]["ranks"] == [6]


def test_a_malicious_dump_in_fr_is_noted_and_the_rest_still_used(bundled, tmp_path):
    marker = tmp_path / "pwned"
    sim = Sim(world=8, tp=8, faults={2: Fault("hang", 3)})
    job = write_job(tmp_path / "job", sim, ["node0001"])
    (job / "fr" / "nccl_trace_rank_2").write_bytes(pickle.dumps({"entries": [_Evil(marker)]}))
    (job / "fr" / "README.md").write_text("collected by the on-call script\n")
    jd = read_job_dir(job)
    assert any(d.code == "RK504" and "fr/README.md" in d.message for d in jd.notes)
    (note,) = [d for d in jd.notes if d.code == "RK507"]
    assert note.span.file == "fr/nccl_trace_rank_2" and note.data["byte"] >= 0
    res = attribute_dir(bundled, job)
    assert not marker.exists()
    assert res["collectors"]["flight_recorder"]["culprit_ranks"] == [2]  # the hung rank left a refused dump
    assert any(n["code"] == "RK507" for n in res["notes"])


def test_observation_records_carry_the_same_dumps(bundled, tmp_path):
    sim = Sim(world=16, tp=8, faults={3: Fault("hang", 4), 12: Fault("hang", 4)})
    job = write_job(tmp_path / "job", sim, NODES2)
    dumps = sim.dumps()
    for p in (job / "fr").iterdir():
        p.unlink()
    (job / "fr").rmdir()
    with open(job / "observations.jsonl", "w") as f:
        for r, d in dumps.items():
            d = json.loads(json.dumps(d))  # tuples -> lists, as a JSON producer sends them
            f.write(json.dumps({"kind": "flight_recorder", "rank": r, "dump": d}) + "\n")
        f.write(json.dumps({"kind": "flight_recorder", "dump": {}}) + "\n")
    res = attribute_dir(bundled, job)
    assert res["collectors"]["flight_recorder"]["culprit_ranks"] == [3, 12]
    assert any(n["code"] == "RK507" and "rank" in n["message"] for n in res["notes"])


def test_no_dumps_no_collector_and_the_hang_example_stays_unknown(bundled):
    res = attribute_dir(bundled, Path(__file__).resolve().parent.parent / "examples" / "nccl-hang-unknown")
    assert "flight_recorder" not in res["collectors"]
    assert res["outcome"] == "unknown"


def test_explain_shows_the_flight_recorder_analysis(bundled, tmp_path):
    sim = Sim(world=16, tp=8, faults={3: Fault("hang", 4), 12: Fault("hang", 4)})
    d = explain_job(bundled, write_job(tmp_path / "job", sim, NODES2))
    assert d["collectors"]["flight_recorder"]["culprit_ranks"] == [3, 12]
    text = render_job_trace(d)
    assert "Flight recorder (16 dump(s)):" in text
    assert "culprit rank 3 on node0001: suspected" in text
    assert "not reached 12, started 8-11,13-15" in text


# ---- the DSL reads the analysis ----------------------------------------------------------------

USER_RULES = '''
author "fleet team"

refiner FrSuspectIsInfrastructure POST_OUTCOME {
  docs "Our fleet sends flight-recorder suspects to node triage, not to hardware RMA."
  when outcome unknown and any "NCCL_FR_CULPRIT_RANK" set outcome infrastructure sub_domain node
}

collector FrCulprits {
  gather rank, node, pg, seq, state from bad_node "NCCL_FR_CULPRIT_*"
}
'''


def test_a_dsl_rule_reads_the_flight_recorder_culprits(make_corpus, tmp_path):
    user = make_corpus({"fleet.rule": USER_RULES})
    res = load_corpus([bundled_rules_path(), user])
    assert res.engine is not None, [str(d) for d in res.diagnostics if d.severity.value == "error"]
    sim = Sim(world=16, tp=8, faults={3: Fault("hang", 4), 12: Fault("hang", 4)})
    out = attribute_dir(res.engine, write_job(tmp_path / "job", sim, NODES2))
    assert (out["outcome"], out["sub_domain"]) == ("infrastructure", "node")
    rows = out["collectors"]["FrCulprits"]
    assert [(r["rank"], r["node"], r["pg"], r["seq"], r["state"]) for r in rows] == [
        (3, "node0001", "1", 4, "not_reached"), (12, "node0002", "2", 4, "not_reached")]


# ---- every dump counts; limits that were hit are said ---------------------------------------------


def test_past_256_ranks_every_dump_counts_and_only_the_hung_rank_is_named(bundled, tmp_path):
    """320 ranks (40 nodes), one hung: the dumps reach the analysis as data, so no
    per-rule cap drops the ones past the 256th (which named 64 ranks on 10 nodes)."""
    sim = Sim(world=320, tp=8, steps=2, faults={301: Fault("hang", 2)})
    nodes = [f"node{i:04d}" for i in range(40)]
    res = attribute_dir(bundled, write_job(tmp_path / "job", sim, nodes))
    fr = res["collectors"]["flight_recorder"]
    assert fr["dumps"] == 320 and fr["missing_dumps"] == []
    assert fr["culprit_ranks"] == [301]
    assert [b["node"] for b in res["bad_nodes"]] == ["node0037"]
    assert "limits_hit" not in res


def test_a_data_extractor_past_the_group_cap_is_a_limit_hit(make_corpus):
    """Values rules read from `data` events past the per-rule cap are counted, not kept:
    the result says so (limits_hit), since a rule reading them may decide otherwise."""
    from rulekit.engine.session import Session
    from rulekit.inputs.jobinfo import JobInfo
    from rulekit.inputs.observation import Observation

    corpus = make_corpus({"progress.toml": 'author = "t"\n[[extractor]]\nname = "Progress"\n'
                                           "match_re = 'step=(?P<step>\\d+)'\n"
                                           'emit = { type = "data", fields = { kind = "progress" } }\n'})
    engine = load_corpus([corpus]).engine
    with Session(engine, JobInfo(id="j", nodes=["n1"]), group_cap=3) as s:
        s.ingest(Observation(source="applog", lines=[f"step={i} loss=1.0" for i in range(10)]))
        res = s.attribute()
    assert res["limits_hit"] == [{"limit": "group_cap", "value": 3, "rule": "Progress",
                                  "what": "extractor `Progress` on n1: 7 more data event(s) past the cap were counted, "
                                          "not kept; rules reading them saw only the first"}]
    with Session(engine, JobInfo(id="j", nodes=["n1"])) as s:
        s.ingest(Observation(source="applog", lines=[f"step={i} loss=1.0" for i in range(10)]))
        assert "limits_hit" not in s.attribute()


def test_bulk_reading_in_capped_workers_refuses_a_memo_bomb_and_reads_the_rest(tmp_path):
    """Many files: read in worker processes under an address-space cap, without the
    opcode walk; a memo bomb (LONG_BINPUT 2**31) is still refused, located, and the
    other dumps are read."""
    from rulekit.inputs.fr_bulk import can_cap, read_dump_files

    if not can_cap():
        pytest.skip("no RLIMIT_AS here")
    dumps = Sim(world=20, tp=4, faults={7: Fault("hang", 3)}).dumps()
    paths = write_pickle(dumps, tmp_path / "fr")
    (tmp_path / "fr" / "nccl_trace_rank_3").write_bytes(b"\x80\x02]r\x00\x00\x00\x80.")
    evil = tmp_path / "fr" / "nccl_trace_rank_5"
    evil.write_bytes(pickle.dumps({"entries": [_Evil(tmp_path / "pwned")]}, protocol=2))
    got = read_dump_files([(p, p.name) for p in paths], workers=2)
    assert isinstance(got[3], FRDumpError) and "memo index" in got[3].message
    assert isinstance(got[5], FRDumpError) and "refused without being run" in got[5].message
    assert got[5].offset is not None and not (tmp_path / "pwned").exists()
    ok = {d.rank: d for d in got if not isinstance(d, FRDumpError)}
    assert len(ok) == 18
    serial = {d.rank: d for d in read_dump_files([(p, p.name) for p in paths], workers=0)
              if not isinstance(d, FRDumpError)}
    assert {r: d.to_json() for r, d in ok.items()} == {r: d.to_json() for r, d in serial.items()}


def test_restart_attempts_in_one_folder_are_analysed_apart():
    """Attempt 1 hung on rank 3 (every rank dumped); attempt 2 hung on rank 0, which left
    no dump, so rank 0's file is attempt 1's.  Mixed, rank 0's old dump would put it in
    the collective the others wait in; split by time, attempt 2 names rank 0."""
    first = Sim(world=4, tp=2, steps=6, faults={3: Fault("hang", 5)}).dumps()
    second = Sim(world=4, tp=2, steps=3, faults={0: Fault("dead", 2, 1)}).dumps()
    shift = 3_600 * 10**9  # an hour later
    for d in second.values():
        for e in d["entries"]:
            e["time_created_ns"] += shift
            for k in ("time_discovered_started_ns", "time_discovered_completed_ns"):
                if e[k] is not None:
                    e[k] += shift
    mixed = {**{r: parse_dump_json(d, f"a1/{r}", r) for r, d in first.items() if r == 0},
             **{r: parse_dump_json(d, f"a2/{r}", r) for r, d in second.items()}}
    a = analyze(list(mixed.values()), 4)
    assert a.culprit_ranks == [0] and a.epoch == 1 and a.missing_dumps == [0]
    assert [e.dump_ranks for e in a.earlier] == [[0]] and a.earlier[0].culprit_ranks == []


def test_a_reader_process_that_dies_is_a_refused_dump_not_a_hang(tmp_path):
    """A worker process killed mid-file (OOM killer, a crash in C) gives that file an
    FRDumpError, no hang, and the files the broken pool left are read again one by one;
    errors cross processes intact.  Run in a fresh interpreter:
    this one may hold threads other tests left (then it reads without forking)."""
    import pickle as _pickle
    import subprocess
    import sys

    from rulekit.inputs import fr_bulk
    from rulekit.inputs.fr_pickle import FRDumpError

    e = _pickle.loads(_pickle.dumps(FRDumpError("f", "bad", 3, 1, 2)))
    assert (e.where, e.message, e.offset, e.line, e.col, str(e)) == ("f", "bad", 3, 1, 2, "f at byte 3: bad")
    if not fr_bulk.can_cap():
        pytest.skip("no RLIMIT_AS here")
    paths = write_pickle(Sim(world=20, tp=4).dumps(), tmp_path / "fr")
    script = f"""
import os, sys
from pathlib import Path
from rulekit.inputs import fr_bulk
from rulekit.inputs.fr_pickle import FRDumpError
real = fr_bulk._read_capped
def dies_on_rank_4(item):
    if item[1].endswith("_4"):
        os._exit(9)  # as if the kernel killed the reader
    return real(item)
dies_on_rank_4.__qualname__ = "_read_capped"
dies_on_rank_4.__module__ = "rulekit.inputs.fr_bulk"
fr_bulk._read_capped = dies_on_rank_4
paths = sorted(Path({str(tmp_path / "fr")!r}).iterdir())
assert fr_bulk.workers_for(len(paths), 2) == 2
got = fr_bulk.read_dump_files([(p, p.name) for p in paths], workers=2)
assert len(got) == 20, len(got)
bad = [g for g in got if isinstance(g, FRDumpError)]
assert [g.where for g in bad] == ["nccl_trace_rank_4"], bad
assert all("ended without an answer" in g.message for g in bad)
print("ok", len(bad))
"""
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.startswith("ok"), r.stdout + r.stderr
