"""What reads as an error (rulekit.extract.errorline and its data), and the engine's
fallback for error lines no rule explains: the line is dropped where another rule
reads it (an extractor, a line-only accumulator that made an event, an accumulator
whose reading covers it), the generic symptom decides only when nothing else does,
never outranks a known victim, never makes a node certain, and yields to the job's
state; `unknown` is left only when no line reads as an error."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import re2

from rulekit.engine.session import Session
from rulekit.extract.errorline import reads_as_error, vocabulary
from rulekit.inputs.jobinfo import JobInfo
from rulekit.inputs.observation import Observation
from rulekit.rules.loader import load_corpus

# (line, source, cue, component)
ERRORS = [
    ("2026-06-01T03:11:00 ERROR cache shard 0 failed to load", "applog", "level", "program"),  # `:00 ERROR` no counter
    ("[rank3]: SomeFrameworkError: the planner found no valid schedule", "applog", "exception", "python"),
    ("ValueError: bad shape (3, 4)", "applog", "exception", "python"),
    ("node0003:2211:2290 [0] transport/net_ib.cc:1296 NCCL WARN NET/IB : Got completion from peer", "applog",
     "nccl", "infiniband"),
    ("node0003:2211:2290 [0] NCCL WARN NET/OFI Request completed with error", "applog", "nccl", "efa"),
    ("E0601 03:22:41.426000 4711 vendor/thing.cc:42] dispatcher stopped unexpectedly", "applog", "level", "program"),
    ("[rank1]:[E429 13:55:49.384372190 ProcessGroupNCCL.cpp:1743] something happened", "applog", "level", "nccl"),
    ("[E ProcessGroupNCCL.cpp:475] Some NCCL operations have failed or timed out.", "applog", "level", "nccl"),
    ("slurmstepd: error: pyxis: couldn't start container", "applog", "level", "container"),
    ("slurmstepd: error: prolog failed on this host", "applog", "level", "scheduler"),
    ("terminate called after throwing an instance of 'std::runtime_error'", "applog", "exception", "cpp"),
    ("cp: cannot create regular file '/scratch/x': No space left on device", "applog", "strerror", "storage"),
    ("Aug 11 03:14:22 node0001 kernel: BUG: unable to handle page fault for address", "syslog", "kernel", "kernel"),
    ("kern  :err   : [ 5.0] nvidia: probe of 0000:3b:00.0 failed with error -1", "syslog", "level", "gpu"),
    ("Jun 01 03:10:40 node0001 kernel: EDAC MC0: 1 UE memory read error on DIMM#0", "syslog", "level", "host_memory"),
    ("Jun 01 03:10:40 node0001 systemd[1]: foo.service: Failed with result 'exit-code'.", "syslog", "words", "host"),
    ("2026-06-01 03:10:40 ERROR [main] job runner gave up", "applog", "level", "program"),
    ("\x1b[31mRuntimeError: colored\x1b[0m", "applog", "exception", "python"),
    ("libfabric:4711:1690000000:efa:ep_ctrl:efa_rdm_ep_open():512 fi_strerror: Operation failed", "applog",
     "words", "efa"),
]

BENIGN = [
    "0:  Original exception: ",
    "The above exception was the direct cause of the following exception:",
    "INFO:root:no error found in health check; all 8 GPUs nominal",
    "node0003:2211:2290 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC error-free",
    "step 100 | loss 2.31 | errors=0 | error_rate 0.00 | grad_norm 1.2 | val top-1 error: 23.5",
    "Namespace(on_error='skip', fail_fast=False, mode=abort)",
    "[2026-06-01 03:10:40] WARNING: retrying the download after a failure",
    "I0601 03:22:41.426 12 foo.cc:12] failed? no",
    "[rank3]:[W602 11:18:52.489301002 ProcessGroupNCCL.cpp:2111] timed out after waiting for dumps",
    '  File "/opt/lib/torch/distributed/elastic/multiprocessing/errors/__init__.py", line 355, in wrapper',
    "    raise RuntimeError('failed to do it')",
    "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x96 (0x1554 in libc10.so)",
    "CUDA kernel errors might be asynchronously reported at some other API call",
    "E0601 03:22:41.426 12 cuda_dnn.cc:8] Unable to register cuDNN factory: one has already been registered",
    "DCGM health check passed: no Xid, no ECC errors, NVLink OK",
    "Tests: 10 passed, 0 failed",
    "https://pytorch.org/docs/stable/elastic/errors.html",
    "loss 2.1 for the non-fatal case",
    "",
]


@pytest.mark.parametrize("line, source, cue, component", ERRORS, ids=[e[0][:40] for e in ERRORS])
def test_error_lines_read_as_errors_with_their_component(line, source, cue, component):
    got = reads_as_error(line, source)
    assert got is not None
    assert (got.cue, got.component.name) == (cue, component)


@pytest.mark.parametrize("line", BENIGN, ids=[b[:40] for b in BENIGN])
def test_benign_lines_do_not(line):
    assert reads_as_error(line) is None
    assert reads_as_error(line, "syslog") is None


@pytest.mark.parametrize("line", [e[0] for e in ERRORS])
def test_the_gate_passes_every_error_line(line):
    """The RE2 trigger is the fallback's gate: a line it does not pass is never looked at."""
    assert re2.compile(vocabulary().trigger).search(line)


