"""Batch attribution on Dask distributed: jobs per second at 1 and 2 workers.

Runs N job attempts (the bundled examples, repeated as attempts 1, 2, ... so
each is a distinct task doing the full work) three ways in the same run:
in this process (the `-j 1` baseline, no scheduler), and through
`rulekit.executors.dask.DaskExecutor` on a LocalCluster of 1 and of 2 worker
processes (one thread each; corpus built once per worker, before timing),
with the executor's default settings (as `rulekit attribute --executor dask`
runs: tiny jobs go several to a task, see docs/batch.md; `--chunk N` fixes the
jobs per task instead, `--chunk 1` is one task per job).  The three alternate
for --rounds rounds; the 2-vs-1 worker ratio is the median of the rounds'
ratios (each round's two runs see the same load), the times the medians.
Prints jobs/s, the ratio (wall time), the CPU cost per job (CPU time: what
capacity is made of, far less disturbed by other load than wall time), the
jobs per task the executor chose, Dask's own overhead per task (CPU of no-op
tasks, one per task, scheduler side and worker side), then the capacity
arithmetic for a million jobs a week from the measured CPU per job.  All
results must equal the baseline.  Bounded: stops after --max-seconds.

With --size-mb M the jobs are instead copies of the seed example padded with M
MiB of benign training log (`bench/attribute_many.py` builds them), for the
cost of a job with a realistic amount of log.

Usage: python bench/batch_dask.py [--jobs 600] [--rounds 5] [--size-mb 0] [--chunk N] [--max-seconds 600]
"""
from __future__ import annotations

import argparse
from dataclasses import dataclass
import os
import statistics
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
    # this thread's CPU: the clusters' scheduler and nannies run on other threads of this process
    t, c = time.perf_counter(), time.thread_time()
    out = {j: run_job(engine, j).result for j in jobs}
    return time.perf_counter() - t, out, time.thread_time() - c


