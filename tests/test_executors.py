"""Batch executors on real workers: a local process pool and a Dask `LocalCluster`
of two worker processes (started once for the module, closed by the fixture).

Every example attributes exactly as in process (`-j 1`); a failing job is an
outcome with its error while the batch goes on; a job past its time limit is
interrupted (SIGALRM in a pool worker, the watchdog in a Dask worker thread);
a worker killed while it holds tasks has them re-run, and every job comes
back exactly once."""
from __future__ import annotations

import collections
import os
import signal
import time
from pathlib import Path

import pytest

from corpora import STALL_RULES, write_rules
from dask_cluster import two_worker_client

from rulekit.executors import CorpusSpec, Job, make_executor
from rulekit.executors.deadline import JobTimeout, call_with_deadline

distributed = pytest.importorskip("distributed")

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
EXAMPLE_JOBS = [Job.of(d) for d in sorted(EXAMPLES.iterdir()) if (d / "job.toml").exists()]
BUNDLED = CorpusSpec.of(None)



@pytest.fixture(scope="module")
def stall_rules(tmp_path_factory) -> Path:
    return write_rules(tmp_path_factory.mktemp("stall_rules"), STALL_RULES)


def stall_job(root: Path, name: str, line: str) -> Job:
    d = root / name
    (d / "syslog").mkdir(parents=True)
    (d / "job.toml").write_text(f'[job]\nid = "{name}"\nstate = "FAILED"\nnodes = ["n1"]\n')
    (d / "syslog" / "n1.log").write_text(f"Aug 11 03:00:00 n1 kernel: {line}\n")
    return Job.of(d)


@pytest.fixture(scope="module")
def client():
    # a task whose workers died twice is lost (the default is 3; the stuck-task test needs fewer)
    with two_worker_client({"distributed.scheduler.allowed-failures": 1}) as c:
        yield c


@pytest.fixture(scope="module")
def baseline():
    with make_executor("local", BUNDLED, workers=1) as ex:
        return {o.job: o for o in ex.map(EXAMPLE_JOBS)}


def dask_executor(client, corpus=BUNDLED, **kw):
    from rulekit.executors.dask import DaskExecutor

    return DaskExecutor(corpus, client=client, **kw)


def test_every_example_on_a_local_cluster_is_identical_to_in_process(client, baseline):
    assert all(o.ok for o in baseline.values()), [o.error for o in baseline.values() if not o.ok]
    with dask_executor(client) as ex:
        outcomes = list(ex.map(EXAMPLE_JOBS))
    assert collections.Counter(o.job for o in outcomes) == collections.Counter(EXAMPLE_JOBS)
    assert {o.job: o.result for o in outcomes} == {j: o.result for j, o in baseline.items()}
    assert len({o.worker for o in outcomes}) == 2  # both workers took part


def test_every_example_on_the_local_pool_is_identical_to_in_process(baseline):
    with make_executor("local", BUNDLED, workers=2) as ex:
        outcomes = list(ex.map(EXAMPLE_JOBS))
    assert {o.job: o.result for o in outcomes} == {j: o.result for j, o in baseline.items()}
    assert len({o.worker for o in outcomes}) == 2


def bad_jobs(tmp_path: Path) -> list[Job]:
    bad_toml = tmp_path / "bad-toml"
    bad_toml.mkdir()
    (bad_toml / "job.toml").write_text("[job]\nstate = 12\n")
    toml_dir = tmp_path / "toml-is-a-dir"
    (toml_dir / "job.toml").mkdir(parents=True)
    return [Job.of(bad_toml), Job.of(tmp_path / "missing"), Job.of(toml_dir)]


@pytest.mark.parametrize("kind", ["local", "dask"])
def test_failing_jobs_are_recorded_and_the_batch_goes_on(kind, client, baseline, tmp_path):
    bad = bad_jobs(tmp_path)
    jobs = EXAMPLE_JOBS[:3] + bad + EXAMPLE_JOBS[3:6]
    ex = dask_executor(client) if kind == "dask" else make_executor("local", BUNDLED, workers=2)
    with ex:
        outcomes = {o.job: o for o in ex.map(jobs)}
    assert set(outcomes) == set(jobs)
    for j in EXAMPLE_JOBS[:6]:
        assert outcomes[j].ok and outcomes[j].result == baseline[j].result
    assert "job.toml:2:1" in outcomes[bad[0]].error and "RK" in outcomes[bad[0]].error  # at the key
    assert "RK501" in outcomes[bad[1]].error and "missing" in outcomes[bad[1]].error
    assert "job.toml" in outcomes[bad[2]].error
    assert outcomes[bad[0]].as_dict() == {"job_dir": bad[0].job_dir, "error": outcomes[bad[0]].error}


