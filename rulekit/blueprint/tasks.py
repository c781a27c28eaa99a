"""The Blueprint's attempts as batch-executor tasks: collect and attribute on a worker.

`AttemptTask` is one attempt as an executor runs it: it has the `label`, `key`
and `run` members of `rulekit.executors.Task` by shape (this group must not
import `executors`).  On a worker it loads the config folder once per process
(by path, checked against the client's content digest), runs the attempt's log
and metric connectors there and attributes with the worker's engine, or posts
to the Service.  `run_tasks` feeds the attempts the context connectors find,
lazily, to an executor's `map` and writes every result from this process, the
only writer: a task re-run after a lost worker still comes back once, and the
store's upsert by key keeps even a re-submitted batch at one row per attempt.
Prints nothing.
"""
from __future__ import annotations

import hashlib
import threading
from dataclasses import field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence

from rulekit.rules.records import dataclass
from rulekit.blueprint.config import BlueprintConfig, load_config
from rulekit.blueprint.limits import ATTEMPT_SHARE
from rulekit.blueprint.connectors.base import Output
from rulekit.blueprint.model import Attempt, Window
from rulekit.blueprint.orchestrator import Attributor, RunReport, attribute_attempt, discover
from rulekit.inputs.fleet import FleetContext


def config_digest(cfg: BlueprintConfig) -> str:
    """What the config files say (path and bytes of each): a worker must read the same."""
    h = hashlib.sha1()
    for p in cfg.files:
        h.update(str(Path(p).resolve()).encode() + b"\0" + Path(p).read_bytes() + b"\0")
    return h.hexdigest()[:16]


_CONFIGS: dict[tuple[str, str], BlueprintConfig] = {}
_CONFIGS_LOCK = threading.Lock()


class ConfigMismatch(Exception):
    """The worker reads other config files than the client at the same path."""


def config_for(configs: str, digest: str) -> BlueprintConfig:
    """This process's loaded config for `configs` (loaded once; RulekitError if invalid here)."""
    key = (configs, digest)
    cfg = _CONFIGS.get(key)
    if cfg is None:
        with _CONFIGS_LOCK:
            cfg = _CONFIGS.get(key)
            if cfg is None:
                cfg = load_config(configs)
                found = config_digest(cfg)
                if found != digest:
                    raise ConfigMismatch(f"the Blueprint config at {configs} on this worker differs from the "
                                         f"client's (digest {found}, expected {digest}): workers must see the "
                                         "same files at the same paths")
                _CONFIGS[key] = cfg
    return cfg


@dataclass(frozen=True)
class AttemptTask:
    """One attempt to collect and attribute on a worker; equal (and hashed) by config and
    attempt key, so the same attempt found twice is one task."""

    configs: str
    digest: str
    attempt_key: str
    context: str
    attempt: Attempt = field(compare=False)
    notes: tuple[str, ...] = field(default=(), compare=False)
    service_url: str | None = None
    budget_s: float | None = field(default=None, compare=False)  # the task's time limit (`--timeout`), if any
    fleet: dict[str, Any] | None = field(default=None, compare=False)  # FleetContext's JSON form, built here
    fleet_note: str | None = field(default=None, compare=False)

    @property
    def label(self) -> str:
        return self.attempt_key

    def key(self, options: str = "") -> str:
        text = f"{self.configs}\0{self.digest}\0{self.attempt_key}\0{self.service_url}\0{options}"
        return "rulekit-blueprint-" + hashlib.sha1(text.encode()).hexdigest()[:16]

    def run(self, engine: Any, with_trace: bool = False, progress: Callable[[int], None] | None = None) -> dict[str, Any]:
        cfg = config_for(self.configs, self.digest)
        attributor = Attributor(service_url=self.service_url) if self.service_url else Attributor(engine=engine)
        # collection gets its share of the task's time limit, so a stalled connector is
        # recorded and the attempt still attributed and stored before the limit ends the task
        collect_s = self.budget_s * ATTEMPT_SHARE if self.budget_s else None
        fleet = FleetContext.from_dict(self.fleet) if self.fleet is not None else None
        result = attribute_attempt(cfg, attributor, self.attempt, self.context, list(self.notes), collect_s=collect_s,
                                   fleet=fleet, fleet_note=self.fleet_note)
        result["context"]["collector"] = self.context
        return result


def tasks_for(cfg: BlueprintConfig, configs: str | Path, report: RunReport, window: Window | None = None,
              job_id: str | None = None, service_url: str | None = None,
              budget_s: float | None = None, fleet: Any = None) -> Iterator[AttemptTask]:
    """The attempts the context connectors find, as tasks (lazily; context failures go to `report`).
    `fleet` (a `FleetMemory`) is read here, as each task is made: workers need no store."""
    where, digest = str(Path(configs).resolve()), config_digest(cfg)
    for ctx, a, notes in discover(cfg, report, window, job_id):
        fc, note = fleet.context_for(a) if fleet is not None else (None, None)
        yield AttemptTask(where, digest, a.key, ctx.name, a, tuple(notes), service_url, budget_s,
                          fc.to_dict() if fc is not None else None, note)


def run_tasks(cfg: BlueprintConfig, configs: str | Path, map_fn: Callable[[Iterable[AttemptTask]], Iterable[Any]],
              outputs: Sequence[Output], window: Window | None = None, job_id: str | None = None,
              service_url: str | None = None, on_result: Callable[[dict[str, Any]], None] | None = None,
              on_error: Callable[[str, str], None] | None = None, budget_s: float | None = None,
              fleet: Any = None) -> RunReport:
    """Every attempt through `map_fn` (an executor's `map`: tasks in, one outcome with `job`,
    `result` and `error` per distinct task out, as they finish); results are written here."""
    report = RunReport()
    for o in map_fn(tasks_for(cfg, configs, report, window, job_id, service_url, budget_s, fleet)):
        if o.error is not None:
            report.failed.append({"key": o.job.label, "error": o.error})
            if on_error:
                on_error(o.job.label, o.error)
            continue
        for out in outputs:
            out.write(o.result)
        kept = {k: v for k, v in o.result.items() if k != "kept_logs"}  # a run's report holds no attempt's lines
        report.results.append(kept)
        if on_result:
            on_result(kept)
    return report
