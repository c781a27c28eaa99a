"""Batch attribution on Dask distributed: jobs per second at 1 and 2 workers.

Runs N job attempts (the bundled examples, repeated as attempts 1, 2, ... so
each is a distinct task doing the full work) three ways in the same run:
in this process (the `-j 1` baseline, no scheduler), and through
`rulekit.executors.dask.DaskExecutor` on a LocalCluster of 1 and of 2 worker
processes (one thread each; corpus built once per worker, before timing).
The three alternate for --rounds rounds and the best round of each is kept
(the machine is shared: the best round is the one least disturbed).  Prints
jobs/s, the 2-vs-1 worker ratio, the cost per job, and the scheduler's
overhead per task (no-op tasks through the same bounded window), then the
capacity arithmetic for a million jobs a week.  All results must equal the
baseline.  Bounded: stops after --max-seconds.

With --size-mb M the jobs are instead copies of the seed example padded with M
MiB of benign training log (`bench/attribute_many.py` builds them), for the
cost of a job with a realistic amount of log.

Usage: python bench/batch_dask.py [--jobs 150] [--rounds 3] [--size-mb 0] [--max-seconds 400]
"""
from __future__ import annotations

import argparse
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


def noop(x: int) -> int:
    return x


def jobs_for(n: int, size_mb: int) -> list[Job]:
    if size_mb:
        sys.path.insert(0, str(REPO / "bench"))
        from attribute_many import build

        dirs = build(min(n, 8), size_mb)
    else:
        dirs = sorted(d for d in (REPO / "examples").iterdir() if (d / "job.toml").exists())
    return [Job.of(dirs[i % len(dirs)], attempt=1 + i // len(dirs)) for i in range(n)]


def in_process(spec: CorpusSpec, jobs: list[Job]) -> tuple[float, dict]:
    from rulekit.executors.base import engine_for

    engine = engine_for(spec)
    t = time.perf_counter()
    out = {j: run_job(engine, j).result for j in jobs}
    return time.perf_counter() - t, out


class Cluster:
    """A LocalCluster of `workers` processes with the corpus built on each (before timing)."""

    def __init__(self, spec: CorpusSpec, workers: int) -> None:
        from distributed import Client, LocalCluster

        from rulekit.executors.dask import DaskExecutor

        self.cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                    dashboard_address="127.0.0.1:0", silence_logs=40)
        self.client = Client(self.cluster)
        self.ex = DaskExecutor(spec, client=self.client)
        self.workers = workers

    def run(self, jobs: list[Job], deadline: float) -> tuple[float, dict, float]:
        """Wall time, results, and the seconds spent inside the tasks (summed over workers)."""
        t = time.perf_counter()
        out, inside = {}, 0.0
        for o in self.ex.map(jobs):
            out[o.job] = o.result
            inside += o.seconds
            if time.perf_counter() > deadline:
                raise SystemExit(f"stopped: over --max-seconds with {self.workers} worker(s)")
        return time.perf_counter() - t, out, inside

    def overhead(self, n: int) -> float:
        """Seconds per no-op task through the same bounded window (the scheduler's own cost)."""
        from distributed import as_completed

        window = self.ex.window(self.ex.slots())
        t = time.perf_counter()
        ac = as_completed()
        source = iter(range(n))
        for i in range(min(window, n)):
            ac.add(self.client.submit(noop, next(source), key=f"noop-{i}", pure=False))
        for fut in ac:
            fut.release()
            i = next(source, None)
            if i is not None:
                ac.add(self.client.submit(noop, i, key=f"noop-{i}", pure=False))
        return (time.perf_counter() - t) / n

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
        best = {"in process": float("inf"), 1: float("inf"), 2: float("inf")}
        gap: dict[int, float] = {}  # per task: worker time not spent inside a task, in the best round
        same = True
        for r in range(args.rounds):
            attempt_jobs = [Job(j.job_dir, attempt=j.attempt + 1000 * r) for j in jobs]
            t0, base = in_process(spec, attempt_jobs)
            best["in process"] = min(best["in process"], t0)
            for w, c in clusters.items():
                t, out, inside = c.run(attempt_jobs, deadline)
                print(f"round {r + 1}: in process {t0:.2f} s, {w} worker(s) {t:.2f} s", file=sys.stderr)
                if t < best[w]:
                    best[w], gap[w] = t, max(0.0, (t * w - inside) / n)
                same = same and out == base
        overhead = {w: min(c.overhead(max(n, 500)) for _ in range(2)) for w, c in clusters.items()}
    finally:
        for c in clusters.values():
            c.close()
    t0, t1, t2 = best["in process"], best[1], best[2]
    cost = t0 / n
    what = f"seed example + {args.size_mb} MiB log" if args.size_mb else "bundled examples"
    print(f"{n} job attempts ({what}) x {args.rounds} rounds, best round; {os.cpu_count()} core(s), "
          f"load avg {os.getloadavg()[0]:.1f}")
    print(f"  in process (-j 1)   : {t0:7.2f} s  {n / t0:7.1f} jobs/s  ({cost * 1e3:.1f} ms/job)")
    for w, t in ((1, t1), (2, t2)):
        print(f"  dask, {w} worker{'s' if w > 1 else ' '}     : {t:7.2f} s  {n / t:7.1f} jobs/s  "
              f"(per task: {gap[w] * 1e3:.2f} ms of worker time outside the job; "
              f"{overhead[w] * 1e3:.2f} ms for a no-op task)")
    print(f"  2 workers / 1 worker: {t1 / t2:.2f}x   2 workers / in process: {t0 / t2:.2f}x   "
          f"results identical: {same}")
    week_cores = 1e6 * cost / WEEK
    print(f"  capacity: 1,000,000 such jobs a week = {1e6 * cost / 3600:.1f} core-hours = {week_cores:.3f} cores "
          f"busy all week, + {1e6 * overhead[2] / WEEK:.4f} cores of scheduler time")
    if not same:
        sys.exit(1)


if __name__ == "__main__":
    main()
