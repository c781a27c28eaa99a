"""Chunk-parallel scanning of one large log file: the line-aligned chunks
`scan.iter_chunks` yields, each scanned in a worker process, handed back with
their hits in file order.

Scanning a chunk is a pure function of its bytes, so a worker's hits are the
hits the serial loop would find in the same chunk; everything stateful (line
numbers, carried timestamps, accumulators, the repeat cap) stays with the
caller, which consumes `(chunk, hits)` in order exactly as it consumes
`(chunk, scanner.scan(chunk))` serially.  `annotate(chunk, hits)`, a pure
function too (extraction passes `hitfacts.chunk_facts`: each hit's timestamp,
rank, carried timestamp), runs in the worker after the scan and travels back
with the hits.  Workers are forked once per file
(they inherit the compiled scanner; nothing is pickled but the hits), read
their chunk from the file themselves, and are all gone when the iterator is
closed or exhausted.  Used only where forking is safe: a single-threaded,
non-daemon process on a platform with `fork`.

`scan_workers(size, requested)` decides: `requested` (the engine option
`scan_workers`, from `RULEKIT_SCAN_WORKERS`: 0 or 1 serial, N workers), else, for a file of at least `PARALLEL_MIN_BYTES`, one worker per
core that is free (usable cores, less the whole part of the 1-minute load
average other processes make, this one counted as free), at most
`MAX_WORKERS`, when that is two or more: on a busy machine workers only queue
behind the others.  Must not know about rules, events or the store.
"""
from __future__ import annotations

import gc
import multiprocessing
import os
import threading
from collections import deque
from typing import Any, Callable, Iterator

from rulekit.extract.scan import CHUNK_SIZE, Hit, Scanner, iter_chunks

PARALLEL_MIN_BYTES = 48 << 20  # below this a worker's start (its scanner warming up) costs more than it saves
MAX_WORKERS = 4

_SCANNER: Scanner | None = None  # what the forked workers scan with (set just before they fork)
_ANNOTATE: Callable[[bytes, list], Any] | None = None  # and what they add to each chunk's hits


def usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count() or 1


def fork_is_safe() -> bool:
    """A fork copies only the calling thread: safe when it is the only one (no lock
    another thread might hold), and only a non-daemon process may have children."""
    if "fork" not in multiprocessing.get_all_start_methods():
        return False
    if threading.active_count() != 1 or threading.current_thread() is not threading.main_thread():
        return False
    return not multiprocessing.current_process().daemon


def scan_workers(size: int, requested: int | None = None) -> int:
    """Worker processes for scanning a file of `size` bytes (0: scan serially here)."""
    if requested is not None:
        return requested if requested > 1 and fork_is_safe() else 0
    if size < PARALLEL_MIN_BYTES:
        return 0
    cores = usable_cores()
    n = min(cores, MAX_WORKERS, cores - int(load_average()) + 1)
    return n if n > 1 and fork_is_safe() else 0


def load_average() -> float:
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):  # not available here: assume idle
        return 0.0


def _worker_init() -> None:
    gc.disable()  # a worker only scans: no cycles to collect, and the parent's heap stays shared


def _scan_span(path: str, offset: int, length: int) -> tuple[int, list[Hit], Any]:
    with open(path, "rb") as f:
        f.seek(offset)
        data = f.read(length)
    assert _SCANNER is not None
    hits = _SCANNER.scan(data)
    return len(data), hits, _ANNOTATE(data, hits) if _ANNOTATE is not None else None


def parallel_scan(path: str | os.PathLike, scanner: Scanner, workers: int, size: int = CHUNK_SIZE,
                  annotate: Callable[[bytes, list], Any] | None = None) -> Iterator[tuple[bytes, list[Hit], Any]]:
    """(chunk, hits, annotate(chunk, hits)) for every chunk of the file, in order,
    found by `workers` forked processes (the last item is None without `annotate`).
    A chunk a worker read at another length (the file was truncated or rewritten
    under us) is scanned again here; no processes to be had (OSError) means
    scanning here."""
    global _SCANNER, _ANNOTATE
    path = os.fspath(path)
    _SCANNER, _ANNOTATE = scanner, annotate
    gc.freeze()  # objects alive now are not collected in the children (nor copied by a collection)
    pool: Any = None
    try:
        pool = multiprocessing.get_context("fork").Pool(workers, initializer=_worker_init)
    except OSError:  # no processes to be had (limits, memory): scan here, as without workers
        pool = None
    finally:
        gc.unfreeze()
    if pool is None:
        _SCANNER = _ANNOTATE = None
        with open(path, "rb") as f:
            for chunk in iter_chunks(f, size):
                yield _here(chunk, scanner, annotate)
        return
    window = 2 * workers  # chunks in flight: a few MiB each
    pending: deque = deque()
    done = False
    try:
        with open(path, "rb") as f:
            offset = 0
            for chunk in iter_chunks(f, size):
                pending.append((chunk, pool.apply_async(_scan_span, (path, offset, len(chunk)))))
                offset += len(chunk)
                while len(pending) > window:
                    yield _result(*pending.popleft(), scanner, annotate)
            while pending:
                yield _result(*pending.popleft(), scanner, annotate)
        done = True
    finally:
        _SCANNER = _ANNOTATE = None
        if done:
            pool.close()
        else:  # abandoned (an error, a timeout): do not wait for queued chunks
            pool.terminate()
        pool.join()


def _here(chunk: bytes, scanner: Scanner, annotate: Callable[[bytes, list], Any] | None) -> tuple[bytes, list[Hit], Any]:
    hits = scanner.scan(chunk)
    return chunk, hits, annotate(chunk, hits) if annotate is not None else None


def _result(chunk: bytes, res: Any, scanner: Scanner,
            annotate: Callable[[bytes, list], Any] | None) -> tuple[bytes, list[Hit], Any]:
    n, hits, extra = res.get()
    if n != len(chunk):
        return _here(chunk, scanner, annotate)
    return chunk, hits, extra