def test_a_long_line_is_read_by_its_start():
    assert reads_as_error("ValueError: x" + "y" * 10_000_000) is not None
    assert reads_as_error("z" * 5000 + " ValueError: late") is None  # past MAX_CHARS


def test_every_component_row_names_a_registered_symptom():
    engine = load_corpus(None).engine
    for c in vocabulary().components:
        info = engine.registry.info(c.symptom)
        assert (info.outcome, info.sub_domain, info.rank, info.blame) == (c.outcome, c.sub_domain, 0, c.blame)


# ---- the engine ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def engine():
    return load_corpus(None).engine


def attribute(engine, applog: list[str], syslog: list[str] | None = None, state: str = "FAILED",
              nodes=("node-01",)) -> dict:
    job = JobInfo(id="t", state=state, nodes=list(nodes), tasks_per_node=8)
    with Session(engine, job) as s:
        s.ingest(Observation(source="applog", lines=applog, label="train.log"))
        if syslog:
            s.ingest(Observation(source="syslog", node=nodes[0], lines=syslog, label="n.log"))
        return s.attribute(with_trace=True)


def generic(result: dict) -> list[dict]:
    return [e for e in result["evidence"] if (e["symptom"] or "").startswith("UNEXPLAINED_")]


def test_an_unknown_error_line_is_not_unknown(engine):
    r = attribute(engine, ["loading shards", "FooLib: dispatcher failed to schedule the kernel graph", "bye"])
    assert (r["outcome"], r["sub_domain"], r["confidence"]) == ("application", "program", "low")
    assert r["root_cause"]["symptom"] == "UNEXPLAINED_PROGRAM_ERROR"
    assert r["root_cause"]["evidence"][0]["line_num"] == 2
    assert r["alternatives"] == [{"outcome": "unknown", "sub_domain": "scheduler", "symptom": "SLURM_FAILED"}]
    assert r["bad_nodes"] == []


def test_nothing_reads_as_error_stays_unknown(engine):
    r = attribute(engine, ["loading shards", "iteration 5 | loss 2.0 | errors=0", "bye"])
    assert r["outcome"] == "unknown" and not generic(r)


def test_a_line_another_rule_reads_gets_no_generic_event(engine):
    r = attribute(engine, ["[rank6]: torch.AcceleratorError: CUDA error: an illegal memory access was encountered"])
    assert r["root_cause"]["symptom"] == "cudaErrorIllegalAddress"
    assert not any(t["rule"] == "ErrorLine" for t in r["trace"])  # dropped in extraction, never stored


def test_a_line_only_accumulator_that_reads_the_line_explains_it(engine):
    r = attribute(engine, ["AssertionError: num_layers should be divisible by pipeline_model_parallel_size"])
    assert r["root_cause"]["symptom"] == "PYTHON_EXCEPTION_TAIL"
    assert not any(t["rule"] == "ErrorLine" for t in r["trace"])


def test_hardware_generic_evidence_suspects_the_node(engine):
    r = attribute(engine, [], ["Jun 01 03:10:40 node-01 kernel: NVRM: GPU at PCI:0000:3b:00: fatal bring-up "
                               "error, the device went away"])
    assert (r["outcome"], r["confidence"]) == ("hardware", "low")
    assert [(b["node"], b["confidence"]) for b in r["bad_nodes"]] == [("node-01", "suspected")]


def test_the_job_state_wins_over_generic_lines(engine):
    for state, outcome in (("COMPLETED", "success"), ("TIMEOUT", "timeout")):
        r = attribute(engine, ["FooLib: dispatcher failed to schedule the kernel graph"], state=state)
        assert r["outcome"] == outcome
        assert "UNEXPLAINED_PROGRAM_ERROR" not in r["symptoms"]  # GenericErrorsYield discarded it


def test_a_victim_with_a_known_outcome_outranks_generic_lines(engine):
    r = attribute(engine, [
        "FooLib: dispatcher failed to schedule the kernel graph",
        "[rank0]: torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, remote process "
        "exited or there was a network error, NCCL version 2.21.5",
    ])
    assert r["root_cause"]["symptom"] == "NCCL_REMOTE_ERROR"


def test_a_generic_line_after_a_victim_is_its_cascade(engine):
    watchdog = ("[rank0]:[E1218 20:27:21.426 ProcessGroupNCCL.cpp:629] [Rank 0] Watchdog caught collective "
                "operation timeout: WorkNCCL(SeqNum=6, OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600081 ms")
    after = attribute(engine, [watchdog, "x", "FooLib: dispatcher failed after the timeout"])
    assert after["outcome"] == "unknown"
    assert any(t["rule"] == "GenericErrorsAfterVictims" for t in after["trace"])
    before = attribute(engine, ["FooLib: dispatcher failed to schedule the kernel graph", "x", watchdog])
    assert before["root_cause"]["symptom"] == "UNEXPLAINED_PROGRAM_ERROR"
    # adjacent lines are one moment (a wrapped message): not shown to come first
    adjacent = attribute(engine, ["FooLib: dispatcher failed and", watchdog])
    assert adjacent["outcome"] == "unknown"


