"""The local process pool on real forked workers: jobs go out largest first, results
can be rendered by the workers, the workers inherit a frozen heap (and this process
gets its collector back), and workers that fill the cores scan serially."""
from __future__ import annotations

import gc
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

from rulekit.executors import CorpusSpec, Job, make_executor
from rulekit.executors.base import engine_for, job_weight, run_job
from rulekit.extract.parallel import usable_cores

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "xid149-nvlink"
BUNDLED = CorpusSpec.of(None)


@dataclass(frozen=True)
class Probe:
    """A task that reports where and when it ran, and what its worker inherited."""

    name: str
    weight: int = 0
    pause: float = 0.0

    @property
    def label(self) -> str:
        return self.name

    def key(self, options: str = "") -> str:
        return f"probe-{self.name}"

    def run(self, engine, with_trace=False, progress=None) -> dict:
        start = time.monotonic()  # system-wide: comparable across the workers
        time.sleep(self.pause)
        return {"name": self.name, "pid": os.getpid(), "start": start, "frozen": gc.get_freeze_count(),
                "scan_workers": engine.options.scan_workers, "scan_share": engine.options.max_scan_workers}


def pid_text(result: dict) -> str:
    return f"rendered in {os.getpid()}: {result['name']}"


def test_jobs_go_out_largest_first():
    weights = [1, 50, 5, 40, 2, 30]
    jobs = [Probe(f"w{w}", weight=w, pause=0.3) for w in weights]
    with make_executor("local", BUNDLED, workers=2) as ex:
        outcomes = list(ex.map(jobs))
    assert all(o.ok for o in outcomes), [o.error for o in outcomes]
    started = [o.job.weight for o in sorted(outcomes, key=lambda o: o.result["start"])]
    # two workers take the queue in order: each pair of starts is the next two heaviest
    assert [set(started[i:i + 2]) for i in (0, 2, 4)] == [{50, 40}, {30, 5}, {2, 1}], started


def test_a_job_weighs_the_bytes_of_its_files(tmp_path):
    d = tmp_path / "job"
    (d / "applog").mkdir(parents=True)
    (d / "job.toml").write_bytes(b"x" * 10)
    (d / "applog" / "train.log").write_bytes(b"y" * 1000)
    (d / "applog" / "deeper").mkdir()
    (d / "applog" / "deeper" / "ignored.log").write_bytes(b"z" * 99)
    assert job_weight(Job.of(d)) == 1010
    assert job_weight(Job.of(tmp_path / "missing")) == 0
    assert job_weight(Probe("p", weight=7)) == 7


def test_results_can_be_rendered_by_the_workers():
    jobs = [Probe(f"r{i}") for i in range(4)]
    with make_executor("local", BUNDLED, workers=2) as ex:
        outcomes = list(ex.map(jobs, render=pid_text))
    for o in outcomes:
        assert o.text == f"rendered in {o.result['pid']}: {o.job.name}"
        assert o.result["pid"] != os.getpid()


def test_a_real_job_rendered_by_a_worker_is_what_this_process_renders():
    from rulekit.cli.attribute import json_text

    with make_executor("local", BUNDLED, workers=2) as ex:
        (o,) = [o for o in ex.map([Job.of(EXAMPLE), Probe("other")], render=json_text) if isinstance(o.job, Job)]
    here = run_job(engine_for(BUNDLED), Job.of(EXAMPLE))
    assert o.text == json.dumps(here.result, indent=2, default=str) == json_text(o.result)


def test_the_workers_inherit_a_frozen_heap_and_this_process_gets_its_collector_back():
    assert gc.get_freeze_count() == 0
    with make_executor("local", BUNDLED, workers=2) as ex:
        outcomes = list(ex.map([Probe("a"), Probe("b")]))
    assert all(o.result["frozen"] > 1000 for o in outcomes), [o.result["frozen"] for o in outcomes]
    assert gc.get_freeze_count() == 0


def test_workers_that_fill_the_cores_scan_serially():
    n = max(2, usable_cores())
    with make_executor("local", BUNDLED, workers=n) as ex:
        outcomes = list(ex.map([Probe(f"s{i}") for i in range(n)]))
    assert {o.result["scan_share"] for o in outcomes} == {1}  # a log each: no chunk workers
    assert {o.result["scan_workers"] for o in outcomes} == {None}  # (an explicit RULEKIT_SCAN_WORKERS would stand)
    assert engine_for(BUNDLED).options.max_scan_workers is None  # this process's engine is untouched


