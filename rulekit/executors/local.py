"""The `local` executor: job attempts on a process pool of this machine.

With one worker, jobs run here, in this process (the `-j 1` baseline).  With
several, a `ProcessPoolExecutor`: where processes fork, the corpus and its scan
plans are built once in this process and inherited by every worker (all forked
at once, with the garbage collector's view of the inherited heap frozen, so a
worker's collections neither walk nor copy it); elsewhere each worker builds it
once (`engine_for`).  Jobs go out largest first (`job_weight`) among the next
`max_in_flight` read from the batch, so a big job is not the one left running
alone at the end.  `cores` is what the whole batch may keep busy (the user's
`-j N`; default the usable cores): each job's chunk-parallel scan gets at most
its share, `cores // workers` processes, so with the workers filling it each log
is scanned serially (chunk workers would only queue behind the other jobs) and
`-j 1` keeps to one core; an explicit `scan_workers` option stands.  A worker process that dies
takes only its in-flight jobs with it: the pool is replaced and those jobs run
again (up to `retries` times, then recorded as failed).  When no worker can be
forked at all (process limits, memory), the jobs run here, one by one.  Must not
print.
"""
from __future__ import annotations

import gc
import heapq
import itertools
import multiprocessing
import os
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Callable, Iterable, Iterator

from rulekit.executors.base import (
    CorpusSpec,
    Executor,
    JobOutcome,
    Task,
    adopt_engine,
    engine_for,
    job_weight,
    run_job,
)
from rulekit.extract.parallel import usable_cores


def _init_worker(spec: CorpusSpec, scan_share: int) -> None:
    engine = engine_for(spec)  # forked: the inherited engine; otherwise built here, once
    engine.options = engine.options.with_(max_scan_workers=scan_share)  # this process's copy only


def _pool_task(spec: CorpusSpec, job: Task, with_trace: bool, timeout: float | None,
               render: Callable[[dict[str, Any]], str] | None) -> JobOutcome:
    return run_job(engine_for(spec), job, with_trace, timeout, worker=f"pid {os.getpid()}", render=render)


class LocalExecutor(Executor):
    name = "local"

    def __init__(self, corpus: CorpusSpec, *, engine: Any = None, workers: int | None = None,
                 timeout: float | None = None, max_in_flight: int | None = None, retries: int = 2,
                 cores: int | None = None) -> None:
        super().__init__(corpus, workers=workers, timeout=timeout, max_in_flight=max_in_flight)
        self.engine = engine
        self.cores = cores or usable_cores()
        self.scan_share = max(1, self.cores // self.workers)  # scan processes each job may use
        self.retries = retries
        self._pool: ProcessPoolExecutor | None = None

    def _engine(self) -> Any:
        if self.engine is None:
            self.engine = engine_for(self.corpus)
        return self.engine

    def _new_pool(self) -> ProcessPoolExecutor:
        """A pool whose workers are not started yet (they fork on the first submit)."""
        try:
            ctx = multiprocessing.get_context("fork")
        except ValueError:
            ctx = None
        if ctx is not None:
            adopt_engine(self.corpus, self._engine())  # built once, here; the forked workers inherit it
            return ProcessPoolExecutor(max_workers=self.workers, mp_context=ctx, initializer=_init_worker,
                                       initargs=(self.corpus, self.scan_share))
        return ProcessPoolExecutor(max_workers=self.workers, initializer=_init_worker,
                                   initargs=(self.corpus, self.scan_share))

    def map(self, jobs: Iterable[Task], *, with_trace: bool = False,
            render: Callable[[dict[str, Any]], str] | None = None) -> Iterator[JobOutcome]:
        if self.workers <= 1:
            yield from self._map_here(jobs, with_trace, render)
        else:
            yield from self._map_pool(jobs, with_trace, render)

    def _map_here(self, jobs: Iterable[Task], with_trace: bool,
                  render: Callable[[dict[str, Any]], str] | None) -> Iterator[JobOutcome]:
        engine = self._engine().with_options(max_scan_workers=self.scan_share)  # (the caller's engine unchanged)
        seen: set[Task] = set()
        for job in jobs:
            if job not in seen:
                seen.add(job)
                yield run_job(engine, job, with_trace, self.timeout, worker="in process", render=render)

    def _map_pool(self, jobs: Iterable[Task], with_trace: bool,
                  render: Callable[[dict[str, Any]], str] | None) -> Iterator[JobOutcome]:
        source = iter(jobs)
        window = self.window(self.workers)
        seen: set[Task] = set()
        inflight: dict[Future, Task] = {}
        retry: list[Task] = []
        tries: dict[Task, int] = {}
        ready: list[tuple[int, int, Task]] = []  # read from the batch, not submitted: (-weight, order, job)
        order = itertools.count()
        exhausted = False

        def submit(job: Task) -> None:
            assert self._pool is not None
            try:
                fut = self._pool.submit(_pool_task, self.corpus, job, with_trace, self.timeout, render)
            except BaseException:  # not submitted (the workers could not fork): keep it
                heapq.heappush(ready, (-job_weight(job), next(order), job))
                raise
            inflight[fut] = job

        def read_ahead() -> None:
            """Read the batch until `window` jobs are in flight or ready (or it ends)."""
            nonlocal exhausted
            while not exhausted and len(inflight) + len(ready) < window:
                job = next(source, None)
                if job is None:
                    exhausted = True
                elif job not in seen:
                    seen.add(job)
                    heapq.heappush(ready, (-job_weight(job), next(order), job))

        def refill() -> None:
            read_ahead()
            while len(inflight) < window and (retry or ready):
                submit(retry.pop() if retry else heapq.heappop(ready)[2])

        def start() -> None:
            # the workers fork on the first submit: freeze the collector's view of this
            # heap around it, so their collections neither walk nor copy what they inherit
            gc.freeze()
            try:
                self._pool = self._new_pool()
                refill()
            finally:
                gc.unfreeze()

        def abandon() -> None:
            """The pool could not start: end any worker that did fork (it would wait for work forever)."""
            pool, self._pool = self._pool, None
            if pool is not None:
                for proc in list((getattr(pool, "_processes", None) or {}).values()):
                    proc.terminate()
                pool.shutdown(wait=True, cancel_futures=True)

        def left() -> Iterator[Task]:
            yield from [*inflight.values(), *reversed(retry), *(job for _w, _o, job in sorted(ready))]
            yield from (job for job in source if job not in seen)

        try:
            start()
        except OSError:  # no processes to be had (limits, memory): the jobs run here, one by one
            abandon()
            yield from self._map_here(left(), with_trace, render)
            return
        try:
            while inflight:
                done, _ = wait(list(inflight), return_when=FIRST_COMPLETED)
                broken = False
                for fut in done:
                    job = inflight.pop(fut)
                    try:
                        outcome = fut.result()
                    except BrokenProcessPool:
                        broken = True
                        tries[job] = tries.get(job, 0) + 1
                        if tries[job] > self.retries:
                            yield JobOutcome(job, error=f"worker process died {tries[job]} times running this job")
                        else:
                            retry.append(job)
                        continue
                    yield outcome
                if broken:  # a dead worker breaks the whole pool: replace it, re-run what was in flight
                    retry.extend(inflight.values())
                    inflight.clear()
                    assert self._pool is not None
                    self._pool.shutdown(wait=True, cancel_futures=True)
                    try:
                        start()
                    except OSError:
                        abandon()
                        yield from self._map_here(left(), with_trace, render)
                        return
                else:
                    refill()
        finally:
            self.close()

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
