"""The executor interface: what a batch of job attempts is, what comes back, and
the one function every worker runs per job.

`Executor.map(jobs)` takes an iterable of `Job`s (or any `Task`; read lazily: a bounded number
are in flight at once), runs each under the per-task timeout and yields one
`JobOutcome` per distinct job key as it finishes.  A job that fails (bad input,
unreadable file, timeout, a lost worker that could not be replaced) is an
outcome with `error` set; the batch goes on.  Workers build the compiled corpus
once per process (`engine_for`), never once per task.  `map(jobs, render=f)`
also has each result rendered where it ran (`f(result) -> str`, a module-level
function: it is pickled by reference), in `JobOutcome.text`: the caller's
rendering then runs on the workers, in parallel, instead of after them.

Must not print, import an execution engine (Dask lives in `executors.dask`) or
import `cli`.
"""
from __future__ import annotations

import hashlib
import os
import threading
import time
from abc import ABC, abstractmethod
from dataclasses import field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Protocol

from rulekit.rules.records import dataclass
from rulekit.diagnostics import RulekitError, Severity
from rulekit.engine.jobrun import attribute_dir
from rulekit.executors.allocator import keep_chunk_memory
from rulekit.executors.deadline import JobTimeout, call_with_deadline
from rulekit.extract.parallel import usable_cores

STUCK_GRACE = 10.0  # seconds a timed-out task may take to unwind before its worker is ended
SCAN_SOURCES = (("applog", "text"), ("syslog", "text"), ("scheduler", "slurm"))


class ExecutorError(Exception):
    """An executor could not start (no scheduler at the address, a corpus the workers cannot build)."""


@dataclass(frozen=True)
class CorpusSpec:
    """Which corpus the workers build: rule folders/files (resolved), or None for the bundled rules."""

    rules: tuple[str, ...] | None = None

    @classmethod
    def of(cls, rules: Iterable[str | Path] | None) -> "CorpusSpec":
        paths = tuple(str(Path(r).resolve()) for r in rules) if rules else None
        return cls(paths or None)

    @property
    def key(self) -> str:
        return hashlib.sha1(repr(self.rules).encode()).hexdigest()[:12]

    def build(self) -> Any:
        """Load and warm the engine (its scan plans); RulekitError when the corpus is invalid."""
        from rulekit.rules.loader import load_corpus

        res = load_corpus(list(self.rules) if self.rules else None)
        if res.engine is None:
            raise RulekitError([d for d in res.diagnostics if d.severity is Severity.ERROR])
        warm(res.engine)
        return res.engine


def warm(engine: Any) -> Any:
    """Build the engine's scan plans now (before forking, or once per worker)."""
    for source, fmt in SCAN_SOURCES:
        engine.scan_plan(source, fmt)
    return engine


_ENGINES: dict[CorpusSpec, Any] = {}
_ENGINES_LOCK = threading.Lock()


def engine_for(spec: CorpusSpec) -> Any:
    """This process's engine for `spec`, built on first use and kept (one per worker process)."""
    engine = _ENGINES.get(spec)
    if engine is None:
        with _ENGINES_LOCK:
            engine = _ENGINES.get(spec)
            if engine is None:
                engine = _ENGINES[spec] = spec.build()
    return engine


def adopt_engine(spec: CorpusSpec, engine: Any) -> None:
    """Use an engine already built in this process for `spec` (the local pool, before forking)."""
    with _ENGINES_LOCK:
        _ENGINES[spec] = warm(engine)


class Task(Protocol):
    """What an executor runs: a picklable, hashable value naming one job attempt.  `Job`
    (a job directory) is one; a batch caller with another source of evidence (the
    Blueprint's collected attempts) defines its own with the same three members."""

    @property
    def label(self) -> str:
        """How messages name it (a path, `job_id#attempt`)."""

    def key(self, options: str = "") -> str:
        """Stable across runs: the same attempt with the same options is the same task."""

    def run(self, engine: Any, with_trace: bool = False, progress: Callable[[int], None] | None = None) -> dict[str, Any]:
        """Attribute it with a built engine (raise on bad input)."""


@dataclass(frozen=True)
class Job:
    """One job attempt: its directory and attempt number (a re-run of the same job is a new attempt)."""

    job_dir: str
    attempt: int = 1

    @classmethod
    def of(cls, job_dir: str | Path, attempt: int = 1) -> "Job":
        return cls(os.path.abspath(job_dir), attempt)

    @property
    def label(self) -> str:
        return self.job_dir

    def key(self, options: str = "") -> str:
        """A stable task key: the same job attempt with the same options is the same task
        (re-submitting it cannot produce a second, different output)."""
        digest = hashlib.sha1(f"{self.job_dir}\0{self.attempt}\0{options}".encode()).hexdigest()[:16]
        return f"rulekit-attribute-{digest}"

    def run(self, engine: Any, with_trace: bool = False, progress: Callable[[int], None] | None = None) -> dict[str, Any]:
        return attribute_dir(engine, self.job_dir, progress=progress, with_trace=with_trace)


