"""Chunk-parallel scanning of one large log file: the line-aligned chunks
`scan.iter_chunks` yields, each scanned in a worker process, handed back with
their hits in file order.

Scanning a chunk is a pure function of its bytes, so a worker's hits are the
hits the serial loop would find in the same chunk; everything stateful (line
numbers, carried timestamps, accumulators, the repeat cap) stays with the
caller, which consumes `(chunk, hits)` in order exactly as it consumes
`(chunk, scanner.scan(chunk))` serially.  `annotate(chunk, hits, news)`, a pure
function of its arguments and of the news it was told before (extraction passes
`engine.workerhits.WorkerHits`: each hit's facts, and the hits it knows to be
past their cap left out), runs in the worker after the scan and returns the
hits to send back and what travels with them; `news(k)`, called here as a chunk
is given to worker k (-1: a chunk scanned here), is what that worker's
`annotate` is told with it.  Workers are forked once per file (they inherit the
compiled scanner; nothing is pickled but offsets, news and the hits), each with
its own pair of pipes and no helper thread here (`_Workers`; a worker reads its
tasks in a thread of its own, so a task with much news never waits on an
answer), read their chunk from the file themselves, and are all gone when the
iterator is closed or exhausted.  Used only where forking is safe: a
single-threaded, non-daemon process on a platform with `fork`.

`scan_workers(size, requested, cap)` decides: `requested` (the engine option
`scan_workers`, from `RULEKIT_SCAN_WORKERS`: 0 or 1 serial, N workers), else, for a file of at least `PARALLEL_MIN_BYTES`, one worker per
core that is free (usable cores, less those other processes keep busy now:
`busy_cores`, this one counted as free), at most `MAX_WORKERS` and at most
`cap` (the engine option `max_scan_workers`: what `-j N` leaves each job), when
that is two or more: on a busy machine workers only queue behind the others.  Must not
know about rules, events or the store.
"""
from __future__ import annotations

import gc
import multiprocessing
import os
import queue
import signal
import threading
import time
from collections import deque
from typing import Any, Callable, Iterator

from rulekit.extract.scan import CHUNK_SIZE, Hit, Scanner, iter_chunks

PARALLEL_MIN_BYTES = 24 << 20  # below this a worker's start (its scanner warming up) costs more than it saves:
# bench/attribute_vs_rg.py chunks section, idle: 16 MiB even, 32 MiB 1.14x (realistic), 64 MiB 1.2x
MAX_WORKERS = 4

_SCANNER: Scanner | None = None  # what the forked workers scan with (set just before they fork)
_ANNOTATE: "Annotate | None" = None  # and what they make of each chunk's hits
_PATH: str | None = None  # and the file they read their chunks from


def usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count() or 1


def fork_is_safe() -> bool:
    """A fork copies only the calling thread: safe when it is the only one (no lock
    another thread might hold; a thread marked `fork_safe`, such as the rule
    watchdog of `rulekit.rules.containment`, never holds one while it waits), and only
    a non-daemon process may have children."""
    if "fork" not in multiprocessing.get_all_start_methods():
        return False
    others = [t for t in threading.enumerate() if t is not threading.current_thread()
              and not getattr(t, "fork_safe", False)]  # a thread that holds no lock while it waits
    if others or threading.current_thread() is not threading.main_thread():
        return False
    return not multiprocessing.current_process().daemon


def scan_workers(size: int, requested: int | None = None, cap: int | None = None) -> int:
    """Worker processes for scanning a file of `size` bytes (0: scan serially here);
    `requested` is taken as it is, `cap` bounds the automatic choice."""
    if requested is not None:
        return requested if requested > 1 and fork_is_safe() else 0
    if size < PARALLEL_MIN_BYTES or (cap is not None and cap < 2):
        return 0
    cores = usable_cores()
    n = min(cores, MAX_WORKERS, cores - int(busy_cores()), cap if cap is not None else MAX_WORKERS)
    return n if n > 1 and fork_is_safe() else 0


BUSY_SAMPLES = 5  # looks at the running tasks, 2 ms apart (a task that keeps a core busy is in each)


