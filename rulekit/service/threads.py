"""Worker threads for the CPU work of a request (attribution), handed over from the
event loop: `Threads.run(fn)` runs `fn()` in an idle worker thread (a new one when
none is idle) and awaits its result.

What anyio's `to_thread.run_sync(fn, abandon_on_cancel=True)` gave the Service,
for about a third of its cost per call (~55 µs of CPU instead of ~160 µs on the
2-core machine, one call at a time: a small request is a few milliseconds): at
most `limit` calls run at once (the others wait their turn on the loop); `fn`
runs in a copy of the caller's context variables; its exception is raised to the
awaiting coroutine.  A call whose awaiting coroutine is cancelled (the request
deadline) is abandoned: its turn is given back at once and its thread is left to
end on its own (the rule time budget stops a looping rule), then goes back to
the idle ones.  Threads idle for `idle_s` end; all are daemon threads, so one
stuck in C code never holds up the process's exit.  No routing, no HTTP.
"""
from __future__ import annotations

import asyncio
import contextvars
import queue
import threading
from typing import Any, Callable

IDLE_S = 10.0  # an idle worker thread ends after this (as anyio's do)
LIMIT = 40  # calls running at once at most (anyio's default thread limiter)


class Threads:
    def __init__(self, limit: int = LIMIT, idle_s: float = IDLE_S, name: str = "rulekit-request"):
        self.limit = limit
        self.idle_s = idle_s
        self.name = name
        self._idle: list[queue.SimpleQueue] = []  # each idle thread's inbox, the latest idle last
        self._lock = threading.Lock()
        self._turns: asyncio.Semaphore | None = None  # made on the loop, at the first call

    async def run(self, fn: Callable[[], Any]) -> Any:
        """`fn()` in a worker thread; cancelling the caller abandons the call."""
        if self._turns is None:
            self._turns = asyncio.Semaphore(self.limit)
        async with self._turns:
            loop = asyncio.get_running_loop()
            done = loop.create_future()
            with self._lock:
                inbox = self._idle.pop() if self._idle else None
            if inbox is None:
                inbox = queue.SimpleQueue()
                threading.Thread(target=self._serve, args=(inbox,), name=self.name, daemon=True).start()
            inbox.put((contextvars.copy_context(), fn, loop, done))
            return await done

    def _serve(self, inbox: queue.SimpleQueue) -> None:
        while True:
            try:
                ctx, fn, loop, done = inbox.get(timeout=self.idle_s)
            except queue.Empty:
                with self._lock:
                    if inbox in self._idle:  # still idle (not just handed a call): end
                        self._idle.remove(inbox)
                        return
                continue  # a call is on its way
            try:
                result, ok = ctx.run(fn), True
            except BaseException as e:  # noqa: BLE001 - raised in the awaiting coroutine
                result, ok = e, False
            del ctx, fn
            with self._lock:  # idle before the caller hears back: its next call finds this thread
                self._idle.append(inbox)
            try:
                loop.call_soon_threadsafe(_deliver, done, ok, result)
            except RuntimeError:  # the loop is closed: nobody waits for it
                pass
            del loop, done, result

    def idle(self) -> int:
        """Threads waiting for a call."""
        with self._lock:
            return len(self._idle)


def _deliver(done: asyncio.Future, ok: bool, result: Any) -> None:
    if done.cancelled():  # abandoned: its caller has gone
        return
    if ok:
        done.set_result(result)
    else:
        done.set_exception(result)
