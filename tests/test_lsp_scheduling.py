"""The language server's scheduling (`rulekit_lsp.scheduling`): keyed debounce timers,
background jobs one at a time per corpus and superseded by newer ones, coalesced
lint, and everything of a rebuilt corpus cancelled; and the workspace's jobs
honour it (a stopped test run keeps its cache entries but not its results)."""
from __future__ import annotations

import asyncio
import shutil
import threading
from pathlib import Path

from rulekit_lsp.scheduling import Cancellable, Scheduler
from rulekit_lsp.workspace import Corpus

FIX = Path(__file__).parent / "lsp_fixtures"


class Corp:  # a stand-in corpus: only its identity matters to the scheduler
    pass


async def test_a_timer_set_again_fires_once_with_the_last_function():
    s, fired = Scheduler(), []
    for i in range(5):
        s.call_later(("change", "u"), 0.05, lambda i=i: fired.append(i))
    assert s.pending("change") and not s.pending("lint")
    await asyncio.sleep(0.2)
    assert fired == [4] and not s.pending("change")
    s.call_later(("change", "u"), 0.05, lambda: fired.append("x"))
    assert s.cancel(("change", "u")) and not s.cancel(("change", "u"))
    await asyncio.sleep(0.1)
    assert fired == [4]


async def test_a_newer_job_drops_the_queued_one_and_stops_the_running_one():
    s, c = Scheduler(), Corp()
    gate, started, order = threading.Event(), threading.Event(), []

    def slow(job: Cancellable, name: str):
        def run():
            started.set()
            while not gate.wait(0.01):
                if job.cancelled:
                    order.append(f"{name} stopped")
                    return "partial"
            order.append(f"{name} done")
            return name
        return run

    j1, j2, j3 = Cancellable(), Cancellable(), Cancellable()
    t1 = asyncio.ensure_future(s.latest(("tests", c, "a.toml"), j1, slow(j1, "v1")))
    await asyncio.sleep(0)
    assert await asyncio.to_thread(started.wait, 5)
    t2 = asyncio.ensure_future(s.latest(("tests", c, "a.toml"), j2, slow(j2, "v2")))  # v1 running: stopped
    await asyncio.sleep(0)
    t3 = asyncio.ensure_future(s.latest(("tests", c, "a.toml"), j3, slow(j3, "v3")))  # v2 queued: dropped
    await asyncio.sleep(0.05)
    gate.set()
    assert await t1 == (True, "partial")
    assert await t2 == (False, None)
    assert await t3 == (True, "v3")
    assert order == ["v1 stopped", "v3 done"]


async def test_jobs_of_one_corpus_run_one_at_a_time_and_other_keys_are_not_superseded():
    s, c = Scheduler(), Corp()
    running, most = [0], [0]

    def work():
        running[0] += 1
        most[0] = max(most[0], running[0])
        threading.Event().wait(0.05)
        running[0] -= 1
        return "ok"

    got = await asyncio.gather(s.latest(("tests", c, "a"), Cancellable(), work),
                               s.latest(("tests", c, "b"), Cancellable(), work),
                               s.exclusive(c, work))
    assert got == [(True, "ok"), (True, "ok"), "ok"] and most[0] == 1


async def test_a_job_in_its_own_lane_does_not_wait_for_the_corpus_lane():
    s, c = Scheduler(), Corp()
    gate = threading.Event()
    slow = asyncio.ensure_future(s.latest(("lint-run", c), Cancellable(), lambda: gate.wait(10), lane=("lint", c)))
    await asyncio.sleep(0.05)
    assert await asyncio.wait_for(s.latest(("tests", c, "a"), Cancellable(), lambda: "tests"), 5) == (True, "tests")
    gate.set()
    assert await slow == (True, True)


async def test_coalesce_runs_once_more_when_asked_while_running():
    s, c, runs = Scheduler(), Corp(), []

    async def body():
        runs.append(len(runs))
        await asyncio.sleep(0.05)

    first = asyncio.ensure_future(s.coalesce(("lint", c), body))
    await asyncio.sleep(0.01)
    for _ in range(3):  # three edits during the lint: one more lint, not three
        await s.coalesce(("lint", c), body)
    await first
    assert runs == [0, 1]


async def test_a_rebuilt_corpus_loses_its_timers_and_jobs():
    s, old, new, fired = Scheduler(), Corp(), Corp(), []
    s.call_later(("lint", old), 0.05, lambda: fired.append("old"))
    s.call_later(("lint", new), 0.05, lambda: fired.append("new"))
    job = Cancellable()
    s._latest[("tests", old, "a")] = job
    s.cancel_corpus(old)
    assert job.cancelled
    await asyncio.sleep(0.15)
    assert fired == ["new"]
    runs = []

    async def body():
        runs.append(1)

    await s.coalesce(("lint", old), body)  # a lint asked for the old corpus does not run
    await s.coalesce(("lint", new), body)
    assert runs == [1]


def test_a_stopped_test_run_keeps_cache_entries_but_not_results(tmp_path: Path):
    shutil.copytree(FIX / "ws", tmp_path / "ws")
    c = Corpus([tmp_path / "ws" / "rules"])
    job = c.test_job(paths=None, jobs=True)
    job.stop.cancel()
    results, cache = job.run()
    assert not job.complete and results == {} and cache == {}
    c.apply_tests(job, results, cache)
    assert c.results == {} and c.full_run is None
    job = c.test_job(paths=None, jobs=True)
    results, cache = job.run()
    assert job.complete and cache
    c.apply_tests(job, results, cache)
    assert c.results and c.full_run is not None


def test_a_stopped_lint_applies_nothing(tmp_path: Path):
    shutil.copytree(FIX / "ws", tmp_path / "ws")
    c = Corpus([tmp_path / "ws" / "rules"])
    job = c.lint_job()
    job.stop.cancel()
    assert job.run() is None