def busy_cores() -> float:
    """Cores other processes keep busy now: the fewest other tasks the scheduler had
    running or ready in a few looks over some milliseconds (Linux, `/proc/loadavg`;
    one look at a moment a short task ran would count it), else the 1-minute load
    average less one.  The load average trails by a minute: right after a busy one
    (a benchmark, or the same command run twice) it still counts the cores of
    processes that have ended, and a log would be scanned serially on an idle machine."""
    fewest = None
    try:
        for k in range(BUSY_SAMPLES):
            if k:
                time.sleep(0.002)
            with open("/proc/loadavg", encoding="ascii") as f:
                n = runnable_others(f.read())
            fewest = n if fewest is None else min(fewest, n)
            if fewest == 0:
                break
    except (OSError, ValueError, IndexError):
        if fewest is None:
            return max(load_average() - 1, 0.0)
    return float(fewest)


def runnable_others(loadavg: str) -> int:
    """Other tasks running or ready, from `/proc/loadavg`'s text (its fourth field is
    `running/total`, this task among the running)."""
    return max(int(loadavg.split()[3].split("/")[0]) - 1, 0)


def load_average() -> float:
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):  # not available here: assume idle
        return 0.0


Annotate = Callable[[bytes, list, Any], tuple[list, Any]]  # (chunk, hits, news) -> (hits sent, annotation)
News = Callable[[int], Any]


def _worker(tasks: Any, results: Any) -> None:
    """A scan worker's loop: (offset, length, news) in, (length read, hits, annotation) out,
    in the order asked; None ends it.  An exception is sent back as such (the
    caller scans that chunk itself and so raises it where it can be reported)."""
    gc.disable()  # a worker only scans: no cycles to collect, and the parent's heap stays shared
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle (it ends the workers)
    path = _PATH
    assert _SCANNER is not None and path is not None
    inbox: queue.SimpleQueue = queue.SimpleQueue()

    def read_tasks() -> None:
        # tasks are read as they come, also while this worker waits for the parent to take
        # an answer: a task with much news is larger than a pipe holds, and the parent
        # sending it while this worker sends its answer would otherwise wait on each other
        while True:
            try:
                task = tasks.recv()
            except (EOFError, OSError):  # the parent is gone or gave up
                task = None
            inbox.put(task)
            if task is None:
                return

    threading.Thread(target=read_tasks, daemon=True).start()
    with open(path, "rb") as f:
        while True:
            task = inbox.get()
            if task is None:
                return
            offset, length, news = task
            try:
                f.seek(offset)
                data = f.read(length)
                hits = _SCANNER.scan(data)
                out: Any = (len(data), *_ANNOTATE(data, hits, news)) if _ANNOTATE is not None else (len(data), hits, None)
            except Exception as e:  # noqa: BLE001 - reported by the caller's own scan of the chunk
                out = e
            try:
                results.send(out)
            except (OSError, ValueError):  # the parent stopped listening
                return


