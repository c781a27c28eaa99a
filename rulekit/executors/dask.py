"""The `dask` executor: job attempts as tasks on a Dask distributed cluster.

`Client(address)` for an existing scheduler (dask-jobqueue on Slurm,
dask-kubernetes, `dask scheduler` + `dask worker`), or, without an address, a
`LocalCluster` of worker processes (one thread each) started here and shut
down on `close()`.  A `WorkerPlugin` builds the compiled corpus once on every
worker (again on a worker that replaces a lost one); tasks find it in the
worker process's cache (`engine_for`), so it is never built or shipped per
task.  At most `max_in_flight` tasks exist at once (`as_completed` with a
window refilled as results arrive), so 100,000 jobs are never all submitted.
Tiny jobs go several to a task (as many as fill CHUNK_TARGET_S of CPU at their
measured mean, within CHUNK_MAX_WALL_S of wall time, at most MAX_CHUNK), since
Dask's own cost per task is a few ms of CPU.
A one-job task's key is its job attempt's key, a chunk's a hash of its jobs'
keys: when a worker dies, the scheduler re-runs the tasks it held and the client
still receives one result per job.

Must not print; the worker-side functions must stay importable module-level
functions (Dask pickles them by reference).
"""
from __future__ import annotations

import hashlib
import logging
import os
from typing import Any, Callable, Iterable, Iterator

from rulekit.executors.base import (
    STUCK_GRACE,
    CorpusSpec,
    Executor,
    ExecutorError,
    JobOutcome,
    Task,
    describe_error,
    engine_for,
    run_job,
)

try:
    from distributed import Client, LocalCluster, as_completed, get_worker
    from distributed.diagnostics.plugin import WorkerPlugin
except ImportError:  # pragma: no cover - dask is a declared dependency
    Client = LocalCluster = as_completed = get_worker = None  # type: ignore[assignment]
    WorkerPlugin = object  # type: ignore[assignment,misc]


class CorpusPlugin(WorkerPlugin):  # type: ignore[misc,valid-type]
    """Builds the corpus once when a worker starts (or joins later); a failure is kept
    and reported by `corpus_status`, not raised into the worker."""

    def __init__(self, spec: CorpusSpec) -> None:
        self.spec = spec
        self.error: str | None = None

    def setup(self, worker: Any) -> None:
        try:
            engine_for(self.spec)
        except Exception as e:  # reported to the client by corpus_status
            self.error = describe_error(e)


def corpus_status(spec: CorpusSpec) -> str | None:
    """Run on every worker: None when its corpus is built, else the error."""
    try:
        engine_for(spec)
        return None
    except Exception as e:
        return describe_error(e)


def attribute_chunk(jobs: list[Task], spec: CorpusSpec, with_trace: bool = False, timeout: float | None = None,
                    grace: float = STUCK_GRACE, render: Callable[[dict[str, Any]], str] | None = None
                    ) -> list[JobOutcome]:
    """One task on a worker: its job attempts one after another, each under the time limit."""
    try:
        where = get_worker().address
    except ValueError:
        where = ""
    try:
        engine = engine_for(spec)
    except Exception as e:
        error = f"corpus could not be built on worker {where}: {describe_error(e)}"
        return [JobOutcome(job, error=error, worker=where) for job in jobs]
    return [run_job(engine, job, with_trace, timeout, worker=where, stuck=end_stuck_worker, grace=grace,
                    render=render) for job in jobs]


STUCK_EXIT = 70
CHUNK_TARGET_S = 0.1  # job CPU one task should carry: Dask's ~4 + 4 ms of CPU per task then cost < 10%
CHUNK_MAX_WALL_S = 1.0  # and at most this much job wall time (jobs that wait are not queued long)
MAX_CHUNK = 32


def end_stuck_worker() -> None:
    """A task ignored its timeout (stuck inside one C call): end this worker process.  The
    nanny starts a fresh one; the scheduler re-runs the worker's tasks, and reports a task
    whose every worker died (`allowed-failures`) as lost."""
    logging.getLogger("rulekit.executors").error("a task is stuck past its time limit: ending worker %s", os.getpid())
    logging.shutdown()
    os._exit(STUCK_EXIT)


