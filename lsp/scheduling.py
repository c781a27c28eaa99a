"""When the language server's work runs: debounce timers, background jobs, cancellation.

* Timers are keyed (`("change", uri)`, `("lint", corpus)`): setting one replaces the
  previous timer of that key, so a burst of keystrokes analyses once.
* Background jobs run in a worker thread, one at a time per corpus (a lock per
  corpus), and are keyed too: a newer job of the same key supersedes the older one
  (dropped if still queued, asked to stop at its next checkpoint if running), so
  typing never queues test runs of texts that are gone.
* `coalesce(key, body)` runs an async body once more if it was asked for while it
  ran (lint after an edit made during a lint), never twice at once.
* `cancel_corpus(corpus)`: a corpus rebuilt (new settings, new folders) loses its
  timers and jobs.

Must not: know rulekit or LSP types, analyse anything, publish.
"""
from __future__ import annotations

import asyncio
import threading
import weakref
from typing import Any, Awaitable, Callable, Hashable


class Cancellable:
    """What a superseded job is told: `cancel()` from the event loop, `cancelled`
    polled by the job at its checkpoints (from its worker thread)."""

    def __init__(self) -> None:
        self._event = threading.Event()

    def cancel(self) -> None:
        self._event.set()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()


def _corpus_of(key: Hashable) -> Any:
    return key[1] if isinstance(key, tuple) and len(key) > 1 else None


class Scheduler:
    def __init__(self) -> None:
        self._timers: dict[Hashable, asyncio.TimerHandle] = {}
        self._tasks: set[asyncio.Task] = set()
        self._locks: dict[Any, asyncio.Lock] = {}  # corpus -> one background job at a time
        self._latest: dict[Hashable, Cancellable] = {}  # job key -> the newest job of that key
        self._busy: set[Hashable] = set()  # coalesced bodies running
        self._again: set[Hashable] = set()  # ... asked for again while running
        self._dead: weakref.WeakSet = weakref.WeakSet()  # corpora cancelled (their coalesced loops stop)

    # ---- timers -------------------------------------------------------------------------
    def call_later(self, key: Hashable, delay_s: float, fn: Callable[[], None]) -> None:
        """Run fn after delay_s unless the key is set again (or cancelled) before."""
        self.cancel(key)

        def fire() -> None:
            self._timers.pop(key, None)
            fn()

        self._timers[key] = asyncio.get_event_loop().call_later(delay_s, fire)

    def cancel(self, key: Hashable) -> bool:
        """Drop the key's timer; True when there was one (its work did not run)."""
        h = self._timers.pop(key, None)
        if h is None:
            return False
        h.cancel()
        return True

    def pending(self, kind: str) -> bool:
        """Is a timer of this kind (the first item of its key) waiting?"""
        return any(isinstance(k, tuple) and k and k[0] == kind for k in self._timers)

    # ---- tasks and threads --------------------------------------------------------------
    def spawn(self, coro: Awaitable) -> asyncio.Future:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)  # type: ignore[arg-type]
        task.add_done_callback(self._tasks.discard)  # type: ignore[arg-type]
        return task

    @staticmethod
    def background(fn: Callable[[], Any]) -> asyncio.Future:
        """Run fn in a daemon thread (so exit never waits for a long lint) and await it."""
        loop = asyncio.get_running_loop()
        fut = loop.create_future()

        def work() -> None:
            try:
                result = fn()
            except BaseException as e:  # noqa: BLE001 - handed to the awaiting coroutine
                loop.call_soon_threadsafe(lambda exc=e: fut.done() or fut.set_exception(exc))
            else:
                loop.call_soon_threadsafe(lambda: fut.done() or fut.set_result(result))

        threading.Thread(target=work, daemon=True, name="rulekit-lsp-job").start()
        return fut

    async def exclusive(self, corpus: Any, fn: Callable[[], Any]) -> Any:
        """fn in a worker thread, after the corpus's other background jobs."""
        async with self._locks.setdefault(corpus, asyncio.Lock()):
            return await self.background(fn)

    async def latest(self, key: Hashable, job: Cancellable, fn: Callable[[], Any],
                     lane: Hashable | None = None) -> tuple[bool, Any]:
        """fn (the work of `job`) in a worker thread, one job at a time per lane (default:
        the corpus, `key[1]`; lint has its own lane, so a long first lint never holds
        back test results); supersedes the previous job of this key.  (ran, result):
        ran is False when the job was superseded before it started; a job superseded
        while running is cancelled and returns what fn returns then (partial work)."""
        prev = self._latest.get(key)
        if prev is not None:
            prev.cancel()
        self._latest[key] = job
        try:
            async with self._locks.setdefault(lane if lane is not None else _corpus_of(key), asyncio.Lock()):
                if job.cancelled:
                    return False, None
                return True, await self.background(fn)
        finally:
            if self._latest.get(key) is job:
                del self._latest[key]

    async def coalesce(self, key: Hashable, body: Callable[[], Awaitable[None]]) -> None:
        """Run body; if asked again while it runs, run it once more afterwards."""
        if key in self._busy:
            self._again.add(key)
            return
        self._busy.add(key)
        try:
            while True:
                self._again.discard(key)
                corpus = _corpus_of(key)
                if corpus is not None and corpus in self._dead:
                    return
                await body()
                if key not in self._again:
                    return
        finally:
            self._busy.discard(key)

    # ---- cancellation -------------------------------------------------------------------
    def cancel_corpus(self, corpus: Any) -> None:
        """A corpus was replaced: its timers never fire, its jobs stop at their next checkpoint."""
        for key in [k for k in self._timers if _corpus_of(k) is corpus]:
            self.cancel(key)
        for key in [k for k in self._latest if _corpus_of(k) is corpus]:
            self._latest.pop(key).cancel()
        self._dead.add(corpus)
        for lane in [k for k in self._locks if k is corpus or _corpus_of(k) is corpus]:
            del self._locks[lane]
        for key in [k for k in self._again if _corpus_of(k) is corpus]:
            self._again.discard(key)