def test_explained_lines_do_not_use_up_the_fallback_caps(engine):
    """Hundreds of error lines other rules read, then one no rule reads: the last one is
    still stored (shadowed hits are dropped before any cap counts them)."""
    explained = ["node0001:1111:1190 [3] include/alloc.h:103 NCCL WARN Cuda failure 2 'out of memory'"] * 600
    job = JobInfo(id="t", state="FAILED", nodes=["node-01"], tasks_per_node=8)
    with Session(engine, job, repeat_cap=2, group_cap=5) as s:
        s.ingest(Observation(source="applog", lines=explained + ["FooLib: dispatcher failed to schedule"],
                             label="train.log"))
        s.manager.flush()
        rows = s.manager.conn.execute(
            "SELECT e.line_num FROM events e JOIN rules r ON r.id = e.source_rule WHERE r.name = 'ErrorLine'"
        ).fetchall()
        repeats = s.manager.conn.execute(
            "SELECT count(*) FROM event_repeats x JOIN rules r ON r.id = x.source_rule WHERE r.name = 'ErrorLine'"
        ).fetchone()
    assert rows == [(601,)] and repeats == (0,)


FALLBACK_CORPUS = '''
from rulekit.plugin import Accumulator, EventSpec, accumulator_def, register_symptom, reads_as_error

register_symptom("BLOCK", outcome="application", sub_domain="python", rank=500, blame="workload")
register_symptom("GENERIC", outcome="network", sub_domain="x", rank=0, blame="none")


@accumulator_def(name="Block", author="t", trigger_re=r"BEGIN BLOCK", max_lines=50, symptoms=("BLOCK",))
class Block(Accumulator):
    def feed(self, line):
        return "END BLOCK" not in line

    def finalize(self):
        return [EventSpec(type="bad_node", symptom="BLOCK")]


@accumulator_def(name="Generic", author="t", trigger_re=r"failed", max_lines=0, fallback=True, symptoms=("GENERIC",))
class Generic(Accumulator):
    def __init__(self, ctx, line, match):
        super().__init__(ctx, line, match)
        self.hit = reads_as_error(line) is not None

    def finalize(self):
        return [EventSpec(type="bad_node", symptom="GENERIC")] if self.hit else []
'''


def test_an_accumulator_reading_explains_the_lines_it_took_in(tmp_path):
    (tmp_path / "rules.py").write_text(FALLBACK_CORPUS)
    engine = load_corpus([tmp_path]).engine
    lines = ["[rank0]: BEGIN BLOCK", "[rank0]: step failed inside", "[rank1]: other rank failed meanwhile",
             "[rank0]: END BLOCK", "[rank0]: after the block it failed"]
    job = JobInfo(id="t", state="FAILED", nodes=["node-01"], tasks_per_node=8)
    with Session(engine, job) as s:
        s.ingest(Observation(source="applog", lines=lines, label="a.log"))
        r = s.attribute(with_trace=True)
    kept = sorted(e["line_num"] for e in r["evidence"] if e["symptom"] == "GENERIC")
    assert kept == [3, 5]  # line 2 is inside rank 0's block; line 3 is another rank's
    gone = [t for t in r["trace"] if t["rule"] == "Generic" and t["action"] == "discard"]
    assert len(gone) == 1 and "inside what Block read (lines 1-2)" in gone[0]["reason"]


def test_a_fallback_must_read_its_line_alone():
    from rulekit.rules.plugins import accumulator_def

    with pytest.raises(ValueError, match="max_lines=0"):
        accumulator_def(name="X", author="t", trigger_re="x", max_lines=3, fallback=True)


def test_the_vocabulary_compiles_its_patterns_on_first_use_and_every_one_compiles():
    """Building the vocabulary (at every start, when the fallback plugin loads) compiles
    nothing; a pattern is compiled the first time a line reaches it; and every pattern of
    the packaged data compiles, with its literal gate (a bad pattern fails here, not in
    a user's run)."""
    from importlib import resources

    from rulekit.extract.errorline import Vocabulary

    voc = Vocabulary.from_toml(resources.files("rulekit").joinpath("data/error_lines.toml").read_text("utf-8"))
    gated = [voc._benign_level, voc._error_level, voc._always, *(p for _, p in voc._cues), *voc._spans,
             *voc._lines, *(c.pattern for c in voc.components if c.pattern is not None)]
    assert gated and all(g._pattern is None for g in gated)
    assert voc.reads_as_error("RuntimeError: something broke") is not None
    assert voc._always._pattern is not None  # compiled by the first line it looked at
    for g in gated:
        assert g.pattern.pattern == g.text
        g.literals  # noqa: B018 - the literal analysis runs without error
