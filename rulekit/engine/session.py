"""A Session attributes one job: `ingest()` / `ingest_batch()` (log observations,
metric series and flight-recorder dumps; `ingest_metrics()` for series alone) and
`attribute()` in any order, any number of times (the spec's Ingest-Attribution Cycle).

A flight-recorder dump is data, not lines: it is kept whole (its columns,
`rulekit.inputs.flight_recorder.FRDump`) and handed to the rules as
`context.dumps`, with one `data` event per dump (kind `fr_dump`, its rank and
index) for provenance; no extraction cap applies to it.  The limits hit while
attributing that may change the verdict are the result's `limits_hit`: rules
report theirs (`context.limit_hit`), and extraction's group cap on `data`
events (the captured values past it are counted, not kept) is added here.

Ingestion only extracts (append-only).  `attribute()` checkpoints the job's
events, runs filtering, refinement, collection and reporting, and leaves the
checkpoint in place; the next `ingest()` (or `attribute()`) restores it first,
so every attribution sees exactly the events extraction produced.  Rule code
runs contained (`rulekit.rules.containment`): a Python rule that exits, writes
to stdout or runs past `EngineOptions.rule_timeout` is a `rule_errors` entry.

`fleet` (optional, read-only) is what a store remembers of the job's nodes
(`rulekit.inputs.fleet.FleetContext`); rules read it as `context.fleet`.
Without it (the default) a job is judged on its own evidence.
"""
from __future__ import annotations

import copy
import itertools
import functools
from datetime import datetime, timezone
from typing import Any, Callable, Iterable

from rulekit.rules.containment import contained, rule_codes
from rulekit.rules.corpus import RuleEngine
from rulekit.inputs.flight_recorder import FRDump
from rulekit.inputs.fleet import FleetContext
from rulekit.inputs.jobinfo import JobInfo
from rulekit.inputs.metrics import MetricSeries
from rulekit.inputs.observation import Observation
from rulekit.engine.metrics import MetricPhase
from rulekit.engine.phases import (
    AttributionState,
    LimitsHit,
    CollectionPhase,
    ExtractionPhase,
    FilterPhase,
    RefinementPhase,
    ReportPhase,
)
from rulekit.engine.store import EventManager, TraceEntry, paused_gc
from rulekit.engine.timeline import Clock
from rulekit.rules.model import EventType
from rulekit.extract.scan import RULE_TEXT_BYTES

_counter = itertools.count(1)


def _iso_ns(t: int | None) -> str | None:
    """Nanoseconds since the epoch (a flight-recorder time) as RFC 3339 UTC, or None."""
    if t is None or t <= 0:
        return None
    try:
        return datetime.fromtimestamp(t / 1e9, timezone.utc).isoformat().replace("+00:00", "Z")
    except (OverflowError, OSError, ValueError):
        return None
_ATOMS = frozenset({str, int, float, bool, type(None)})


