"""Differential test: a log scanned by worker processes chunk by chunk
(`rulekit.extract.parallel`) gives byte-identical results to the serial scan —
line numbers, timestamps carried to unstamped lines, accumulators running across
chunk boundaries and the repeat cap included.

Data: every example job directory, and generated job directories (seeded)
whose logs mix every extractor's and accumulator's own test lines with stamped
and unstamped benign lines, rank prefixes, CRLF line ends, invalid UTF-8 and one
evidence line repeated past the cap.  Small chunks (4 KiB) make every log many
chunks, so chunk boundaries fall everywhere.
"""
from __future__ import annotations

import json
import os
import random
import shutil
from pathlib import Path

import pytest

import rulekit.engine.phases as phases
from rulekit.engine.workerhits import LEFT_OUT
from rulekit.engine.jobrun import attribute_dir
from rulekit.extract import parallel
from rulekit.rules.loader import load_corpus

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = sorted(p for p in (REPO / "examples").iterdir() if (p / "job.toml").is_file())
SMALL_CHUNK = 4096


@pytest.fixture(scope="module")
def engine():
    return load_corpus(None).engine


def _evidence_lines(engine) -> list[str]:
    out: list[str] = []
    for r in (*engine.extractors, *engine.accumulators):
        for t in r.tests:
            if t.line:
                out.append(t.line)
    return sorted(set(out))


BENIGN = [
    "2026-06-01 03:{m:02d}:{s:02d} [Rank 3] data loader: fetched batch {n} in 23.4 ms",
    "[{up}.{frac:03d}] kernel: eth0: link up",
    "iteration {n}/500000 | lm loss: 1.8E+00",
    "Jun  1 03:{m:02d}:{s:02d} node-01 systemd[1]: Started session {n}.",
    "I0601 03:{m:02d}:{s:02d}.123456 {n} reducer.cpp:123] bucket view",
    "successfully saved checkpoint from iteration {n}",
]


def _positive_lines(engine) -> list[str]:
    """The test lines a rule must fire on (the repeated line has to be evidence)."""
    return sorted({t.line for r in (*engine.extractors, *engine.accumulators) for t in r.tests
                   if t.line and t.expect != "nothing"})


