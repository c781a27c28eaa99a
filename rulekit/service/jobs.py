"""Open jobs of the spec's ingest/attribute cycle, correct with any number of
worker processes.

uvicorn's workers share the listening socket and the kernel hands each
connection to any of them (no sticky routing), so a job's state cannot live
only in the worker that created it.  Each open job is a folder in the
Service's state directory (shared by the workers):

    <state_dir>/<id>/job.json      the validated job record
    <state_dir>/<id>/spool.jsonl   one line per ingested batch, in order
    <state_dir>/<id>/lock          flock()ed around every operation on the job

and each worker keeps a live `Session` per job it has served, with the number
of spool bytes it has ingested.  Before any operation a worker catches its
session up by ingesting only the spool lines it has not seen (a job that a
request first meets in this worker is replayed once), so every worker's
session holds exactly the batches ingested so far, in order, and `attribute`
answers what a single library `Session` would.  With one worker (the default)
the catch-up never reads anything but the batch just written.

A job idle for `ttl_s` is retired (by whichever worker sweeps first); retiring
closes the session with `close(flush=False)` as the spec says the service
does, and removes the folder.  At most `max_jobs` are open at once.  No HTTP here.
"""
from __future__ import annotations

import fcntl
import os
import secrets
import shutil
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from rulekit.rules.records import dataclass
from rulekit.inputs.jobrecord import JobRecord
from rulekit.engine.session import Session
from rulekit.service.schema import ObservationBatch

_ID_CHARS = set("0123456789abcdef")


class JobNotFound(KeyError):
    pass


class StoreFull(RuntimeError):
    pass


@dataclass
class _Live:
    session: Session
    consumed: int  # spool bytes ingested into `session`
    observations: int = 0
    series: int = 0
    batches: int = 0
    used: float = 0.0