def _copy(value: Any) -> Any:
    """A deep copy of a report's value: dicts, lists and atoms copied directly (the report is
    made of them; `copy.deepcopy` spent ~0.3 ms per small job on its memo and dispatch),
    anything else by `copy.deepcopy`."""
    t = type(value)
    if t in _ATOMS:
        return value
    if t is dict:
        return {k: _copy(v) for k, v in value.items()}
    if t is list:
        return [_copy(v) for v in value]
    return copy.deepcopy(value)


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
        names = engine.derived("rule names", lambda: tuple(engine.rule_names()))
        self.manager = manager or EventManager(names, buffer_size=opts.buffer_size,
                                               spill_threshold=opts.spill_rows, spill_bytes=opts.spill_bytes)
        self.context_id = self.manager.context(context or f"{job.id}#{next(_counter)}")
        self._extraction = ExtractionPhase(engine, self.manager, self.context_id, job,
                                           opts.repeat_cap if repeat_cap is None else repeat_cap,
                                           opts.group_cap if group_cap is None else group_cap)
        self._metrics = MetricPhase(engine, self.manager, self.context_id, job)
        self._checkpointed = False
        self.dumps: list[FRDump] = []
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

    def ingest(self, obs: Observation | MetricSeries | FRDump, progress: Callable[[int], None] | None = None) -> int:
        """Extract events from one observation (or run the metric rules over one
        metric series, or keep one flight-recorder dump); returns how many were added."""
        if isinstance(obs, MetricSeries):
            return self.ingest_metrics([obs])
        if isinstance(obs, FRDump):
            return self._ingest_dump(obs)
        self._restore()
        self.observations.append(obs.name)
        with self._contained() as c:
            added = self._extraction.apply(obs, progress)
        if c.output:  # an accumulator wrote to stdout: reported by every attribute()
            self._extraction.errors.extend(c.output_errors())
        return added

    def _ingest_dump(self, dump: FRDump) -> int:
        """Keep a flight-recorder dump as data, and its provenance event."""
        self._restore()
        self.observations.append(dump.where)
        index = len(self.dumps)
        self.dumps.append(dump)
        m = self.manager
        t_start, t_end = _iso_ns(dump.t_first), _iso_ns(dump.t_last)
        oc = m.observation_context(self.context_id, "flight_recorder", "fr", t_start, t_end, dump.where)
        rank = dump.rank if dump.rank is not None else -1
        m.add(m.row(self.context_id, EventType.DATA.value, None, oc, t_end, 1,
                    f"flight-recorder dump of rank {rank}: {len(dump)} entries", None, None,
                    {"kind": "fr_dump", "rank": rank, "dump": index, "entries": len(dump)}))
        m.flush()
        return 1

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
        with paused_gc(), self._contained() as c:
            result = self._attribute(with_trace)
        if c.output:
            result.setdefault("rule_errors", []).extend(c.output_errors())
        return result

    def _contained(self) -> Any:
        """Rule code runs marked (`rulekit.rules.containment`): each call under the
        engine's `rule_timeout`, its stdout writes kept off ours."""
        guard = self.engine.__dict__.get("_containment")
        if guard is None:
            names = rule_codes(self.engine.rules)
            guard = self.engine.__dict__["_containment"] = (frozenset(names).__contains__, names)
        return contained(guard[0], self.engine.options.rule_timeout, guard[1])

    def _attribute(self, with_trace: bool) -> dict[str, Any]:
        self._restore()
        self.manager.checkpoint(self.context_id)
        self._checkpointed = True
        trace: list[TraceEntry] = []
        stream = self.manager.stream(self.context_id)
        stream.trace = trace
        stream.canonical = self.engine.registry.canonical  # aliases resolve on every emit path
        stream.timeline = functools.partial(Clock.of, self.job)  # years and one clock for every stamp (docs/time.md)
        state = AttributionState(self.engine, self.job, stream, trace, dumps=tuple(self.dumps), limits=LimitsHit(),
                                 fleet=self.fleet)
        state.errors.extend(self._extraction.errors)  # accumulators that raised while ingesting
        FilterPhase().apply(state)
        RefinementPhase().apply(state)
        # The report is built once, before collection: collectors read it (`context.result`)
        # and nothing they can reach changes it (the stream is frozen).  They get a copy;
        # the result then takes their values (`collectors` is `state.collectors` itself)
        # and the errors of collectors that raised.  (This used to build the report twice.)
        result = ReportPhase().apply(state)
        partial = {k: v if k == "collectors" else _copy(v) for k, v in result.items()}
        CollectionPhase().apply(state, partial)
        if state.errors:
            result["rule_errors"] = state.errors
        limits = self._data_caps(state.limits)
        if limits:
            result["limits_hit"] = limits
        aggregated = self.manager.repeats(self.context_id, EVIDENCE_TYPES)
        if aggregated:  # evidence held only as counts (ExtractionPhase's repeat cap) is evidence not shown
            result["evidence_omitted"] = result.get("evidence_omitted", 0) + aggregated
        self.trace = trace
        if with_trace:
            result["trace"] = [t.to_dict() for t in trace]
            result["decision"] = {"reason": state.decision.reason, "tied": state.decision.tied,
                                  "changed_by": state.decision.changed_by}
        return result

    def _data_caps(self, limits: LimitsHit) -> LimitsHit:
        """Add extraction's group cap on `data` events (what rules read as values), and the
        lines whose text rules read was cut, to the limits hit."""
        count, longest, first = self._extraction.cut_lines
        if count:
            limits.hit("line_text_bytes", RULE_TEXT_BYTES,
                       f"{count} line(s) longer than {RULE_TEXT_BYTES} bytes (the longest {longest} bytes, the first at "
                       f"{first}): rules read the first {RULE_TEXT_BYTES} bytes of each as its text; the patterns "
                       "matched the whole line")
        capped = [g for g in self._extraction.capped_groups() if g[1] == EventType.DATA.value]
        if capped:
            counts = self.manager.repeats_by_group(self.context_id)
            for rule, etype, symptom, node in sorted(capped, key=lambda g: tuple(str(x) for x in g)):
                n = counts.get((rule, etype, symptom, node), 0)
                where = f" on {node}" if node else ""
                limits.hit("group_cap", self._extraction.group_cap,
                           f"extractor `{rule}`{where}: {n} more data event(s) past the cap were counted, not kept; "
                           "rules reading them saw only the first", rule)
        return limits

    def close(self) -> None:
        if self._own_manager:
            self.manager.close(flush=False)

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