class Cluster:
    """The executor's LocalCluster of `workers` processes, corpus built on each (before timing).
    The scheduler, the nannies and the client live in this process; the workers apart."""

    def __init__(self, spec: CorpusSpec, workers: int, chunk: int | None = None) -> None:
        from distributed import Client

        from rulekit.executors.dask import DaskExecutor, local_cluster

        self.cluster = local_cluster(workers)  # the cluster `--executor dask` starts, same settings
        self.client = Client(self.cluster)
        self.ex = DaskExecutor(spec, client=self.client, chunk=chunk)
        self.noop_ex = DaskExecutor(spec, client=self.client, chunk=1)
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
        """CPU seconds per no-op task, one per task, through the executor: (scheduler side, worker)."""
        c0 = self.cpu()
        assert all(o.ok for o in self.noop_ex.map(NoopTask(i) for i in range(n)))
        c1 = self.cpu()
        return (c1[0] - c0[0]) / n, (c1[1] - c0[1]) / n

    def close(self) -> None:
        self.ex.close()
        self.noop_ex.close()
        self.client.close()
        self.cluster.close()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=None,
                    help="job attempts per round (default 600, a batch rather than a handful; 120 with --size-mb)")
    ap.add_argument("--rounds", type=int, default=5, help="rounds; medians are reported")
    ap.add_argument("--size-mb", type=int, default=0)
    ap.add_argument("--chunk", type=int, default=None, help="jobs per task (default: the executor's own choice)")
    ap.add_argument("--max-seconds", type=float, default=600)
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a `timeout` still closes the clusters
    deadline = time.perf_counter() + args.max_seconds
    spec = CorpusSpec.of(None)
    jobs = jobs_for(args.jobs or (120 if args.size_mb else 600), args.size_mb)
    n = len(jobs)
    clusters = {w: Cluster(spec, w, args.chunk) for w in (1, 2)}
    try:
        for c in clusters.values():  # warm-up round: first-use costs out of the timings
            c.run([Job(j.job_dir, attempt=10**6 + k) for k, j in enumerate(jobs[:10])], deadline)
        in_process(spec, jobs[:10])
        times: dict[int, list[float]] = {0: [], 1: [], 2: []}  # 0: in process
        cpu_job: list[float] = []
        cpu_dask: dict[int, list[tuple[float, float]]] = {1: [], 2: []}
        ratios: list[float] = []
        same = True
        for r in range(args.rounds):
            attempt_jobs = [Job(j.job_dir, attempt=j.attempt + 1000 * r) for j in jobs]
            t0, base, cpu0 = in_process(spec, attempt_jobs)
            times[0].append(t0)
            cpu_job.append(cpu0 / n)
            for w, c in clusters.items():
                t, out, cpu = c.run(attempt_jobs, deadline)
                times[w].append(t)
                cpu_dask[w].append((cpu[0] / n, cpu[1] / n))
                same = same and out == base
            ratios.append(times[1][-1] / times[2][-1])
            print(f"round {r + 1}: in process {t0:.2f} s, 1 worker {times[1][-1]:.2f} s, 2 workers "
                  f"{times[2][-1]:.2f} s: {ratios[-1]:.2f}x", file=sys.stderr)
        noop = {w: c.noop_cpu(max(n, 500)) for w, c in clusters.items()}
        per_task = {w: c.ex.jobs_submitted / max(1, c.ex.tasks_submitted) for w, c in clusters.items()}
    finally:
        for c in clusters.values():
            c.close()
    med = statistics.median
    t0, t1, t2 = med(times[0]), med(times[1]), med(times[2])
    what = f"seed example + {args.size_mb} MiB log" if args.size_mb else "bundled examples"
    ms = 1e3
    chunking = f"--chunk {args.chunk}" if args.chunk else "default chunking"
    print(f"{n} job attempts ({what}) x {args.rounds} rounds, medians, {chunking}; {os.cpu_count()} core(s), "
          f"load avg {os.getloadavg()[0]:.1f}")
    print(f"  in process (-j 1)   : {t0:7.2f} s  {n / t0:7.1f} jobs/s   CPU {med(cpu_job) * ms:.1f} ms/job")
    for w, t in ((1, t1), (2, t2)):
        sched, work = med(c[0] for c in cpu_dask[w]), med(c[1] for c in cpu_dask[w])
        print(f"  dask, {w} worker{'s' if w > 1 else ' '}     : {t:7.2f} s  {n / t:7.1f} jobs/s   CPU per job: "
              f"{work * ms:.1f} ms on workers, {sched * ms:.1f} ms scheduler + client; "
              f"{per_task[w]:.1f} jobs per task")
    print(f"  2 workers / 1 worker: {med(ratios):.2f}x (rounds: {', '.join(f'{x:.2f}' for x in ratios)})   "
          f"2 workers / in process: {t0 / t2:.2f}x   results identical: {same}")
    (s1, w1), (s2, w2) = ((med(c[0] for c in cpu_dask[w]), med(c[1] for c in cpu_dask[w])) for w in (1, 2))
    # on 2 free cores: 1 worker is bound by its own CPU or the scheduler's, whichever is more; 2 workers
    # share both cores with the scheduler side
    model = max(w1, s1) / max((w2 + s2) / 2, s2)
    print(f"  from CPU alone (2 free cores, no other load): 2 workers / 1 worker would be {model:.2f}x")
    sched, work = noop[2]
    print(f"  Dask's overhead per task (no-op tasks, one per task, 2 workers): {sched * ms:.2f} ms CPU scheduler + "
          f"client, {work * ms:.2f} ms CPU on the worker")
    per_job = s2 + w2
    print(f"  capacity: 1,000,000 such jobs a week x {per_job * ms:.1f} ms CPU (2 workers, measured) = "
          f"{1e6 * per_job / 3600:.1f} core-hours = {1e6 * per_job / WEEK:.3f} cores busy all week "
          f"(in process {med(cpu_job) * ms:.1f} ms a job: the rest, {max(0.0, per_job - med(cpu_job)) * ms:.1f} ms, "
          f"is Dask's and the executor's)")
    if not same:
        sys.exit(1)


if __name__ == "__main__":
    main()
