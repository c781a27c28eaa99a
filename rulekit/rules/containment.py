"""Rule code contained while it runs in this process: a time budget per call, and
its writes to stdout kept off our output.

Plugins are probed in a child at import (`rulekit.rules.sandbox`), but their
rule functions must run here, at attribution (filters, refiners, collectors,
accumulators) and at the loader's own import of a probed file (a plugin may
behave in the probe and loop the second time).  `contained(match, budget)` marks
the calling thread for the duration:

- Time: one watchdog thread samples the marked threads' stacks every tick
  (`sys._current_frames()`) and finds the outermost frame of rule code (`match`
  on its code object).  The same frame object seen for longer than `budget`
  seconds is one call that ran too long: `RuleTimeout` is raised in that thread
  (`PyThreadState_SetAsyncExc`, at its next bytecode), again every tick while
  the call goes on.  Nothing is done per rule call, so a normal attribution pays
  nothing for it; a call blocked inside C (`time.sleep`, a socket read) sees the
  exception only when it returns (the Service's request deadline answers for it
  meanwhile).  The watchdog runs while a thread is marked and for `LINGER_S`
  after the last stretch ends (then it ends by itself), so a server answering
  many small requests starts it once, not once per stretch; it holds no lock
  while it waits and is marked `fork_safe`, so the chunk-parallel scan may still fork.
- Output: `sys.stdout` is wrapped for as long as a thread is marked; a write
  from a marked thread is kept (`Contained.output`, per rule and location)
  instead of reaching the real stream (a JSON report, the language server's
  protocol); other threads write through.  Writes that bypass `sys.stdout`
  (`os.write(1, ...)`, a C extension) are not caught here.

Catching is the caller's: `RuleTimeout` is a BaseException (a rule's
`except Exception:` does not swallow it), caught with `SystemExit` at each
place rule code is called and recorded in `rule_errors`.  Must not import the
engine or anything above the rules group.
"""
from __future__ import annotations

import ctypes
import os
import sys
import threading
import time
from contextlib import contextmanager
from types import CodeType, FrameType
from typing import Any, Callable, Iterable, Iterator

MAX_OUTPUT_KEPT = 2000  # characters of a rule's stdout output quoted in its rule error
LINGER_S = 2.0  # the watchdog ends this long after the last marked stretch (a new stretch meanwhile reuses it)


class RuleTimeout(BaseException):
    """Raised inside rule code that ran past its time budget."""


class Contained:
    """One marked stretch of one thread: what its rule code did."""

    __slots__ = ("match", "budget", "names", "frame", "since", "fired", "timeouts", "output")

    def __init__(self, match: Callable[[CodeType], bool], budget: float | None,
                 names: dict[CodeType, str] | None = None):
        self.match = match
        self.budget = budget
        self.names = names or {}
        self.frame: FrameType | None = None
        self.since = 0.0
        self.fired = 0.0
        self.timeouts = 0
        self.output: dict[tuple[str, str], list] = {}  # (rule, where) -> [characters, first text]

    def rule_of(self, frame: FrameType | None) -> tuple[str, str]:
        """(rule name, file:line of the write) for a write made from `frame`."""
        where = f"{frame.f_code.co_filename}:{frame.f_lineno}" if frame is not None else "?"
        name = "?"
        f = frame
        while f is not None:
            code = f.f_code
            if self.match(code):
                name = self.names.get(code, name)
            f = f.f_back
        return name, where

    def output_errors(self) -> list[dict[str, str]]:
        """The writes to stdout as `rule_errors` entries (one per rule and place)."""
        out = []
        for (rule, where), (n, text) in self.output.items():
            shown = text if len(text) <= 200 else text[:200] + "…"
            out.append({"rule": rule, "error": f"OutputToStdout: the rule wrote {n} characters to stdout "
                                               f"(kept off rulekit's output): {shown!r}", "where": where})
        return out


# ---- the marked threads and the watchdog ------------------------------------------------------

_MARKED: dict[int, Contained] = {}  # thread id -> its innermost marked stretch (plain dict: GIL-atomic ops)
_LOCK = threading.Lock()  # start of the watchdog, the stdout wrapper's count; never held by the watchdog
_STATE: dict[str, Any] = {"thread": None, "stop": threading.Event(), "guards": 0}


def _set_async_exc(tid: int, exc: type[BaseException] | None) -> None:
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(tid), None if exc is None else ctypes.py_object(exc))


def _outermost(frame: FrameType | None, entry: Contained) -> FrameType | None:
    found = None
    while frame is not None:
        if entry.match(frame.f_code):
            found = frame
        frame = frame.f_back
    return found


def _tick_of() -> float:
    budgets = [e.budget for e in list(_MARKED.values()) if e.budget]
    return max(0.02, min(0.25, min(budgets) / 5)) if budgets else 0.25


def _watch(stop: threading.Event) -> None:
    idle_since = None
    while not stop.wait(_tick_of()):
        now = time.monotonic()
        marked = list(_MARKED.items())
        if not marked:
            if idle_since is None:
                idle_since = now
            elif now - idle_since >= LINGER_S and _retire(stop):
                return
            continue
        idle_since = None
        frames = sys._current_frames()
        for tid, entry in marked:
            if not entry.budget:
                continue
            top = _outermost(frames.get(tid), entry)
            if top is None:
                entry.frame = None
                continue
            if top is not entry.frame:
                entry.frame, entry.since, entry.fired = top, now, 0.0
                continue
            if now - entry.since >= entry.budget and now - entry.fired >= min(entry.budget, 1.0):
                if _MARKED.get(tid) is entry:  # still that stretch
                    entry.fired = now
                    entry.timeouts += 1
                    _set_async_exc(tid, RuleTimeout)
        del frames, marked


