"""A per-task time limit: run a function and interrupt it when it runs too long.

In a process's main thread (the local pool's workers, `-j 1`) the limit is a
SIGALRM timer, which also interrupts a blocking system call; in any other thread
(Dask runs tasks on a worker's thread pool) a watchdog timer raises the
exception asynchronously in the task's thread, which takes effect at the next
Python bytecode (a loop in a rule plugin, the engine's own code) but not inside
one long C call (`time.sleep`, a blocking read): for that case the caller may
pass `stuck`, called when the task is still running `grace` seconds after the
exception was raised (the Dask executor ends the worker process, and Dask
re-runs or reports its tasks).  Either way the function sees `JobTimeout`, a
BaseException so that a rule's `except Exception` cannot swallow it.  Must not
print or log.
"""
from __future__ import annotations

import ctypes
import signal
import threading
from typing import Callable, TypeVar

T = TypeVar("T")


class JobTimeout(BaseException):
    """Raised inside a task that ran past its time limit."""


def call_with_deadline(fn: Callable[[], T], seconds: float | None, stuck: Callable[[], None] | None = None,
                       grace: float = 10.0) -> T:
    """fn() or JobTimeout after `seconds` (None or <= 0: no limit)."""
    if not seconds or seconds <= 0:
        return fn()
    if threading.current_thread() is threading.main_thread() and hasattr(signal, "setitimer"):
        return _with_alarm(fn, seconds)
    return _with_watchdog(fn, seconds, stuck, grace)


def _with_alarm(fn: Callable[[], T], seconds: float) -> T:
    def on_alarm(signum, frame):
        raise JobTimeout(f"timed out after {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return fn()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _set_async_exc(tid: int, exc: type[BaseException] | None) -> None:
    """Raise `exc` in thread `tid` at its next bytecode; None clears a pending one (NULL)."""
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(tid), None if exc is None else ctypes.py_object(exc))


def _with_watchdog(fn: Callable[[], T], seconds: float, stuck: Callable[[], None] | None, grace: float) -> T:
    tid = threading.get_ident()
    lock = threading.Lock()
    state = {"done": False, "fired": False}

    def still_running() -> None:
        with lock:
            if state["done"]:
                return
        assert stuck is not None
        stuck()

    def fire() -> None:
        with lock:
            if state["done"]:
                return
            state["fired"] = True
            _set_async_exc(tid, JobTimeout)
        if stuck is not None:
            later = threading.Timer(grace, still_running)
            later.daemon = True
            later.start()

    timer = threading.Timer(seconds, fire)
    timer.daemon = True
    try:
        try:
            timer.start()
            return fn()
        finally:
            with lock:
                state["done"] = True
            timer.cancel()
            if state["fired"]:
                # the exception may still be pending if fn returned just as the timer fired
                _set_async_exc(tid, None)
    except JobTimeout:
        raise JobTimeout(f"timed out after {seconds:g} s") from None
