"""A Session attributes one job: `ingest()` / `ingest_batch()` (log observations
and metric series; `ingest_metrics()` for series alone) and `attribute()`
in any order, any number of times (the spec's Ingest-Attribution Cycle).

Ingestion only extracts (append-only).  `attribute()` checkpoints the job's
events, runs filtering, refinement, collection and reporting, and leaves the
checkpoint in place; the next `ingest()` (or `attribute()`) restores it first,
so every attribution sees exactly the events extraction produced.

`fleet` (optional, read-only) is what a store remembers of the job's nodes
(`rulekit.inputs.fleet.FleetContext`); rules read it as `context.fleet`.
Without it (the default) a job is judged on its own evidence.
"""
from __future__ import annotations

import copy
import itertools
from typing import Any, Callable, Iterable

from rulekit.rules.corpus import RuleEngine
from rulekit.inputs.fleet import FleetContext
from rulekit.inputs.jobinfo import JobInfo
from rulekit.inputs.metrics import MetricSeries
from rulekit.inputs.observation import Observation
from rulekit.engine.metrics import MetricPhase
from rulekit.engine.phases import (
    AttributionState,
    CollectionPhase,
    ExtractionPhase,
    FilterPhase,
    RefinementPhase,
    ReportPhase,
)
from rulekit.engine.store import EventManager, TraceEntry, paused_gc
from rulekit.rules.model import EventType

_counter = itertools.count(1)
# the event types the report's evidence lists (`EventStream.node_events`)
EVIDENCE_TYPES = (EventType.BAD_NODE.value, EventType.INTERESTING_NODE.value, EventType.BAD_PEERS.value)


class Session:
    def __init__(self, engine: RuleEngine, job: JobInfo, manager: EventManager | None = None,
                 context: str | None = None, repeat_cap: int | None = None, group_cap: int | None = None,
                 fleet: FleetContext | None = None):
        self.engine = engine
        self.job = job
        self.fleet = fleet  # the fleet's memory of the job's nodes; None: judged on its own evidence
        self._own_manager = manager is None
        opts = engine.options  # rulekit.config.EngineOptions, given to the engine at the edge
        self.manager = manager or EventManager(engine.rule_names(), buffer_size=opts.buffer_size,
                                               spill_threshold=opts.spill_rows, spill_bytes=opts.spill_bytes)
        self.context_id = self.manager.context(context or f"{job.id}#{next(_counter)}")
        self._extraction = ExtractionPhase(engine, self.manager, self.context_id, job,
                                           opts.repeat_cap if repeat_cap is None else repeat_cap,
                                           opts.group_cap if group_cap is None else group_cap)
        self._metrics = MetricPhase(engine, self.manager, self.context_id, job)
        self._checkpointed = False
        self.trace: list[TraceEntry] = []
        self.observations: list[str] = []
        lines = job.scheduler_lines()
        if lines:
            # one observation per node context so each line gets its node
            for node, group in itertools.groupby(lines, key=lambda x: x[1]):
                self.ingest(Observation(source="scheduler", format="slurm", node=node, label="scheduler",
                                        lines=[text for text, _ in group]))

    def _restore(self) -> None:
        if self._checkpointed:
            self.manager.restore(self.context_id)
            self._checkpointed = False

    def ingest(self, obs: Observation | MetricSeries, progress: Callable[[int], None] | None = None) -> int:
        """Extract events from one observation (or run the metric rules over one
        metric series); returns how many were added."""
        if isinstance(obs, MetricSeries):
            return self.ingest_metrics([obs])
        self._restore()
        self.observations.append(obs.name)
        return self._extraction.apply(obs, progress)

    def ingest_batch(self, observations: Iterable[Observation | MetricSeries],
                     progress: Callable[[int], None] | None = None) -> int:
        return sum(self.ingest(o, progress) for o in observations)

    def ingest_metrics(self, series: Iterable[MetricSeries]) -> int:
        """Run the corpus's metric rules over metric series; returns the events added."""
        self._restore()
        added = 0
        for s in series:
            self.observations.append(s.label)
            added += self._metrics.apply(s)
        return added

    def attribute(self, with_trace: bool = False) -> dict[str, Any]:
        """Filter, refine, collect and report over everything ingested so far
        (without cyclic garbage collection passes in the middle: `paused_gc`)."""
        with paused_gc():
            return self._attribute(with_trace)

    def _attribute(self, with_trace: bool) -> dict[str, Any]:
        self._restore()
        self.manager.checkpoint(self.context_id)
        self._checkpointed = True
        trace: list[TraceEntry] = []
        stream = self.manager.stream(self.context_id)
        stream.trace = trace
        stream.canonical = self.engine.registry.canonical  # aliases resolve on every emit path
        state = AttributionState(self.engine, self.job, stream, trace, fleet=self.fleet)
        state.errors.extend(self._extraction.errors)  # accumulators that raised while ingesting
        FilterPhase().apply(state)
        RefinementPhase().apply(state)
        # The report is built once, before collection: collectors read it (`context.result`)
        # and nothing they can reach changes it (the stream is frozen).  They get a copy;
        # the result then takes their values (`collectors` is `state.collectors` itself)
        # and the errors of collectors that raised.  (This used to build the report twice.)
        result = ReportPhase().apply(state)
        partial = {k: v if k == "collectors" else copy.deepcopy(v) for k, v in result.items()}
        CollectionPhase().apply(state, partial)
        if state.errors:
            result["rule_errors"] = state.errors
        aggregated = self.manager.repeats(self.context_id, EVIDENCE_TYPES)
        if aggregated:  # evidence held only as counts (ExtractionPhase's repeat cap) is evidence not shown
            result["evidence_omitted"] = result.get("evidence_omitted", 0) + aggregated
        self.trace = trace
        if with_trace:
            result["trace"] = [t.to_dict() for t in trace]
            result["decision"] = {"reason": state.decision.reason, "tied": state.decision.tied,
                                  "changed_by": state.decision.changed_by}
        return result

    def close(self) -> None:
        if self._own_manager:
            self.manager.close(flush=False)

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
