"""`rulekit.service.threads`: a request's CPU work in a worker thread, as anyio's
`to_thread.run_sync(..., abandon_on_cancel=True)` did it: the result or the exception
comes back to the awaiting coroutine, calls run in a copy of the caller's context
variables, at most `limit` at once, an idle thread is reused and ends after
`idle_s`; a cancelled call (the request deadline) is abandoned at once, gives its
turn back, and its thread serves again once it ends."""
from __future__ import annotations

import asyncio
import contextvars
import threading
import time

import pytest

from rulekit.service.threads import Threads

who = contextvars.ContextVar("who", default="nobody")


def test_result_exception_thread_and_context():
    async def main() -> None:
        t = Threads()
        loop_thread = threading.get_ident()
        assert await t.run(lambda: 6 * 7) == 42
        with pytest.raises(ValueError, match="bad"):
            await t.run(lambda: (_ for _ in ()).throw(ValueError("bad")))
        seen: list[int] = []
        for _ in range(5):  # one call at a time: the same idle thread each time
            await t.run(lambda: seen.append(threading.get_ident()))
        assert len(set(seen)) == 1 and seen[0] != loop_thread
        who.set("caller")
        assert await t.run(who.get) == "caller"
        assert t.idle() == 1

    asyncio.run(main())


def test_at_most_limit_calls_run_at_once():
    async def main() -> None:
        t = Threads(limit=2)
        running = peak = 0
        lock = threading.Lock()

        def work() -> None:
            nonlocal running, peak
            with lock:
                running += 1
                peak = max(peak, running)
            time.sleep(0.05)
            with lock:
                running -= 1

        await asyncio.gather(*(t.run(work) for _ in range(6)))
        assert peak == 2

    asyncio.run(main())


def test_a_cancelled_call_is_abandoned_and_gives_its_turn_back():
    async def main() -> None:
        t = Threads(limit=1)
        release = threading.Event()
        finished = threading.Event()

        def stuck() -> str:
            release.wait(30)
            finished.set()
            return "late"

        t0 = time.monotonic()
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.2):
                await t.run(stuck)
        assert time.monotonic() - t0 < 5 and not finished.is_set()
        assert await t.run(lambda: "next") == "next"  # the one turn is free again; another thread served it
        release.set()
        assert finished.wait(10)
        for _ in range(100):  # the abandoned thread goes back to the idle ones
            if t.idle() == 2:
                break
            await asyncio.sleep(0.02)
        assert t.idle() == 2

    asyncio.run(main())


def test_idle_threads_end():
    async def main() -> Threads:
        t = Threads(idle_s=0.2, name="threads-under-test")
        await t.run(lambda: None)
        return t

    t = asyncio.run(main())
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(x.name == "threads-under-test" for x in threading.enumerate()):
        time.sleep(0.05)
    assert not any(x.name == "threads-under-test" for x in threading.enumerate())
    assert t.idle() == 0