@dataclass
class JobOutcome:
    job: Task
    result: dict[str, Any] | None = None
    error: str | None = None
    seconds: float = 0.0
    worker: str = field(default="", compare=False)
    cpu: float = field(default=0.0, compare=False)  # CPU seconds of the thread that ran it (load does not stretch it)
    text: str | None = field(default=None, compare=False)  # render(result), when map() was given `render`

    @property
    def ok(self) -> bool:
        return self.error is None

    def as_dict(self) -> dict[str, Any]:
        """The result, or the failure record `{"job_dir", "error"}` the CLI prints."""
        if self.result is not None:
            return self.result
        return {"job_dir": self.job.label, "error": self.error}


def describe_error(e: BaseException) -> str:
    """A failed job's error as one located message (the diagnostics carry file:line:col)."""
    if isinstance(e, RulekitError):
        return str(e)
    if isinstance(e, JobTimeout):
        return str(e) or "timed out"
    if isinstance(e, OSError):
        return f"{type(e).__name__}: {e}"
    return f"internal error ({type(e).__name__}: {e})"


def run_job(engine: Any, job: Task, with_trace: bool = False, timeout: float | None = None,
            worker: str = "", progress: Callable[[int], None] | None = None,
            stuck: Callable[[], None] | None = None, grace: float = STUCK_GRACE,
            render: Callable[[dict[str, Any]], str] | None = None) -> JobOutcome:
    """Attribute one job attempt under the time limit; every failure becomes the outcome's error.
    `progress` is handed to `attribute_dir` (bytes extracted); `stuck` to `call_with_deadline`;
    `render(result)`, when given, fills the outcome's `text` (not timed: it is the caller's work).
    The process's allocator keeps the memory of the chunks it reads (`allocator`)."""
    keep_chunk_memory()
    t0, c0 = time.perf_counter(), time.thread_time()
    try:
        result = call_with_deadline(lambda: job.run(engine, with_trace, progress), timeout, stuck, grace=grace)
        seconds, cpu = time.perf_counter() - t0, time.thread_time() - c0
        return JobOutcome(job, result=result, seconds=seconds, worker=worker, cpu=cpu,
                          text=render(result) if render is not None else None)
    except (Exception, JobTimeout) as e:  # the batch goes on: a job's failure is data
        return JobOutcome(job, error=describe_error(e), seconds=time.perf_counter() - t0, worker=worker,
                          cpu=time.thread_time() - c0)


def job_weight(job: Task) -> int:
    """How much work a job attempt is, for dispatching the largest first: the bytes of a
    `Job`'s files (its directory and the folders in it, not deeper); a `Task` may say
    with a `weight` attribute; otherwise 0.  Never raises (a missing folder weighs 0)."""
    weight = getattr(job, "weight", None)
    if isinstance(weight, int):
        return weight
    if not isinstance(job, Job):
        return 0
    total = 0
    try:
        with os.scandir(job.job_dir) as top:
            for entry in top:
                if entry.is_file():
                    total += entry.stat().st_size
                elif entry.is_dir():
                    with os.scandir(entry.path) as sub:
                        total += sum(e.stat().st_size for e in sub if e.is_file())
    except OSError:
        pass
    return total


class Executor(ABC):
    """Runs job attempts on workers that each hold the compiled corpus.

    corpus: what workers build; timeout: seconds per task (None: no limit);
    max_in_flight: jobs submitted and not yet yielded (None: `window()`, a few per worker
    slot, enough to hide the round trip to a remote worker, never the whole batch)."""

    name = "?"

    def __init__(self, corpus: CorpusSpec, *, workers: int | None = None, timeout: float | None = None,
                 max_in_flight: int | None = None) -> None:
        self.corpus = corpus
        self.workers = workers or usable_cores()
        self.timeout = timeout
        self.max_in_flight = max_in_flight

    def window(self, slots: int) -> int:
        return max(1, self.max_in_flight or 8 + 4 * max(1, slots))

    @abstractmethod
    def map(self, jobs: Iterable[Task], *, with_trace: bool = False,
            render: Callable[[dict[str, Any]], str] | None = None) -> Iterator[JobOutcome]:
        """One outcome per distinct job (`Job`, or any `Task`), in the order they finish;
        with `render`, each result also rendered where it ran (`JobOutcome.text`)."""

    def close(self) -> None:
        """Release workers (a cluster this executor started is shut down)."""

    def __enter__(self) -> "Executor":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
