"""Batch attribution on Dask distributed: jobs per second at 1 and 2 workers.

Runs N job attempts (the bundled examples, repeated as attempts 1, 2, ... so
each is a distinct task doing the full work) three ways in the same run:
in this process (the `-j 1` baseline, no scheduler), and through
`rulekit.executors.dask.DaskExecutor` on a LocalCluster of 1 and of 2 worker
processes (one thread each; corpus built once per worker, before timing).
The three alternate for --rounds rounds and the best round of each is kept
(the machine is shared: the best round is the one least disturbed).  Prints
jobs/s and the 2-vs-1 worker ratio (wall time), the CPU cost per job (CPU
time: what capacity is made of, and far less disturbed by other load than
wall time), the scheduler's overhead per task (CPU of no-op tasks through the
same bounded window, scheduler side and worker side), then the capacity
arithmetic for a million jobs a week.  All results must equal the
baseline.  Bounded: stops after --max-seconds.

With --size-mb M the jobs are instead copies of the seed example padded with M
MiB of benign training log (`bench/attribute_many.py` builds them), for the
cost of a job with a realistic amount of log.

Usage: python bench/batch_dask.py [--jobs 150] [--rounds 3] [--size-mb 0] [--max-seconds 400]
"""
from __future__ import annotations

import argparse
from dataclasses import dataclass
import os
import signal
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from rulekit.executors import CorpusSpec, Job  # noqa: E402
from rulekit.executors.base import run_job  # noqa: E402

WEEK = 7 * 24 * 3600


@dataclass(frozen=True)
class NoopTask:
    """A task that does nothing: what the executor and Dask cost per task on their own."""

    n: int

    @property
    def label(self) -> str:
        return f"noop-{self.n}"

    def key(self, options: str = "") -> str:
        return f"noop-{self.n}"

    def run(self, engine, with_trace=False, progress=None) -> dict:
        return {}