@pytest.mark.parametrize("kind", ["in-process", "local", "dask"])
def test_a_job_past_its_time_limit_fails_and_the_others_finish(kind, client, stall_rules, tmp_path):
    spec = CorpusSpec.of([stall_rules])
    hang = stall_job(tmp_path, "hang", "FAULT HANG")
    fine = [stall_job(tmp_path, f"ok{i}", "FAULT") for i in range(3)]
    jobs = [fine[0], hang, *fine[1:]]
    if kind == "dask":
        ex = dask_executor(client, spec, timeout=1.0)
    else:
        ex = make_executor("local", spec, workers=1 if kind == "in-process" else 2, timeout=1.0)
    t0 = time.monotonic()
    with ex:
        outcomes = {o.job: o for o in ex.map(jobs)}
    assert time.monotonic() - t0 < 60
    assert outcomes[hang].error == "timed out after 1 s"
    assert 0.9 < outcomes[hang].seconds < 10
    for j in fine:
        assert outcomes[j].ok, outcomes[j].error
        assert outcomes[j].result["root_cause"]["symptom"] == "STALL_FAULT"
    if kind == "dask":  # the worker thread was freed: the same cluster still runs jobs
        with dask_executor(client, spec, timeout=1.0) as again:
            assert all(o.ok for o in again.map(fine))


def test_the_watchdog_interrupts_a_thread_and_leaves_no_pending_exception():
    import threading

    out = {}

    def body():
        try:
            call_with_deadline(lambda: [None for _ in iter(int, 1)], 0.2)
        except JobTimeout as e:
            out["timeout"] = str(e)
        out["after"] = call_with_deadline(lambda: sum(range(1000)), 5)
        time.sleep(0.3)  # nothing still pending from the first call
        out["done"] = True

    t = threading.Thread(target=body)
    t.start()
    t.join(10)
    assert out == {"timeout": "timed out after 0.2 s", "after": 499500, "done": True}


def test_a_worker_killed_mid_batch_has_its_jobs_rerun_and_every_job_comes_back_once(client, stall_rules, tmp_path):
    spec = CorpusSpec.of([stall_rules])
    jobs = [stall_job(tmp_path, f"j{i:02d}", "FAULT SLEEP") for i in range(12)]
    victim, victim_keys = None, []
    outcomes = []
    with dask_executor(client, spec, max_in_flight=6) as ex:
        before = set(client.nthreads())
        for o in ex.map(jobs):
            outcomes.append(o)
            if victim is None:
                processing = client.processing()
                victim = max(processing, key=lambda w: len(processing[w]))
                victim_keys = list(processing[victim])
                assert victim_keys, processing
                pid = client.run(os.getpid, workers=[victim])[victim]
                os.kill(pid, signal.SIGKILL)  # the worker process dies with tasks in flight
    key = {j.key(f"trace=False;corpus={spec.key}"): j for j in jobs}
    counts = collections.Counter(o.job for o in outcomes)
    assert counts == collections.Counter(jobs)  # every job, exactly once
    assert all(o.ok for o in outcomes), [o.error for o in outcomes if not o.ok]
    rerun = [o for o in outcomes if o.job in {key[k] for k in victim_keys if k in key}]
    assert rerun and any(o.worker != victim for o in rerun)
    assert victim in before
    assert {o.result["job_id"] for o in outcomes} == {j.job_dir.rsplit("/", 1)[1] for j in jobs}


def test_a_local_pool_worker_killed_mid_batch_has_its_jobs_rerun(stall_rules, tmp_path):
    spec = CorpusSpec.of([stall_rules])
    jobs = [stall_job(tmp_path, f"p{i:02d}", "FAULT SLEEP") for i in range(8)]
    outcomes, killed, first_pool = [], None, set()
    ex = make_executor("local", spec, workers=2)
    with ex:
        for o in ex.map(jobs):
            outcomes.append(o)
            if killed is None:
                first_pool = {f"pid {p}" for p in ex._pool._processes}
                killed = next(iter(ex._pool._processes))  # a worker, busy with the next jobs
                os.kill(killed, signal.SIGKILL)
    assert collections.Counter(o.job for o in outcomes) == collections.Counter(jobs)
    assert all(o.ok for o in outcomes), [o.error for o in outcomes if not o.ok]
    assert any(o.worker not in first_pool for o in outcomes)  # the rest ran on a replacement pool


def test_no_scheduler_at_the_address_is_a_clear_error():
    from rulekit.executors import ExecutorError
    from rulekit.executors.dask import DaskExecutor

    with pytest.raises(ExecutorError, match="cannot reach the Dask scheduler at tcp://127.0.0.1:9"):
        DaskExecutor(BUNDLED, address="tcp://127.0.0.1:9", connect_timeout="1s")


def test_a_corpus_the_workers_cannot_build_is_a_clear_error(client, tmp_path):
    from rulekit.executors import ExecutorError

    with pytest.raises(ExecutorError, match=r"could not be built on [12] worker\(s\), e.g. tcp://127.0.0.1:\d+: .*RK001"):
        dask_executor(client, CorpusSpec.of([tmp_path / "no-such-rules"]))


def test_the_executor_tracks_futures_on_its_own_clients_loop(client, baseline, monkeypatch):
    """as_completed() without loop= falls back to the *default* client's loop: with several
    clients in one process (the bench, a service) that is another thread, which corrupted
    client state ("deque mutated during iteration") and could stall a batch."""
    import distributed.client as dc

    def no_default():
        raise AssertionError("the executor must not depend on the default client")

    monkeypatch.setattr(dc, "default_client", no_default)
    with dask_executor(client) as ex:
        outcomes = {o.job: o.result for o in ex.map(EXAMPLE_JOBS[:4])}
    assert outcomes == {j: baseline[j].result for j in EXAMPLE_JOBS[:4]}


