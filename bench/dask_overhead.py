"""Dask's own cost per task, and what the executor's bounded window adds to it.

On the executor's LocalCluster of one worker process, N no-op tasks go (a)
through `DaskExecutor.map` one per task (`chunk=1`: bounded window, batched
gathers: what a batch pays per task beyond the job), (b) through
`DaskExecutor.map` with its default chunking (no-op jobs: 32 a task) and (c)
through a plain `client.map` + `client.gather` of all N at once (Dask's floor
per task, unbounded).  Prints wall and client-process CPU
(scheduler + client + nanny live in this process) per task, from the same run.
Usage: python bench/dask_overhead.py [--tasks 1000]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from batch_dask import NoopTask  # noqa: E402


def ident(x: int) -> int:
    return x


def main() -> None:
    from distributed import Client

    from rulekit.executors import CorpusSpec
    from rulekit.executors.dask import DaskExecutor, local_cluster

    ap = argparse.ArgumentParser()
    ap.add_argument("--tasks", type=int, default=1000)
    n = ap.parse_args().tasks
    cluster = local_cluster(1)
    client = Client(cluster)
    try:
        ex = DaskExecutor(CorpusSpec.of(None), client=client, chunk=1)
        list(ex.map(NoopTask(i) for i in range(100)))  # warm-up
        t, c = time.perf_counter(), time.process_time()
        assert all(o.ok for o in ex.map(NoopTask(10**6 + i) for i in range(n)))
        ex_wall, ex_cpu = (time.perf_counter() - t) / n, (time.process_time() - c) / n
        chunked = DaskExecutor(CorpusSpec.of(None), client=client)
        t, c = time.perf_counter(), time.process_time()
        assert all(o.ok for o in chunked.map(NoopTask(2 * 10**6 + i) for i in range(n)))
        ch_wall, ch_cpu = (time.perf_counter() - t) / n, (time.process_time() - c) / n
        per_task = chunked.jobs_submitted / max(1, chunked.tasks_submitted)
        t, c = time.perf_counter(), time.process_time()
        futures = client.map(ident, range(n), pure=False)
        client.gather(futures)
        del futures
        raw_wall, raw_cpu = (time.perf_counter() - t) / n, (time.process_time() - c) / n
    finally:
        client.close()
        cluster.close()
    print(f"{n} no-op tasks, 1 worker")
    print(f"  DaskExecutor.map, one per task (window {ex.window(1)}): {ex_wall * 1e3:.2f} ms wall, {ex_cpu * 1e3:.2f} ms "
          "CPU per task")
    print(f"  DaskExecutor.map, default ({per_task:.1f} a task): {ch_wall * 1e3:.2f} ms wall, {ch_cpu * 1e3:.2f} ms CPU "
          "per job")
    print(f"  client.map + gather (all at once) : {raw_wall * 1e3:.2f} ms wall, {raw_cpu * 1e3:.2f} ms CPU per task")


if __name__ == "__main__":
    main()