def _make_log(rng: random.Random, evidence: list[str], n_lines: int, positive: list[str] | None = None) -> bytes:
    repeated = rng.choice(positive or evidence).split("\n")[0]
    parts: list[bytes] = []
    for i in range(n_lines):
        r = rng.random()
        if r < 0.12:
            text = rng.choice(evidence)
        elif r < 0.16:
            text = repeated  # the same evidence again and again: past the repeat cap
        else:
            text = rng.choice(BENIGN).format(m=i // 60 % 60, s=i % 60, n=i, up=1000 + i, frac=i % 1000)
        for line in text.split("\n"):
            if rng.random() < 0.5:
                line = f"{rng.randrange(16)}: {line}"
            raw = line.encode("utf-8")
            if rng.random() < 0.02:
                raw += b" \xff\xfe broken"
            parts.append(raw + (b"\r\n" if rng.random() < 0.05 else b"\n"))
    return b"".join(parts)


def _generated_job(tmp: Path, engine, seed: int) -> Path:
    rng = random.Random(seed)
    dest = tmp / f"gen-{seed}"
    shutil.copytree(REPO / "examples" / "xid149-nvlink", dest)
    evidence, positive = _evidence_lines(engine), _positive_lines(engine)
    (dest / "applog" / "train.log").write_bytes(_make_log(rng, evidence, 3000, positive))
    (dest / "syslog" / "node-01.log").write_bytes(_make_log(rng, evidence, 800, positive))
    return dest


def _attribute(engine, job: Path, workers: int, monkeypatch, chunk: int) -> str:
    monkeypatch.setattr(engine, "options", engine.options.with_(scan_workers=workers))
    monkeypatch.setattr(phases.ExtractionPhase, "chunk_size", chunk)
    return json.dumps(attribute_dir(engine, job, with_trace=True), sort_keys=True, default=str)


@pytest.fixture
def counted(monkeypatch):
    """Counts the logs scanned by workers (so a serial-vs-serial comparison cannot pass as a test)."""
    calls = []
    real = phases.parallel_scan

    def spy(*a, **k):
        calls.append(a[0])
        for chunk, hits, got in real(*a, **k):
            # hits a worker knew were capped: one entry per group and chunk, facts entry (count, ...)
            calls.extend(("left out",) * sum(f[0] for h, f in zip(hits, got[0]) if h[2] == LEFT_OUT))
            calls.extend(("left-out entry",) * sum(1 for h in hits if h[2] == LEFT_OUT))
            yield chunk, hits, got

    monkeypatch.setattr(phases, "parallel_scan", spy)
    if not parallel.fork_is_safe():
        pytest.fail("this process has other threads, so the scan would not fork: the differential "
                    "test must run before tests that leave threads (tests/conftest.py FORK_FIRST)")
    return calls


@pytest.mark.parametrize("job", EXAMPLES, ids=lambda p: p.name)
def test_examples_chunked_in_workers_equal_serial(engine, job, monkeypatch, counted):
    serial = _attribute(engine, job, 0, monkeypatch, SMALL_CHUNK)
    assert not counted
    chunked = _attribute(engine, job, 2, monkeypatch, SMALL_CHUNK)
    assert chunked == serial
    has_logs = any(p.is_file() and p.stat().st_size for p in job.rglob("*.log"))
    assert counted or not has_logs


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_generated_logs_chunked_in_workers_equal_serial(engine, tmp_path, seed, monkeypatch, counted):
    job = _generated_job(tmp_path, engine, seed)
    serial = _attribute(engine, job, 0, monkeypatch, SMALL_CHUNK)
    chunked = _attribute(engine, job, 2, monkeypatch, SMALL_CHUNK)
    assert len(counted) >= 2  # both logs went through the workers
    assert chunked == serial
    res = json.loads(serial)
    assert res.get("evidence_omitted", 0) > 0  # the repeat cap was reached
    events = [t for t in res.get("trace", [])]
    assert events  # attribution did something with the evidence
    assert chunked == _attribute(engine, job, 3, monkeypatch, SMALL_CHUNK)  # any number of workers


@pytest.mark.parametrize("job", EXAMPLES, ids=lambda p: p.name)
def test_examples_give_the_same_trace_in_any_chunks(engine, job, monkeypatch):
    """Event ids, and so the trace that lists events by id, are those of the file read
    as one chunk (`storeorder.StoreOrder`): an accumulator still running at a chunk's end
    keeps its place among the events stored after it.  (At 4 KiB, two examples' traces
    used to differ from their one-chunk traces.)"""
    whole = _attribute(engine, job, 0, monkeypatch, 1 << 30)
    assert _attribute(engine, job, 0, monkeypatch, SMALL_CHUNK) == whole
    assert _attribute(engine, job, 0, monkeypatch, 512) == whole


@pytest.mark.parametrize("seed", [4, 5])
def test_generated_logs_give_the_same_trace_in_any_chunks(engine, tmp_path, seed, monkeypatch):
    """The same on logs with every accumulator's test lines, chunk boundaries everywhere."""
    job = _generated_job(tmp_path, engine, seed)
    whole = _attribute(engine, job, 0, monkeypatch, 1 << 30)
    assert '"trace"' in whole
    for chunk in (SMALL_CHUNK, 1500, 300):
        assert _attribute(engine, job, 0, monkeypatch, chunk) == whole
    assert _attribute(engine, job, 2, monkeypatch, SMALL_CHUNK) == whole


def test_default_chunks_in_workers_equal_serial(engine, tmp_path, monkeypatch, counted):
    job = _generated_job(tmp_path, engine, 9)
    chunk = phases.ExtractionPhase.chunk_size
    assert _attribute(engine, job, 2, monkeypatch, chunk) == _attribute(engine, job, 0, monkeypatch, chunk)


def test_workers_are_used_only_for_large_files_with_cores(monkeypatch):
    assert parallel.scan_workers(parallel.PARALLEL_MIN_BYTES - 1) == 0
    monkeypatch.setattr(parallel, "usable_cores", lambda: 1)
    assert parallel.scan_workers(1 << 40) == 0
    monkeypatch.setattr(parallel, "usable_cores", lambda: 2)
    monkeypatch.setattr(parallel, "fork_is_safe", lambda: True)
    monkeypatch.setattr(parallel, "busy_cores", lambda: 0)
    assert parallel.scan_workers(parallel.PARALLEL_MIN_BYTES) == 2
    monkeypatch.setattr(parallel, "busy_cores", lambda: 1)  # the other core is busy
    assert parallel.scan_workers(1 << 40) == 0
    monkeypatch.setattr(parallel, "usable_cores", lambda: 8)
    assert parallel.scan_workers(1 << 40) == parallel.MAX_WORKERS
    monkeypatch.setattr(parallel, "fork_is_safe", lambda: False)
    assert parallel.scan_workers(1 << 40) == 0
    monkeypatch.setattr(parallel, "fork_is_safe", lambda: True)
    assert parallel.scan_workers(1 << 40, requested=1) == 0  # the engine option (RULEKIT_SCAN_WORKERS) decides
    assert parallel.scan_workers(10, requested=3) == 3
    monkeypatch.setattr(parallel, "fork_is_safe", lambda: False)
    assert parallel.scan_workers(10, requested=3) == 0
    monkeypatch.setattr(parallel, "fork_is_safe", lambda: True)  # -j N bounds the automatic choice
    assert [parallel.scan_workers(1 << 40, cap=c) for c in (1, 2, 3, 99)] == [0, 2, 3, parallel.MAX_WORKERS]
    assert parallel.scan_workers(1 << 40, requested=3, cap=1) == 3  # RULEKIT_SCAN_WORKERS stands


def test_busy_cores_are_the_other_tasks_running_now_not_the_last_minutes(monkeypatch):
    """`/proc/loadavg`: three load averages, then `running/total` (this task among the
    running).  A minute after two busy processes ended the 1-minute average still says
    2.5; the cores are free, and a log is scanned on both."""
    assert parallel.runnable_others("2.50 1.39 1.18 1/80 22527") == 0
    assert parallel.runnable_others("0.10 0.20 0.30 3/412 9") == 2
    assert parallel.runnable_others("0.00 0.00 0.00 0/1 1\n") == 0
    monkeypatch.setattr(parallel, "usable_cores", lambda: 2)
    monkeypatch.setattr(parallel, "fork_is_safe", lambda: True)
    monkeypatch.setattr(parallel, "load_average", lambda: 2.5)
    monkeypatch.setattr(parallel, "runnable_others", lambda text: 0)
    assert parallel.scan_workers(1 << 40) == 2
    if not os.path.exists("/proc/loadavg"):  # elsewhere: the load average, this process not counted
        assert parallel.busy_cores() == 1.5
    else:  # a task that ran at one look is not a busy core: the fewest seen counts
        looks = iter([2, 1, 3, 1, 2])
        monkeypatch.setattr(parallel, "runnable_others", lambda text: next(looks))
        assert parallel.busy_cores() == 1
        looks = iter([1, 0])
        assert parallel.busy_cores() == 0  # (no more looks once one saw none)


def test_an_abandoned_scan_leaves_no_worker(engine, tmp_path, monkeypatch):
    import multiprocessing

    if not parallel.fork_is_safe():
        pytest.fail("this process has other threads, so the scan would not fork: the differential "
                    "test must run before tests that leave threads (tests/conftest.py FORK_FIRST)")
    job = _generated_job(tmp_path, engine, 4)
    plan = engine.scan_plan("applog", "text")
    before = set(multiprocessing.active_children())  # another test's, if any
    it = parallel.parallel_scan(job / "applog" / "train.log", plan.scanner, 2, size=SMALL_CHUNK)
    next(it)
    assert set(multiprocessing.active_children()) - before
    it.close()
    assert not set(multiprocessing.active_children()) - before


def test_no_processes_to_be_had_means_a_serial_scan(engine, tmp_path, monkeypatch):
    job = _generated_job(tmp_path, engine, 5)
    log = job / "applog" / "train.log"
    plan = engine.scan_plan("applog", "text")

    def refuse(*a, **k):
        raise OSError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(parallel.multiprocessing.get_context("fork").Process, "start", refuse)
    got = list(parallel.parallel_scan(log, plan.scanner, 2, size=SMALL_CHUNK))
    with open(log, "rb") as f:
        want = [(c, plan.scanner.scan(c), None) for c in parallel.iter_chunks(f, SMALL_CHUNK)]
    assert got == want and len(got) > 10


def _stored_events(engine, job: Path, workers: int, monkeypatch, **caps: int) -> list[tuple]:
    """Every event row extraction stored (fields, carried timestamps, line numbers) and
    every `event_repeats` row (`caps`: repeat_cap / group_cap for the run)."""
    from rulekit.engine.session import Session
    from rulekit.inputs.jobdir import read_job_dir

    monkeypatch.setattr(engine, "options", engine.options.with_(scan_workers=workers, **caps))
    monkeypatch.setattr(phases.ExtractionPhase, "chunk_size", SMALL_CHUNK)
    jd = read_job_dir(job)
    with Session(engine, jd.job) as s:
        s.ingest_batch(jd.observations)
        s.manager.flush()
        conn = s.manager.conn
        return conn.execute(
            "SELECT event_type, source_rule, timestamp, line_num, source_datum, resources, symptom, rank, payload "
            "FROM events ORDER BY id").fetchall() + conn.execute(
            "SELECT 'repeats', obs_context_id, source_rule, event_type, symptom, resources, count, first_line, "
            "last_line, last_timestamp FROM event_repeats ORDER BY id").fetchall()


@pytest.mark.parametrize("seed", [6, 7])
def test_generated_logs_store_the_same_events_chunked(engine, tmp_path, seed, monkeypatch, counted):
    """The facts workers read for each hit (timestamps, ranks, timestamps carried across
    chunk boundaries: `hitfacts.chunk_facts`) are the ones the serial loop reads, and the
    hits they leave out as past their cap (`workerhits.WorkerHits`) are counted into the
    same `event_repeats` rows (count, first and last line, last timestamp, in order)."""
    job = _generated_job(tmp_path, engine, seed)
    caps = {"repeat_cap": 3, "group_cap": 40}  # (small caps: many keys and groups reach them in this log)
    serial = _stored_events(engine, job, 0, monkeypatch, **caps)
    chunked = _stored_events(engine, job, 2, monkeypatch, **caps)
    assert counted
    assert counted.count("left out") > 10  # the repeated evidence, past its cap, left out by the workers
    assert counted.count("left-out entry") < counted.count("left out")  # ... and counted in the workers
    assert sum(row[0] == "repeats" for row in serial) > 0
    assert len(serial) > 200
    carried = sum('"carried_ts"' in row[-1] for row in serial if row[0] != "repeats")
    assert carried > 20  # unstamped evidence after stamped lines, many across a chunk boundary
    assert chunked == serial


def _serial_chunks(log: Path, plan) -> list:
    with open(log, "rb") as f:
        return [(c, plan.scanner.scan(c), None) for c in parallel.iter_chunks(f, SMALL_CHUNK)]


def test_a_worker_that_dies_or_fails_loses_no_chunk(engine, tmp_path, monkeypatch):
    """A worker that dies after its first chunk, and one whose scan raises: their chunks
    are scanned here, so the hits are all there, in order; no worker is left behind."""
    import multiprocessing
    import os

    if not parallel.fork_is_safe():
        pytest.fail("this process has other threads, so the scan would not fork (tests/conftest.py FORK_FIRST)")
    job = _generated_job(tmp_path, engine, 8)
    log = job / "applog" / "train.log"
    plan = engine.scan_plan("applog", "text")
    want = _serial_chunks(log, plan)
    real = parallel._worker

    def dies(tasks, results):
        results.send(tasks.recv() and (0, [], None))  # a wrong length: scanned here
        os._exit(1)

    def fails(tasks, results):
        while (task := tasks.recv()) is not None:
            results.send(RuntimeError(f"scan failed at {task[0]}"))

    before = set(multiprocessing.active_children())
    for broken in (dies, fails):
        monkeypatch.setattr(parallel, "_worker", broken)
        got = list(parallel.parallel_scan(log, plan.scanner, 2, size=SMALL_CHUNK))
        assert got == want and len(got) > 10
        assert not set(multiprocessing.active_children()) - before
    monkeypatch.setattr(parallel, "_worker", real)
    assert list(parallel.parallel_scan(log, plan.scanner, 2, size=SMALL_CHUNK)) == want


_MUCH_NEWS = """
import sys
from rulekit.extract import parallel
from rulekit.rules.loader import load_corpus
log, size = sys.argv[1], int(sys.argv[2])
plan = load_corpus(None).engine.scan_plan("applog", "text")
big = [("x" * 100, i) for i in range(20_000)]  # ~2 MiB pickled: more than a pipe holds

def annotate(chunk, hits, news):
    return hits, (len(news or ()), b"y" * 300_000)  # an answer of more than a pipe holds too

got = list(parallel.parallel_scan(log, plan.scanner, 2, size=size, annotate=annotate, news=lambda k: big))
with open(log, "rb") as f:
    want = [(c, plan.scanner.scan(c)) for c in parallel.iter_chunks(f, size)]
assert [(c, h) for c, h, _ in got] == want and len(got) > 10, "chunks lost or out of order"
assert all(a[0] == len(big) for _c, _h, a in got), "news lost"
print("ok", len(got))
"""


def test_much_news_with_large_answers_does_not_hang(engine, tmp_path):
    """Tasks that carry more news than a pipe holds, to workers busy sending answers larger
    than a pipe holds: every chunk comes back, in order, with the news meant for it (a
    worker reads its tasks while it sends).  In a child process with a time limit: the
    way this breaks is a hang."""
    import subprocess
    import sys

    job = _generated_job(tmp_path, engine, 9)
    try:
        done = subprocess.run([sys.executable, "-c", _MUCH_NEWS, str(job / "applog" / "train.log"), str(SMALL_CHUNK)],
                              capture_output=True, text=True, timeout=120, cwd=REPO)
    except subprocess.TimeoutExpired:
        pytest.fail("parallel_scan hangs when a task carries much news")
    assert done.returncode == 0 and done.stdout.startswith("ok"), done.stderr[-2000:]


LINE_ONLY_CORPUS = {
    "s.toml": """
        [[symptom]]
        name = "WORD_SEEN"
        rank = 10
        outcome = "application"
        sub_domain = "code"
        blame = "workload"
    """,
    "acc.py": """
        from rulekit.plugin import Accumulator, EventSpec, accumulator_def

        def _word(line):
            return line.split("WORD ")[1].split()[0]

        @accumulator_def(name="Pure", author="t", trigger_re=r"WORD \\w+", max_lines=0, symptoms=["WORD_SEEN"])
        class Pure(Accumulator):
            # no event for 'skip', else one per word: most triggers are the same evidence again
            def __init__(self, ctx, line, match):
                self.word = _word(line)
            def finalize(self):
                return [] if self.word == "skip" else [
                    EventSpec(type="bad_node", symptom="WORD_SEEN", fields={"word": self.word})]

        @accumulator_def(name="Numbered", author="t", trigger_re=r"WORD num", max_lines=0, symptoms=["WORD_SEEN"])
        class Numbered(Accumulator):
            # reads its line's number in the file: a worker cannot know it
            def __init__(self, ctx, line, match):
                self.at = ctx.line_num // 50
            def finalize(self):
                return [EventSpec(type="bad_node", symptom="WORD_SEEN", fields={"block": self.at})]

        @accumulator_def(name="OwnLine", author="t", trigger_re=r"WORD own", max_lines=0, symptoms=["WORD_SEEN"])
        class OwnLine(Accumulator):
            # names a line of its own
            def finalize(self):
                return [EventSpec(type="bad_node", symptom="WORD_SEEN", fields={"n": 1}, line_num=7)]

        @accumulator_def(name="Twice", author="t", trigger_re=r"WORD twice", max_lines=0, symptoms=["WORD_SEEN"])
        class Twice(Accumulator):
            # two events of one trigger, the second new evidence every time
            def __init__(self, ctx, line, match):
                self.step = line.split("step ")[1]
            def finalize(self):
                return [EventSpec(type="bad_node", symptom="WORD_SEEN", fields={"n": 1}),
                        EventSpec(type="bad_node", symptom="WORD_SEEN", fields={"step": self.step})]

        UNPICKLABLE = lambda: 1  # the same value in every event's fields, which pickle cannot take:
        # its key is never news for the workers (sending it would stop the scan)

        class Word:  # a value of the rule's own class
            def __init__(self, w):
                self.w = w
            def __eq__(self, other):
                return isinstance(other, Word) and other.w == self.w
            def __hash__(self):
                return hash(self.w)
            def __str__(self):
                return self.w

        @accumulator_def(name="Boxed", author="t", trigger_re=r"WORD beta", max_lines=0, symptoms=["WORD_SEEN"])
        class Boxed(Accumulator):
            def finalize(self):
                return [EventSpec(type="bad_node", symptom="WORD_SEEN", fields={"word": Word("beta")}),
                        EventSpec(type="interesting", symptom="WORD_SEEN", fields={"f": UNPICKLABLE})]

        @accumulator_def(name="Broken", author="t", trigger_re=r"WORD boom", max_lines=0, symptoms=["WORD_SEEN"])
        class Broken(Accumulator):
            def finalize(self):
                raise ValueError("finalize broke")
    """,
}


def _line_only_job(tmp: Path, seed: int) -> Path:
    rng = random.Random(seed)
    dest = tmp / f"line-only-{seed}"
    shutil.copytree(REPO / "examples" / "xid149-nvlink", dest)
    words = ["alpha", "beta", "skip", "num", "own", "twice", "boom", "gamma"]
    lines = []
    for i in range(4000):
        if rng.random() < 0.3:
            stamp = f"2026-06-01 03:{i // 60 % 60:02d}:{i % 60:02d} " if rng.random() < 0.6 else ""
            lines.append(f"{rng.randrange(8)}: {stamp}WORD {rng.choice(words)} step {i}")
        else:
            lines.append(f"2026-06-01 03:{i // 60 % 60:02d}:{i % 60:02d} iteration {i} | loss 1.8")
    (dest / "applog" / "train.log").write_text("\n".join(lines) + "\n")
    return dest


@pytest.mark.parametrize("seed", [11, 12])
def test_line_only_accumulators_in_workers_store_the_same_events(make_corpus, tmp_path, seed, monkeypatch, counted):
    """The trigger of an accumulator that reads its line alone is run by the scan worker
    (`WorkerHits._line_only`): one that makes no event, or one event past its cap, is left
    out there and counted into the same `event_repeats` rows; one reading its line's
    number, naming a line of its own, making two events or raising goes whole to
    extraction.  Stored events, repeats, rule errors: the serial scan's."""
    engine = load_corpus([make_corpus(LINE_ONLY_CORPUS)]).engine
    job = _line_only_job(tmp_path, seed)
    caps = {"repeat_cap": 3, "group_cap": 40}
    serial = _stored_events(engine, job, 0, monkeypatch, **caps)
    assert not counted
    chunked = _stored_events(engine, job, 2, monkeypatch, **caps)
    assert counted.count("left out") > 100  # Pure's triggers past their cap, counted in the workers
    assert chunked == serial
    events = [row for row in serial if row[0] != "repeats"]
    for word in ("alpha", "num", "own", "twice"):  # Pure's, Numbered's, OwnLine's and Twice's events were stored
        assert any(f"WORD {word} " in row[4] for row in events)
    assert any(row[3] == 7 and "WORD own " in row[4] for row in events)  # at the line OwnLine named
    assert sum(row[6] for row in serial if row[0] == "repeats") > 100  # the evidence past its caps, counted
    whole = [_attribute(engine, job, w, monkeypatch, SMALL_CHUNK) for w in (0, 2)]
    assert whole[0] == whole[1]
    assert "finalize broke" in whole[0]  # the broken rule's error, reported once either way
