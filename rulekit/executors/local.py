"""The `local` executor: job attempts on a process pool of this machine.

With one worker, jobs run here, in this process (the `-j 1` baseline).  With
several, a `ProcessPoolExecutor`: where processes fork, the corpus and its scan
plans are built once in this process and inherited by every worker; elsewhere
each worker builds it once (`engine_for`).  At most `max_in_flight` jobs are
submitted at a time.  A worker process that dies takes only its in-flight
jobs with it: the pool is replaced and those jobs run again (up to `retries`
times, then recorded as failed).  Must not print.
"""
from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Iterable, Iterator

from rulekit.executors.base import (
    CorpusSpec,
    Executor,
    JobOutcome,
    Task,
    adopt_engine,
    engine_for,
    run_job,
)


def _init_worker(spec: CorpusSpec) -> None:
    engine_for(spec)


def _pool_task(spec: CorpusSpec, job: Task, with_trace: bool, timeout: float | None) -> JobOutcome:
    return run_job(engine_for(spec), job, with_trace, timeout, worker=f"pid {os.getpid()}")


class LocalExecutor(Executor):
    name = "local"

    def __init__(self, corpus: CorpusSpec, *, engine: Any = None, workers: int | None = None,
                 timeout: float | None = None, max_in_flight: int | None = None, retries: int = 2) -> None:
        super().__init__(corpus, workers=workers, timeout=timeout, max_in_flight=max_in_flight)
        self.engine = engine
        self.retries = retries
        self._pool: ProcessPoolExecutor | None = None

    def _engine(self) -> Any:
        if self.engine is None:
            self.engine = engine_for(self.corpus)
        return self.engine

    def _new_pool(self) -> ProcessPoolExecutor:
        try:
            ctx = multiprocessing.get_context("fork")
        except ValueError:
            ctx = None
        if ctx is not None:
            adopt_engine(self.corpus, self._engine())  # built once, here; the forked workers inherit it
            return ProcessPoolExecutor(max_workers=self.workers, mp_context=ctx)
        return ProcessPoolExecutor(max_workers=self.workers, initializer=_init_worker, initargs=(self.corpus,))

    def map(self, jobs: Iterable[Task], *, with_trace: bool = False) -> Iterator[JobOutcome]:
        if self.workers <= 1:
            yield from self._map_here(jobs, with_trace)
        else:
            yield from self._map_pool(jobs, with_trace)

    def _map_here(self, jobs: Iterable[Task], with_trace: bool) -> Iterator[JobOutcome]:
        engine = self._engine()
        seen: set[Task] = set()
        for job in jobs:
            if job not in seen:
                seen.add(job)
                yield run_job(engine, job, with_trace, self.timeout, worker="in process")

    def _map_pool(self, jobs: Iterable[Task], with_trace: bool) -> Iterator[JobOutcome]:
        source = iter(jobs)
        window = self.window(self.workers)
        seen: set[Task] = set()
        inflight: dict[Future, Task] = {}
        retry: list[Task] = []
        tries: dict[Task, int] = {}
        exhausted = False

        def submit(job: Task) -> None:
            assert self._pool is not None
            inflight[self._pool.submit(_pool_task, self.corpus, job, with_trace, self.timeout)] = job

        def refill() -> None:
            nonlocal exhausted
            while len(inflight) < window and (retry or not exhausted):
                if retry:
                    submit(retry.pop())
                    continue
                job = next(source, None)
                if job is None:
                    exhausted = True
                elif job not in seen:
                    seen.add(job)
                    submit(job)

        self._pool = self._new_pool()
        try:
            refill()
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
                    self._pool.shutdown(wait=True, cancel_futures=True)
                    self._pool = self._new_pool()
                refill()
        finally:
            self.close()

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