def jobs_for(n: int, size_mb: int) -> list[Job]:
    if size_mb:
        sys.path.insert(0, str(REPO / "bench"))
        from attribute_many import build

        dirs = build(min(n, 8), size_mb)
    else:
        dirs = sorted(d for d in (REPO / "examples").iterdir() if (d / "job.toml").exists())
    return [Job.of(dirs[i % len(dirs)], attempt=1 + i // len(dirs)) for i in range(n)]


def in_process(spec: CorpusSpec, jobs: list[Job]) -> tuple[float, dict, float]:
    """Wall time, results and CPU seconds of attributing `jobs` here, one by one."""
    from rulekit.executors.base import engine_for

    engine = engine_for(spec)
    t, c = time.perf_counter(), time.process_time()
    out = {j: run_job(engine, j).result for j in jobs}
    return time.perf_counter() - t, out, time.process_time() - c


class Cluster:
    """A LocalCluster of `workers` processes with the corpus built on each (before timing).
    The scheduler, the nannies and the client live in this process; the workers apart."""

    def __init__(self, spec: CorpusSpec, workers: int) -> None:
        from distributed import Client, LocalCluster

        from rulekit.executors.dask import DaskExecutor

        self.cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                    dashboard_address="127.0.0.1:0", silence_logs=40)
        self.client = Client(self.cluster)
        self.ex = DaskExecutor(spec, client=self.client)
        self.workers = workers

    def cpu(self) -> tuple[float, float]:
        """CPU seconds so far: (this process: scheduler + client, the workers summed)."""
        return time.process_time(), sum(self.client.run(time.process_time).values())

    def run(self, jobs: list[Job], deadline: float) -> tuple[float, dict, tuple[float, float]]:
        """Wall time, results, and CPU seconds spent (scheduler side, workers)."""
        c0 = self.cpu()
        t = time.perf_counter()
        out = {}
        for o in self.ex.map(jobs):
            out[o.job] = o.result
            if time.perf_counter() > deadline:
                raise SystemExit(f"stopped: over --max-seconds with {self.workers} worker(s)")
        wall = time.perf_counter() - t
        c1 = self.cpu()
        return wall, out, (c1[0] - c0[0], c1[1] - c0[1])

    def noop_cpu(self, n: int) -> tuple[float, float]:
        """CPU seconds per no-op task through the same executor: (scheduler side, worker)."""
        c0 = self.cpu()
        assert all(o.ok for o in self.ex.map(NoopTask(i) for i in range(n)))
        c1 = self.cpu()
        return (c1[0] - c0[0]) / n, (c1[1] - c0[1]) / n

    def close(self) -> None:
        self.ex.close()
        self.client.close()
        self.cluster.close()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=150, help="job attempts per round")
    ap.add_argument("--rounds", type=int, default=3, help="rounds; the best time of each way is reported")
    ap.add_argument("--size-mb", type=int, default=0)
    ap.add_argument("--max-seconds", type=float, default=400)
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a `timeout` still closes the clusters
    deadline = time.perf_counter() + args.max_seconds
    spec = CorpusSpec.of(None)
    jobs = jobs_for(args.jobs, args.size_mb)
    n = len(jobs)
    clusters = {w: Cluster(spec, w) for w in (1, 2)}
    try:
        for c in clusters.values():  # warm-up round: first-use costs out of the timings
            c.run([Job(j.job_dir, attempt=10**6 + k) for k, j in enumerate(jobs[:10])], deadline)
        in_process(spec, jobs[:10])
        best = {0: float("inf"), 1: float("inf"), 2: float("inf")}  # 0: in process
        cpu_job = float("inf")
        cpu_dask: dict[int, tuple[float, float]] = {}
        same = True
        for r in range(args.rounds):
            attempt_jobs = [Job(j.job_dir, attempt=j.attempt + 1000 * r) for j in jobs]
            t0, base, cpu0 = in_process(spec, attempt_jobs)
            best[0], cpu_job = min(best[0], t0), min(cpu_job, cpu0 / n)
            for w, c in clusters.items():
                t, out, cpu = c.run(attempt_jobs, deadline)
                print(f"round {r + 1}: in process {t0:.2f} s, {w} worker(s) {t:.2f} s", file=sys.stderr)
                if t < best[w]:
                    best[w], cpu_dask[w] = t, (cpu[0] / n, cpu[1] / n)
                same = same and out == base
        noop = {w: c.noop_cpu(max(n, 500)) for w, c in clusters.items()}
    finally:
        for c in clusters.values():
            c.close()
    t0, t1, t2 = best[0], best[1], best[2]
    what = f"seed example + {args.size_mb} MiB log" if args.size_mb else "bundled examples"
    ms = 1e3
    print(f"{n} job attempts ({what}) x {args.rounds} rounds, best round; {os.cpu_count()} core(s), "
          f"load avg {os.getloadavg()[0]:.1f}")
    print(f"  in process (-j 1)   : {t0:7.2f} s  {n / t0:7.1f} jobs/s   CPU {cpu_job * ms:.1f} ms/job")
    for w, t in ((1, t1), (2, t2)):
        sched, work = cpu_dask[w]
        print(f"  dask, {w} worker{'s' if w > 1 else ' '}     : {t:7.2f} s  {n / t:7.1f} jobs/s   CPU per job: "
              f"{work * ms:.1f} ms on workers, {sched * ms:.1f} ms scheduler + client")
    print(f"  2 workers / 1 worker: {t1 / t2:.2f}x   2 workers / in process: {t0 / t2:.2f}x   "
          f"results identical: {same}")
    sched, work = noop[2]
    print(f"  scheduler overhead per task (no-op tasks, 2 workers): {sched * ms:.2f} ms CPU scheduler + client, "
          f"{work * ms:.2f} ms CPU on the worker")
    per_job = cpu_job + sched + work
    print(f"  capacity: 1,000,000 such jobs a week x {per_job * ms:.1f} ms CPU = {1e6 * per_job / 3600:.1f} "
          f"core-hours = {1e6 * per_job / WEEK:.3f} cores busy all week ({1e6 * (sched + work) / WEEK:.4f} of "
          f"them Dask's)")
    if not same:
        sys.exit(1)


if __name__ == "__main__":
    main()