def test_a_task_stuck_in_c_past_its_time_limit_ends_its_worker_and_is_reported_lost(client, stall_rules, tmp_path):
    """`time.sleep` ignores the exception raised in its thread: the worker is ended after
    the grace period, Dask re-runs the task elsewhere, and once every worker that took it
    died (allowed-failures) the job is an outcome with the error; the other jobs finish."""
    spec = CorpusSpec.of([stall_rules])
    stuck = stall_job(tmp_path, "stuck", "FAULT SNOOZE")
    fine = [stall_job(tmp_path, f"f{i}", "FAULT") for i in range(3)]
    t0 = time.monotonic()
    # one in flight: a job queued on a worker that is ended counts that death too, and with
    # this cluster's allowed-failures of 1 it could be reported lost with the stuck one
    with dask_executor(client, spec, timeout=1.0, stuck_grace=0.5, max_in_flight=1) as ex:
        outcomes = {o.job: o for o in ex.map([stuck, *fine])}
    assert time.monotonic() - t0 < 240  # a hang guard: worker restarts are slow on a loaded machine
    assert outcomes[stuck].error.startswith("lost: the workers that ran it died")
    assert all(outcomes[j].ok for j in fine), [outcomes[j].error for j in fine]
    # last in the module: the nannies are still replacing both workers (slow on a loaded machine)


def test_tiny_jobs_go_several_to_a_task_and_come_back_identical(client, baseline):
    """Example jobs take ~10 ms on an idle core, Dask a few ms per task: several jobs go in one
    task (a chunk: here 4, fixed; by default as many as fill 0.1 s of measured job time), and
    every outcome is still one job's, as in process."""
    from distributed import get_task_stream

    with get_task_stream(client) as ts, dask_executor(client, chunk=4) as ex:
        outcomes = list(ex.map(EXAMPLE_JOBS + [type(j)(j.job_dir, 2) for j in EXAMPLE_JOBS]))
    assert collections.Counter(o.job.job_dir for o in outcomes) == collections.Counter(
        {j.job_dir: 2 for j in EXAMPLE_JOBS})
    assert {o.job.job_dir: o.result for o in outcomes if o.job.attempt == 1} == {
        j.job_dir: o.result for j, o in baseline.items()}
    keys = {t["key"] for t in ts.data}
    chunks = [k for k in keys if str(k).startswith("rulekit-chunk-")]
    assert chunks and len(keys) < len(outcomes)  # fewer tasks than jobs
    ex.chunk = None  # adaptive: (mean wall s, mean CPU s of the jobs finished so far, their number) -> jobs per task
    assert ex.chunk_size(0.02, 0.01, 10) == 10  # 0.1 s of CPU a task
    assert ex.chunk_size(0.05, 0.01, 10) == 10  # a loaded machine stretches the wall time, not the CPU
    assert ex.chunk_size(0.3, 0.001, 10) == 3  # jobs that mostly wait: at most ~1 s of wall time a task
    assert ex.chunk_size(0.5, 0.5, 1) == 1 and ex.chunk_size(0, 0, 0) == 1
    assert ex.chunk_size(1e-6, 1e-6, 10) == 32  # capped


def test_a_chunk_lost_with_a_stuck_job_runs_its_other_jobs_again_alone(client, stall_rules, tmp_path):
    """The chunk's workers were ended by its stuck job: its other jobs each run again in a task
    of their own and finish; only the stuck one is reported lost."""
    spec = CorpusSpec.of([stall_rules])
    stuck = stall_job(tmp_path, "stuck", "FAULT SNOOZE")
    fine = [stall_job(tmp_path, f"c{i}", "FAULT") for i in range(3)]
    t0 = time.monotonic()
    with dask_executor(client, spec, timeout=1.0, stuck_grace=0.5, max_in_flight=1, chunk=4) as ex:
        outcomes = {o.job: o for o in ex.map([fine[0], stuck, *fine[1:]])}
    assert time.monotonic() - t0 < 300  # a hang guard: each worker restart is slow on a loaded machine
    assert set(outcomes) == {stuck, *fine}
    assert outcomes[stuck].error.startswith("lost: the workers that ran it died")
    assert all(outcomes[j].ok for j in fine), [outcomes[j].error for j in fine]


def test_the_executors_own_local_cluster_runs_without_the_workers_profiler():
    """The profiler samples every running task's stack every 10 ms (5-15% of an attribution's
    CPU); the cluster `--executor dask` starts turns it off on its workers."""
    from rulekit.executors.dask import local_cluster

    cluster = local_cluster(1)
    try:
        with distributed.Client(cluster) as c:
            import dask

            got = c.run(lambda: dask.config.get("distributed.worker.profile.enabled"))
        assert list(got.values()) == [False]
    finally:
        cluster.close()