def _ensure_watchdog() -> None:
    """Start the watchdog unless it runs (called with _LOCK held)."""
    t = _STATE["thread"]
    if t is not None and t.is_alive() and not _STATE["stop"].is_set():
        return
    stop = threading.Event()
    t = threading.Thread(target=_watch, args=(stop,), name="rulekit-rule-watchdog", daemon=True)
    t.fork_safe = True  # type: ignore[attr-defined]  # holds no lock while it waits: see rulekit.extract.parallel
    _STATE["thread"], _STATE["stop"] = t, stop
    t.start()


def _retire(stop: threading.Event) -> bool:
    """The watchdog's own end, idle for LINGER_S: only while still no thread is marked
    (a stretch that starts meanwhile finds it gone and starts a new one)."""
    with _LOCK:
        if _MARKED:
            return False
        stop.set()
        if _STATE["stop"] is stop:
            _STATE["thread"] = None
        return True


def _after_fork_in_child() -> None:
    global _LOCK
    _LOCK = threading.Lock()
    _STATE["thread"], _STATE["stop"] = None, threading.Event()
    if _MARKED:  # a chunk-scan worker forked in the middle of an attribution: its rule calls are watched too
        me = threading.get_ident()
        for tid in [t for t in _MARKED if t != me]:
            _MARKED.pop(tid, None)
        if _MARKED:
            _ensure_watchdog()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


# ---- stdout ---------------------------------------------------------------------------------

class _GuardedStdout:
    """sys.stdout while rule code runs: a marked thread's writes are kept, others pass."""

    def __init__(self, inner: Any):
        self._inner = inner

    def write(self, s: str) -> int:
        entry = _MARKED.get(threading.get_ident())
        if entry is None:
            return self._inner.write(s)
        if not s:
            return 0
        key = entry.rule_of(sys._getframe(1))
        got = entry.output.get(key)
        if got is None:
            entry.output[key] = [len(s), s[:MAX_OUTPUT_KEPT]]
        else:
            got[0] += len(s)
            if len(got[1]) < MAX_OUTPUT_KEPT:
                got[1] = (got[1] + s)[:MAX_OUTPUT_KEPT]
        return len(s)

    def writelines(self, lines: Iterable[str]) -> None:
        for x in lines:
            self.write(x)

    def flush(self) -> None:
        if threading.get_ident() not in _MARKED:
            self._inner.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def _guard_stdout() -> None:
    with _LOCK:
        if _STATE["guards"] == 0 or not isinstance(sys.stdout, _GuardedStdout):
            if not isinstance(sys.stdout, _GuardedStdout):
                sys.stdout = _GuardedStdout(sys.stdout)
        _STATE["guards"] += 1


def _unguard_stdout() -> None:
    with _LOCK:
        _STATE["guards"] -= 1
        if _STATE["guards"] <= 0:
            _STATE["guards"] = 0
            if isinstance(sys.stdout, _GuardedStdout):
                sys.stdout = sys.stdout._inner


# ---- the caller's side ------------------------------------------------------------------------

@contextmanager
def contained(match: Callable[[CodeType], bool], budget: float | None,
              names: dict[CodeType, str] | None = None) -> Iterator[Contained]:
    """Mark this thread while the body runs rule code (see the module docstring).
    Nested use keeps the outer stretch's record of output and timeouts."""
    tid = threading.get_ident()
    outer = _MARKED.get(tid)
    entry = Contained(match, budget, names)
    if outer is not None:
        entry.output = outer.output
    with _LOCK:
        _MARKED[tid] = entry
        if budget:
            _ensure_watchdog()
    _guard_stdout()
    try:
        yield entry
    finally:
        with _LOCK:
            if outer is not None:
                _MARKED[tid] = outer
                outer.timeouts += entry.timeouts
            else:
                _MARKED.pop(tid, None)  # the watchdog lingers, then ends by itself (`_watch`)
        if entry.timeouts:
            _set_async_exc(tid, None)  # one fired as the call returned must not hit the caller
        _unguard_stdout()


def rule_codes(rules: Iterable[Any]) -> dict[CodeType, str]:
    """Code object -> rule name, for the Python rule code of `rules`: functions of
    filters, refiners, collectors, and the methods an accumulator class defines."""
    out: dict[CodeType, str] = {}
    for r in rules:
        fns: list[Any] = []
        func = getattr(r, "func", None)
        if func is not None:
            fns.append(func)
        factory = getattr(r, "factory", None)
        if isinstance(factory, type):
            for klass in factory.__mro__:
                if klass.__module__.startswith("rulekit.") or klass is object:
                    continue
                fns += [v for v in vars(klass).values() if callable(v)]
        elif factory is not None:
            fns.append(factory)
        for fn in fns:
            code = getattr(getattr(fn, "__func__", fn), "__code__", None)
            if isinstance(code, CodeType):
                out.setdefault(code, r.name)
    return out


def of_file(path: str) -> Callable[[CodeType], bool]:
    """Matches code compiled from `path` (a plugin file's module body and functions)."""
    return lambda code: code.co_filename == path