class JobStore:
    def __init__(self, engine: Any, state_dir: str | Path, ttl_s: float = 900.0, max_jobs: int = 1000):
        self.engine = engine
        self.root = Path(state_dir)
        self.root.mkdir(parents=True, exist_ok=True)
        self.ttl_s = ttl_s
        self.max_jobs = max_jobs
        self._live: dict[str, _Live] = {}
        self._mutex = threading.Lock()  # guards self._live (per-job work is serialized by the job's flock)
        self._last_sweep = 0.0

    # ---- paths and locking ----
    def _dir(self, job_id: str) -> Path:
        if not (8 <= len(job_id) <= 64 and set(job_id) <= _ID_CHARS):
            raise JobNotFound(job_id)
        return self.root / job_id

    @contextmanager
    def _locked(self, job_id: str) -> Iterator[Path]:
        d = self._dir(job_id)
        try:
            fd = os.open(d / "lock", os.O_RDWR)
        except FileNotFoundError:
            self._forget(job_id)
            raise JobNotFound(job_id) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            if not (d / "job.json").exists():  # retired while we waited
                self._forget(job_id)
                raise JobNotFound(job_id)
            yield d
            try:
                os.utime(d / "lock")  # the job's last use (its idle clock)
            except FileNotFoundError:  # retired by this very operation
                pass
        finally:
            os.close(fd)

    # ---- operations ----
    def create(self, record: JobRecord) -> str:
        self.sweep()
        if self.count() >= self.max_jobs:
            raise StoreFull(f"{self.max_jobs} jobs are open; retire one (DELETE /v1/jobs/{{id}}) or wait for the TTL")
        record.to_jobinfo()  # the builder's consistency checks, before anything is written
        job_id = secrets.token_hex(12)
        d = self.root / job_id
        d.mkdir()
        (d / "spool.jsonl").touch()
        tmp = d / "job.json.tmp"
        tmp.write_text(record.model_dump_json())
        (d / "lock").touch()
        tmp.rename(d / "job.json")
        return job_id

    def ingest(self, job_id: str, batch: ObservationBatch) -> tuple[int, int, int]:
        """Append a batch and ingest it; returns (observations, metric series, events added)."""
        line = batch.model_dump_json() + "\n"
        with self._locked(job_id) as d:
            live = self._caught_up(job_id, d)
            with open(d / "spool.jsonl", "a", encoding="utf-8") as f:
                f.write(line)
            # what extraction added (a count of the store would also see what an earlier
            # attribute() derived, which the next ingest rolls back)
            added = self._consume(live, d)
        obs, series = batch.to_inputs()
        return len(obs), len(series), added

    def attribute(self, job_id: str) -> dict[str, Any]:
        with self._locked(job_id) as d:
            live = self._caught_up(job_id, d)
            return live.session.attribute()

    def status(self, job_id: str) -> dict[str, Any]:
        with self._locked(job_id) as d:
            live = self._caught_up(job_id, d)
            idle = time.time() - (d / "lock").stat().st_mtime
            return {"id": job_id, "job_id": live.session.job.id, "observations": live.observations,
                    "metric_series": live.series, "events": live.session.manager.count(live.session.context_id),
                    "idle_s": round(idle, 3), "expires_in_s": round(max(self.ttl_s - idle, 0.0), 3)}

    def retire(self, job_id: str) -> None:
        d = self._dir(job_id)
        with self._locked(job_id):
            self._forget(job_id)
            (d / "job.json").unlink()  # waiters see it gone
            shutil.rmtree(d, ignore_errors=True)

    def count(self) -> int:
        return sum(1 for p in self.root.iterdir() if (p / "job.json").exists())

    def sweep(self, now: float | None = None) -> int:
        """Retire jobs idle longer than the TTL (and drop this worker's sessions of retired jobs)."""
        now = time.time() if now is None else now
        self._last_sweep = now
        retired = 0
        for p in list(self.root.iterdir()):
            try:
                idle = now - (p / "lock").stat().st_mtime
            except FileNotFoundError:
                continue
            if idle > self.ttl_s:
                try:
                    self.retire(p.name)
                    retired += 1
                except JobNotFound:
                    pass
        with self._mutex:
            stale = [k for k, v in self._live.items() if not (self.root / k).exists()]
        for k in stale:
            self._forget(k)
        return retired

    def maybe_sweep(self, every_s: float = 10.0) -> None:
        if time.time() - self._last_sweep >= every_s:
            self.sweep()

    def close(self) -> None:
        """Close this worker's sessions (the spool stays for the other workers)."""
        with self._mutex:
            live, self._live = list(self._live.values()), {}
        for lv in live:
            lv.session.close()

    # ---- sessions ----
    def _forget(self, job_id: str) -> None:
        with self._mutex:
            live = self._live.pop(job_id, None)
        if live is not None:
            live.session.close()  # close(flush=False): the store is dropped, nothing is kept

    def _caught_up(self, job_id: str, d: Path) -> _Live:
        with self._mutex:
            live = self._live.get(job_id)
        if live is None:
            rec = JobRecord.model_validate_json((d / "job.json").read_text())
            live = _Live(Session(self.engine, rec.to_jobinfo()), 0)
            with self._mutex:
                self._live[job_id] = live
        self._consume(live, d)
        live.used = time.time()
        return live

    def _consume(self, live: _Live, d: Path) -> int:
        """Ingest the spooled batches not yet consumed; the events they added."""
        added = 0
        with open(d / "spool.jsonl", "rb") as f:
            f.seek(live.consumed)
            while True:
                raw = f.readline()
                if not raw or not raw.endswith(b"\n"):
                    break
                live.batches += 1
                obs, series = ObservationBatch.model_validate_json(raw).to_inputs(f"batch{live.batches}.observations")
                added += live.session.ingest_batch(obs)
                added += live.session.ingest_metrics(series)
                live.observations += len(obs)
                live.series += len(series)
                live.consumed = f.tell()
        return added