class _Workers:
    """`n` forked scan processes, each fed its chunks through its own pipe and answering
    through another, in order: chunk i goes to worker i mod n, so its answer is the next
    one on that worker's pipe.  No helper threads (a `multiprocessing.Pool` runs three
    in this process, and their unpickling and polling competed with extraction for the
    interpreter); the answers are unpickled here, when they are needed."""

    def __init__(self, n: int):
        ctx = multiprocessing.get_context("fork")
        self.procs: list[Any] = []
        self.tasks: list[Any] = []
        self.results: list[Any] = []
        self.sent: set[int] = set()  # chunks a worker was given and has not answered yet
        self.gone: set[int] = set()  # workers found dead
        try:
            for _ in range(n):
                task_r, task_w = ctx.Pipe(duplex=False)
                res_r, res_w = ctx.Pipe(duplex=False)
                proc = ctx.Process(target=_worker, args=(task_r, res_w), daemon=True)
                proc.start()
                task_r.close()
                res_w.close()
                self.procs.append(proc)
                self.tasks.append(task_w)
                self.results.append(res_r)
        except BaseException:
            self.stop(abandon=True)
            raise

    def send(self, i: int, offset: int, length: int, news: News | None) -> None:
        k = i % len(self.procs)
        if k not in self.gone:
            try:
                self.tasks[k].send((offset, length, news(k) if news is not None else None))
                self.sent.add(i)
                return
            except OSError:  # the worker died: its chunks from here on are scanned by the caller
                self.gone.add(k)

    def answer(self, i: int) -> Any:
        """Chunk i's answer (an exception, or None when its worker is gone)."""
        if i not in self.sent:
            return None
        self.sent.discard(i)
        try:
            return self.results[i % len(self.procs)].recv()
        except (EOFError, OSError):  # the worker died: this chunk is scanned here
            self.gone.add(i % len(self.procs))
            return None

    def stop(self, abandon: bool) -> None:
        """End every worker: asked to finish (all answers read), or terminated (abandoned)."""
        if abandon:
            for proc in self.procs:
                proc.terminate()
        for conn in self.tasks:
            try:
                if not abandon:
                    conn.send(None)
                conn.close()
            except OSError:
                pass
        for proc in self.procs:
            proc.join(timeout=5)
            if proc.is_alive():  # pragma: no cover - a worker stuck or ignoring SIGTERM
                proc.kill()
                proc.join()
        for conn in self.results:
            conn.close()


def parallel_scan(path: str | os.PathLike, scanner: Scanner, workers: int, size: int = CHUNK_SIZE,
                  annotate: Annotate | None = None,
                  news: News | None = None) -> Iterator[tuple[bytes, list[Hit], Any]]:
    """(chunk, *annotate(chunk, hits, news(k))) for every chunk of the file, in order,
    found by `workers` forked processes ((chunk, hits, None) without `annotate`).
    A chunk a worker read at another length (the file was truncated or rewritten
    under us), or could not scan, or lost with its worker, is scanned again here; no
    processes to be had (OSError) means scanning here."""
    global _SCANNER, _ANNOTATE, _PATH
    path = os.fspath(path)
    _SCANNER, _ANNOTATE, _PATH = scanner, annotate, path
    gc.freeze()  # objects alive now are not collected in the children (nor copied by a collection)
    pool: _Workers | None = None
    try:
        pool = _Workers(workers)
    except OSError:  # no processes to be had (limits, memory): scan here, as without workers
        pool = None
    finally:
        gc.unfreeze()
        _SCANNER = _ANNOTATE = _PATH = None  # the workers have their copies
    if pool is None:
        with open(path, "rb") as f:
            for chunk in iter_chunks(f, size):
                yield _here(chunk, scanner, annotate, news)
        return
    window = 2 * workers  # chunks in flight: a few MiB each
    pending: deque = deque()  # (index, chunk)
    done = False
    try:
        with open(path, "rb") as f:
            offset = 0
            for i, chunk in enumerate(iter_chunks(f, size)):
                pool.send(i, offset, len(chunk), news)
                pending.append((i, chunk))
                offset += len(chunk)
                while len(pending) > window:
                    yield _result(pool, *pending.popleft(), scanner, annotate, news)
            while pending:
                yield _result(pool, *pending.popleft(), scanner, annotate, news)
        done = True
    finally:
        pool.stop(abandon=not done)  # abandoned (an error, a timeout): do not wait for queued chunks


def _here(chunk: bytes, scanner: Scanner, annotate: Annotate | None,
          news: News | None) -> tuple[bytes, list[Hit], Any]:
    hits = scanner.scan(chunk)
    if annotate is None:
        return chunk, hits, None
    return (chunk, *annotate(chunk, hits, news(-1) if news is not None else None))


def _result(pool: _Workers, i: int, chunk: bytes, scanner: Scanner, annotate: Annotate | None,
            news: News | None) -> tuple[bytes, list[Hit], Any]:
    got = pool.answer(i)
    if not isinstance(got, tuple) or got[0] != len(chunk):
        return _here(chunk, scanner, annotate, news)
    return chunk, got[1], got[2]
