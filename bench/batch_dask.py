"""Batch attribution on Dask distributed: jobs per second at 1 and 2 workers.

Runs N job attempts (the bundled examples, repeated as attempts 1, 2, ... so
each is a distinct task doing the full work) three ways in the same run:
in this process (the `-j 1` baseline, no scheduler), and through
`rulekit.executors.dask.DaskExecutor` on a LocalCluster of 1 and of 2 worker
processes (one thread each; corpus built once per worker, before timing).
Prints jobs/s, the 2-vs-1 worker ratio, the cost per job, and the scheduler's
overhead per task (N no-op tasks through the same bounded window), then the
capacity arithmetic for a million jobs a week.  All results must equal the
baseline.  Bounded: stops after --max-seconds.

Usage: python bench/batch_dask.py [--jobs 300] [--max-seconds 300]
"""
from __future__ import annotations

import argparse
import os
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


def jobs_for(n: int) -> list[Job]:
    dirs = sorted(d for d in (REPO / "examples").iterdir() if (d / "job.toml").exists())
    return [Job.of(dirs[i % len(dirs)], attempt=1 + i // len(dirs)) for i in range(n)]


def in_process(spec: CorpusSpec, jobs: list[Job]) -> tuple[float, dict]:
    from rulekit.executors.base import engine_for

    engine = engine_for(spec)
    for j in jobs[:5]:
        run_job(engine, j)  # warm-up, as the workers are warmed
    t = time.perf_counter()
    out = {j: run_job(engine, j).result for j in jobs}
    return time.perf_counter() - t, out


def on_cluster(spec: CorpusSpec, jobs: list[Job], workers: int, deadline: float) -> tuple[float, dict, float]:
    from distributed import Client, LocalCluster, as_completed

    from rulekit.executors.dask import DaskExecutor

    cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None,
                           silence_logs=40)
    client = Client(cluster)
    try:
        ex = DaskExecutor(spec, client=client)  # builds the corpus on every worker, before timing
        warm = [Job(j.job_dir, attempt=10**6 + k) for k, j in enumerate(jobs[: 5 * workers])]
        list(ex.map(warm))
        t = time.perf_counter()
        out = {}
        for o in ex.map(jobs):
            out[o.job] = o.result
            if time.perf_counter() > deadline:
                raise SystemExit(f"stopped: over --max-seconds with {workers} worker(s)")
        elapsed = time.perf_counter() - t
        # the scheduler's own cost: no-op tasks through the same bounded window
        n = len(jobs)
        window = ex.window(ex.slots())
        t = time.perf_counter()
        ac = as_completed()
        source = iter(range(n))
        for i in range(window):
            ac.add(client.submit(noop, next(source), key=f"noop-{i}", pure=False))
        for fut in ac:
            fut.release()
            i = next(source, None)
            if i is not None:
                ac.add(client.submit(noop, i, key=f"noop-{i}", pure=False))
        overhead = (time.perf_counter() - t) / n
        ex.close()
        return elapsed, out, overhead
    finally:
        client.close()
        cluster.close()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=300)
    ap.add_argument("--max-seconds", type=float, default=300)
    args = ap.parse_args()
    deadline = time.perf_counter() + args.max_seconds
    spec = CorpusSpec.of(None)
    jobs = jobs_for(args.jobs)
    t0, base = in_process(spec, jobs)
    t1, r1, ov1 = on_cluster(spec, jobs, 1, deadline)
    t2, r2, ov2 = on_cluster(spec, jobs, 2, deadline)
    same = r1 == base and r2 == base
    n = len(jobs)
    cost = t0 / n
    print(f"{n} job attempts (bundled examples), {os.cpu_count()} core(s), load avg {os.getloadavg()[0]:.1f}")
    print(f"  in process (-j 1)   : {t0:7.2f} s  {n / t0:7.1f} jobs/s  ({cost * 1e3:.1f} ms/job)")
    print(f"  dask, 1 worker      : {t1:7.2f} s  {n / t1:7.1f} jobs/s  (scheduler overhead {ov1 * 1e3:.2f} ms/task)")
    print(f"  dask, 2 workers     : {t2:7.2f} s  {n / t2:7.1f} jobs/s  (scheduler overhead {ov2 * 1e3:.2f} ms/task)")
    print(f"  2 workers / 1 worker: {t1 / t2:.2f}x   2 workers / in process: {t0 / t2:.2f}x   results identical: {same}")
    cores = 1e6 * cost / WEEK
    print(f"  capacity: 1,000,000 such jobs a week = {1e6 * cost / 3600:.0f} core-hours = {cores:.2f} cores busy "
          f"all week (+{1e6 * ov1 / WEEK:.3f} cores of scheduler time)")
    if not same:
        sys.exit(1)


if __name__ == "__main__":
    main()
