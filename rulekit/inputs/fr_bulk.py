"""Many flight-recorder dump files read at once: a job of 1,024 ranks has 1,024 of
them, each a pickle of thousands of entries.

`read_dump_files(items)` reads `(path, label)` pairs in order and returns, per
item, its `FRDump` or the `FRDumpError` that refused it.  With enough files and
a process that may fork (`rulekit.extract.parallel.fork_is_safe`), the files are
read by forked worker processes (at most one per usable core that is free,
`MAX_WORKERS`; one even on a busy machine, for what it saves), each of which:
- caps its own address space (`RLIMIT_AS`, the soft limit: what it uses now plus
  `HEADROOM_BYTES` and `HEADROOM_RATIO` times the file's bytes) before each file,
  so anything a hostile pickle could make the C unpickler allocate (a memo index
  of 2**31, a million empty dicts in a megabyte) is a MemoryError there, not
  memory taken from the machine;
- freezes what it inherited from this process (`gc.freeze`: no collection walks it)
  and collects nothing while a dump is read and normalized;
- therefore unpickles with the refusing C unpickler alone
  (`fr_pickle.load_refusing`): the pure-Python opcode walk, three times the
  cost of unpickling, runs only on a dump that failed, to name the refused
  opcode and its offset;
- sends back the compact columns (`flight_recorder.FRDump`), never the
  unpickled objects.
Otherwise (few files, a thread or a daemon process, no `fork` or no
`RLIMIT_AS`) each file is read here with the walk first (`safe_unpickle`).

The size bound of a dump is `fr_pickle.MAX_DUMP_BYTES`, checked by
`flight_recorder.read_bounded` on both paths.  Must not know about rules,
events or the engine.
"""
from __future__ import annotations

import gc
import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Iterable

from rulekit.extract.parallel import busy_cores, fork_is_safe, usable_cores
from rulekit.inputs.flight_recorder import FRDump, FRDumpError, read_bounded, parse_dump_bytes, rank_from_name

try:
    import resource
except ImportError:  # not a POSIX system
    resource = None  # type: ignore[assignment]

MIN_PARALLEL_FILES = 16  # fewer files than this are read here: a worker's start costs more
MAX_WORKERS = 4
HEADROOM_BYTES = 512 << 20  # address space a worker may grow by for one file, plus
HEADROOM_RATIO = 40  # this many times the file's bytes (a real dump unpickles into ~12x its bytes)
Result = FRDump | FRDumpError


def _vm_bytes() -> int:
    """This process's address-space size now (Linux /proc)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")


def can_cap() -> bool:
    """Whether a worker can cap its address space (Linux: RLIMIT_AS and /proc/self/statm)."""
    if resource is None or not hasattr(resource, "RLIMIT_AS"):
        return False
    try:
        _vm_bytes()
    except (OSError, ValueError):
        return False
    return True


def _read_capped(item: tuple[str, str]) -> Result:
    """In a worker: one file, under an address-space cap, without the opcode walk."""
    path, label = item
    p = Path(path)
    try:
        data = read_bounded(p, label)
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        cap = _vm_bytes() + HEADROOM_BYTES + HEADROOM_RATIO * len(data)
        if hard != resource.RLIM_INFINITY:
            cap = min(cap, hard)
        resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
        gc.disable()  # the dump's ~20 containers an entry live until it is normalized: no collection helps
        try:
            return parse_dump_bytes(data, label, rank_from_name(p.name), walk=False)
        finally:
            del data
            gc.enable()  # a cycle a hostile pickle made is collected from here on
            resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
    except FRDumpError as e:
        return e
    except MemoryError:
        return FRDumpError(label, "reading the dump asks for more memory than a dump can need")


def _read_dump_here(item: tuple[str, str]) -> Result:
    """One file, read in this process with the opcode walk first."""
    path, label = item
    p = Path(path)
    try:
        return parse_dump_bytes(read_bounded(p, label), label, rank_from_name(p.name))
    except FRDumpError as e:
        return e


def workers_for(n_files: int, requested: int | None = None) -> int:
    """Worker processes for reading `n_files` dumps (0: read here; `requested` 0 forces that)."""
    if n_files < MIN_PARALLEL_FILES or not can_cap() or not fork_is_safe():
        return 0
    if requested is not None:
        return max(0, requested)
    cores = usable_cores()
    # one worker even on a busy machine: it reads without the opcode walk (a third of the cost)
    return max(1, min(cores, MAX_WORKERS, cores - int(busy_cores()), n_files // 4))


def read_dump_files(items: Iterable[tuple[Path, str]], workers: int | None = None) -> list[Result]:
    """Each (path, label)'s FRDump, or the FRDumpError that refused it, in order."""
    todo = [(str(p), label) for p, label in items]
    n = workers_for(len(todo), workers)
    if n == 0:
        return [_read_dump_here(item) for item in todo]
    ctx = multiprocessing.get_context("fork")
    results: list[Result | None] = [None] * len(todo)
    lost = _run_pool(ctx, n, todo, range(len(todo)), results)
    for i in lost:  # a reader died and broke the pool: each file it left is read alone, once
        if _run_pool(ctx, 1, todo, [i], results):
            results[i] = FRDumpError(todo[i][1], "the process reading it ended without an answer (killed or "
                                                 "crashed: the dump asks for more than a reader can give)")
    return [r for r in results if r is not None]


def _run_pool(ctx, n: int, todo: list[tuple[str, str]], which: Iterable[int], results: list) -> list[int]:
    """Read the files `which` in a pool of `n` workers into `results`; the indices whose
    reader ended without an answer (a dead worker breaks the whole pool)."""
    lost = []
    with ProcessPoolExecutor(n, mp_context=ctx, initializer=gc.freeze) as pool:
        futures = {pool.submit(_read_capped, todo[i]): i for i in which}
        for fut in as_completed(futures):
            try:
                results[futures[fut]] = fut.result()
            except Exception:  # BrokenProcessPool, or a result that could not cross
                lost.append(futures[fut])
    return sorted(lost)