def test_j_n_is_the_processes_in_all():
    """`-j N` (`cores`): N processes for the whole batch, a job's chunk workers
    included: `-j 1` keeps to one core, in process; `-j 4` with two jobs at once
    leaves each two scan processes; without it, every usable core is shared out."""
    with make_executor("local", BUNDLED, workers=1, cores=1) as ex:
        outcomes = list(ex.map([Probe("one"), Probe("two")]))
    assert {(o.result["pid"], o.result["scan_share"]) for o in outcomes} == {(os.getpid(), 1)}
    with make_executor("local", BUNDLED, workers=2, cores=4) as ex:
        outcomes = list(ex.map([Probe("a"), Probe("b")]))
    assert {o.result["scan_share"] for o in outcomes} == {2}
    with make_executor("local", BUNDLED, workers=1) as ex:  # one job, nothing said: all the cores
        (o,) = ex.map([Probe("alone")])
    assert o.result["scan_share"] == usable_cores()
    assert engine_for(BUNDLED).options.max_scan_workers is None


def test_attribute_j_1_on_one_job_scans_it_on_one_core(monkeypatch):
    from typer.testing import CliRunner

    import rulekit.cli.attribute as cli_attribute
    from rulekit.cli import app

    seen = []
    real = cli_attribute.run_job

    def spy(engine, job, *args, **kw):
        seen.append(engine.options.max_scan_workers)
        return real(engine, job, *args, **kw)

    monkeypatch.setattr(cli_attribute, "run_job", spy)
    for argv, want in ((["-j", "1"], 1), (["-j", "3"], 3), ([], None)):
        r = CliRunner().invoke(app, ["attribute", *argv, str(EXAMPLE)])
        assert r.exit_code == 0, r.output
        assert seen.pop() == want, argv


def test_when_no_worker_can_fork_the_jobs_run_here(monkeypatch):
    def no_fork():
        raise BlockingIOError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(os, "fork", no_fork)
    jobs = [Probe(f"f{i}", weight=i) for i in range(5)] + [Job.of(EXAMPLE)]
    with make_executor("local", BUNDLED, workers=2) as ex:
        outcomes = list(ex.map(jobs))
    assert sorted(o.job.label for o in outcomes) == sorted(j.label for j in jobs)  # each once
    assert all(o.ok and o.worker == "in process" for o in outcomes), [(o.worker, o.error) for o in outcomes]
    assert gc.get_freeze_count() == 0


def test_when_only_some_workers_fork_none_is_left_behind_and_the_jobs_run_here(monkeypatch):
    import multiprocessing

    real_fork, forks = os.fork, []

    def second_fork_fails():
        if forks:
            raise BlockingIOError(11, "Resource temporarily unavailable")
        forks.append(1)
        return real_fork()

    monkeypatch.setattr(os, "fork", second_fork_fails)
    jobs = [Probe(f"h{i}") for i in range(4)]
    with make_executor("local", BUNDLED, workers=2) as ex:
        outcomes = list(ex.map(jobs))
    monkeypatch.setattr(os, "fork", real_fork)
    assert sorted(o.job.name for o in outcomes) == sorted(j.name for j in jobs)
    assert all(o.worker == "in process" for o in outcomes)
    deadline = time.monotonic() + 10
    while multiprocessing.active_children() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert multiprocessing.active_children() == []


def test_one_worker_per_usable_core_by_default():
    """`-j 0` counts the cores this process may run on (taskset, a container's cpuset), not the machine's."""
    import subprocess
    import sys

    if not hasattr(os, "sched_setaffinity"):
        return
    code = ("import os; os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]}); "
            "from rulekit.executors import CorpusSpec, make_executor; "
            "print(make_executor('local', CorpusSpec.of(None)).workers)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "1", out.stderr


def test_blueprint_run_j_1_attributes_on_one_core(monkeypatch, tmp_path):
    """`rulekit blueprint run -j 1` runs the attempts here, their logs scanned on one
    core; without `-j` the scan's automatic choice stands."""
    from typer.testing import CliRunner

    import rulekit.blueprint.orchestrator as orchestrator
    from rulekit.cli import app

    seen = []
    real = orchestrator.Attributor

    class Spy(real):  # type: ignore[misc, valid-type]
        def __init__(self, engine=None, **kw):
            seen.append(None if engine is None else engine.options.max_scan_workers)
            super().__init__(engine=engine, **kw)

    monkeypatch.setattr(orchestrator, "Attributor", Spy)
    static = EXAMPLE.parent / "blueprint" / "static"
    for argv, want in ((["-j", "1"], 1), ([], None)):
        db = tmp_path / f"out{len(seen)}.db"
        r = CliRunner().invoke(app, ["blueprint", "run", "--configs", str(static), "--output", f"sqlite:{db}", "-q",
                                     *argv])
        assert r.exit_code == 0, r.output
        assert seen.pop() == want, argv