# the workers' statistical profiler (it feeds the dashboard's Profile page) walks the running
# task's Python stack every 10 ms: 5-15% of an attribution's CPU, measured in alternating runs
LOCAL_CLUSTER_CONFIG = {"distributed.worker.profile.enabled": False}


def local_cluster(workers: int) -> Any:
    """The LocalCluster the executor starts without an address: `workers` processes of one
    thread each (attribution is CPU-bound Python), dashboard on loopback, profiler off."""
    import dask

    with dask.config.set(LOCAL_CLUSTER_CONFIG):
        return LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                            dashboard_address="127.0.0.1:0", silence_logs=logging.ERROR)


class DaskExecutor(Executor):
    name = "dask"

    def __init__(self, corpus: CorpusSpec, *, address: str | None = None, workers: int | None = None,
                 timeout: float | None = None, max_in_flight: int | None = None, client: Any = None,
                 connect_timeout: str = "10s", stuck_grace: float = STUCK_GRACE, chunk: int | None = None) -> None:
        super().__init__(corpus, workers=workers, timeout=timeout, max_in_flight=max_in_flight)
        self.stuck_grace = stuck_grace
        self.chunk = chunk
        self._timing = [0.0, 0.0, 0]  # recent mean wall and CPU seconds of the jobs finished here, their number
        self.tasks_submitted = 0  # tasks (chunks) and jobs sent so far: jobs / tasks is the chunking achieved
        self.jobs_submitted = 0
        if Client is None:
            raise ExecutorError("the dask executor needs `dask[distributed]` (pip install 'dask[distributed]')")
        self._cluster = None
        self._own_client = client is None
        if client is not None:
            self.client = client
        elif address:
            try:
                self.client = Client(address, timeout=connect_timeout)
            except (OSError, TimeoutError) as e:
                raise ExecutorError(f"cannot reach the Dask scheduler at {address}: {e}") from None
        else:
            self._cluster = local_cluster(self.workers)
            self.client = Client(self._cluster)
        try:
            self._prepare_workers()
        except BaseException:
            self.close()
            raise

    def _prepare_workers(self) -> None:
        self.client.register_plugin(CorpusPlugin(self.corpus), name=f"rulekit-corpus-{self.corpus.key}")
        errors = {w: e for w, e in self.client.run(corpus_status, self.corpus).items() if e}
        if errors:
            worker, error = next(iter(errors.items()))
            raise ExecutorError(f"the corpus could not be built on {len(errors)} worker(s), e.g. {worker}: {error}")

    def slots(self) -> int:
        return sum(self.client.nthreads().values()) or self.workers

    def chunk_size(self, mean_seconds: float, mean_cpu: float, jobs_done: int) -> int:
        """Jobs per task: `chunk` when set, else as many as fill CHUNK_TARGET_S of CPU at the
        recent mean CPU of the jobs finished on this executor (a running mean over ~10 jobs, so
        cold first jobs are soon forgotten), but no more than fill CHUNK_MAX_WALL_S of wall time
        (a job that waits, on a plugin or a Blueprint connector reading a remote store, must
        not queue others behind it), between 1 and MAX_CHUNK; 1 until the first jobs come back.
        CPU first, since Dask's per-task cost is CPU and a loaded machine stretches wall times."""
        if self.chunk:
            return self.chunk
        if not jobs_done:
            return 1
        by_cpu = CHUNK_TARGET_S / max(mean_cpu, 1e-4)
        by_wall = CHUNK_MAX_WALL_S / max(mean_seconds, 1e-4)
        return max(1, min(MAX_CHUNK, int(min(by_cpu, by_wall))))

    def map(self, jobs: Iterable[Task], *, with_trace: bool = False,
            render: Callable[[dict[str, Any]], str] | None = None) -> Iterator[JobOutcome]:
        source = iter(jobs)
        window = self.window(self.slots())  # tasks in flight (each up to chunk_size() jobs)
        options = f"trace={with_trace};corpus={self.corpus.key}"
        if render is not None:  # the same attempt rendered otherwise is another task
            options += f";render={getattr(render, '__module__', '')}.{getattr(render, '__qualname__', repr(render))}"
        seen: set[str] = set()
        inflight: dict[str, list[Task]] = {}
        alone: list[tuple[str, Task]] = []  # the jobs of a lost chunk: each again, in a task of its own
        timing = self._timing
        # futures finish into `ac`; their results are gathered a batch at a time (one call to
        # the scheduler per batch, not per task).  `loop=` is this client's: without it
        # as_completed runs on the *default* client's loop, another thread when a process holds
        # several clients, and corrupts their state ("deque mutated during iteration", stalls).
        ac = as_completed(loop=self.client.loop)

        def refill() -> None:
            keys: list[str] = []
            groups: list[list[Task]] = []
            size = self.chunk_size(*timing)
            while len(inflight) < window:
                group: list[tuple[str, Task]] = [alone.pop()] if alone else []
                if not group:
                    for job in source:
                        key = job.key(options)
                        if key in seen:
                            continue  # the same attempt twice is one task, one outcome
                        seen.add(key)
                        group.append((key, job))
                        if len(group) >= size:
                            break
                if not group:
                    break
                # one job: its own key; several: a key of their keys (the same chunk re-run is one task)
                tkey = group[0][0] if len(group) == 1 else "rulekit-chunk-" + hashlib.sha1(
                    "\0".join(k for k, _ in group).encode()).hexdigest()[:16]
                inflight[tkey] = [j for _, j in group]
                keys.append(tkey)
                groups.append(inflight[tkey])
            if groups:
                self.tasks_submitted += len(groups)
                self.jobs_submitted += sum(len(g) for g in groups)
                ac.update(self.client.map(attribute_chunk, groups, key=keys, pure=False, spec=self.corpus,
                                          with_trace=with_trace, timeout=self.timeout, grace=self.stuck_grace,
                                          render=render))

        refill()
        for batch in ac.batches():
            for fut, outcomes in zip(batch, self._outcomes(batch, inflight, alone, options)):
                fut.release()
                for outcome in outcomes:
                    timing[2] += 1
                    timing[0] += (outcome.seconds - timing[0]) / min(timing[2], 10)
                    timing[1] += ((outcome.cpu or outcome.seconds) - timing[1]) / min(timing[2], 10)
                    yield outcome
            refill()

    def _outcomes(self, batch: list[Any], inflight: dict[str, list[Task]], alone: list[tuple[str, Task]],
                  options: str) -> list[list[JobOutcome]]:
        done = [f for f in batch if f.status == "finished"]
        try:
            results = dict(zip((f.key for f in done), self.client.gather(done))) if done else {}
        except Exception:  # one of them was lost after finishing: take them one by one
            results = {}
        out: list[list[JobOutcome]] = []
        for fut in batch:
            group = inflight.pop(fut.key)
            if fut.key in results:
                out.append(results[fut.key])
                continue
            exc = fut.exception() if fut.status == "error" else None
            if exc is None:
                try:
                    out.append(fut.result())
                    continue
                except Exception as e:
                    exc = e
            if len(group) > 1:  # a chunk whose workers died: run its jobs one per task, so only
                alone.extend((j.key(options), j) for j in reversed(group))  # the guilty one is lost
                out.append([])
                continue
            # KilledWorker: every worker that ran it died (allowed-failures exhausted)
            out.append([JobOutcome(group[0], error="lost: the workers that ran it died (or were ended, stuck past "
                                                   f"the time limit): {describe_error(exc)}")])
        return out

    def close(self) -> None:
        client, cluster = getattr(self, "client", None), self._cluster
        self._cluster = None
        if client is not None and self._own_client:
            client.close()
        if cluster is not None:
            cluster.close()
