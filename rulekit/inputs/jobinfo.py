"""Job information: the scheduler record being attributed, and the two optional
inputs of the spec's "Sources" section (allocation_failure, execution_cancellation).

`JobInfoBuilder` validates its inputs (mismatched record ID, missing identity,
missing or naive timestamps are rejected with RK506) and `JobInfo.scheduler_lines()`
renders the scheduler evidence as lines of a `scheduler` observation, which
ordinary extractor rules (bundled_rules/scheduler_state.toml) turn into symptoms.
The sentences of the spec are implemented in `scheduler_lines()`:

- a supplied cancellation provides the record's cancellation symptom, whatever
  the raw scheduler state (the raw state line is then not emitted);
- independent faults still take precedence (they come from other evidence and
  outrank the scheduler symptoms);
- allocation_failure changes attribution only together with a cancellation;
- when the record's state is NODE_FAIL and the allocation's failed node is not
  among the record's nodes, the inherited node failure is not attributed to the
  record, unless the record's own failed_node names a different node that is
  among its nodes;
- omitting both inputs keeps the existing behaviour (the raw state line).
"""
from __future__ import annotations

from dataclasses import field
from datetime import datetime
from typing import Any, Mapping

from rulekit.rules.records import dataclass
from rulekit.diagnostics import Diagnostic, RulekitError

SLURM_STATES = {
    "COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "PREEMPTED", "BOOT_FAIL",
    "DEADLINE", "REQUEUED", "SUSPENDED", "RUNNING", "PENDING", "REVOKED", "SPECIAL_EXIT", "RESIZING",
}


class JobInfoError(RulekitError):
    pass


def _reject(msg: str) -> JobInfoError:
    return JobInfoError(Diagnostic("RK506", msg))


@dataclass(frozen=True)
class SchedulerFailure:
    """The allocation's failure as the scheduler reported it (time = report time)."""

    allocation_id: str
    state: str
    failed_node: str | None = None
    source: str = "scheduler"
    time: datetime | None = None


@dataclass(frozen=True)
class ExecutionCancellation:
    """A cancellation the caller established for this record."""

    record_id: str
    cancelled_by: str
    source_time: datetime | None


@dataclass(frozen=True)
class JobInfo:
    id: str
    state: str | None = None
    nodes: tuple[str, ...] = ()
    start: datetime | None = None
    end: datetime | None = None
    failed_node: str | None = None
    exit_code: str | None = None
    tasks_per_node: int | None = None
    ranks: Mapping[int, str] = field(default_factory=dict)
    allocation_failure: SchedulerFailure | None = None
    execution_cancellation: ExecutionCancellation | None = None

    def rank_to_node(self, rank: int | str | None) -> str | None:
        """Node of a global rank: explicit [job.ranks] map, else block distribution."""
        if rank is None:
            return None
        try:
            r = int(rank)
        except (TypeError, ValueError):
            return None
        if r in self.ranks:
            return self.ranks[r]
        if self.tasks_per_node and self.nodes:
            i = r // self.tasks_per_node
            if 0 <= i < len(self.nodes):
                return self.nodes[i]
        if len(self.nodes) == 1 and not self.ranks:
            return self.nodes[0]
        return None

    def scheduler_lines(self) -> list[tuple[str, str | None]]:
        """(line, node) pairs of the synthesized `scheduler` observation."""
        out: list[tuple[str, str | None]] = []
        cancel = self.execution_cancellation
        alloc = self.allocation_failure
        if cancel is not None:
            out.append((f"execution_cancellation record={self.id} cancelled_by={cancel.cancelled_by} "
                        f"time={cancel.source_time.isoformat() if cancel.source_time else ''}", None))
            if alloc is not None:
                fn = alloc.failed_node
                if fn and fn in self.nodes:
                    out.append((f"allocation_failure allocation={alloc.allocation_id} state={alloc.state} failed_node={fn}", fn))
                elif self.state == "NODE_FAIL":
                    # inherited node failure: not attributed to this record ...
                    own = self.failed_node
                    if own and own in self.nodes and own != fn:
                        # ... unless the record's own failed_node is a different node among its nodes
                        out.append((self._state_line(), own))
            return out
        if self.state:
            node = self.failed_node if self.failed_node in self.nodes or not self.nodes else None
            out.append((self._state_line(), node))
        return out

    def _state_line(self) -> str:
        parts = [f"job_state={self.state}", f"job={self.id}"]
        if self.exit_code:
            parts.append(f"exit_code={self.exit_code}")
        if self.failed_node:
            parts.append(f"failed_node={self.failed_node}")
        return " ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "state": self.state, "nodes": list(self.nodes), "failed_node": self.failed_node,
                "exit_code": self.exit_code, "tasks_per_node": self.tasks_per_node}


class JobInfoBuilder:
    """Builds a validated JobInfo."""

    def __init__(self, job_id: str, state: str | None = None, nodes: tuple[str, ...] | list[str] = (), **kw: Any):
        if not job_id:
            raise _reject("the job record has no id")
        self._fields: dict[str, Any] = {"id": str(job_id), "state": state.upper() if state else None,
                                        "nodes": tuple(nodes), **kw}
        self._alloc: SchedulerFailure | None = None
        self._cancel: ExecutionCancellation | None = None

    def allocation_failure(self, failure: SchedulerFailure) -> "JobInfoBuilder":
        if not failure.allocation_id:
            raise _reject("allocation_failure has no allocation id")
        if not failure.state:
            raise _reject("allocation_failure has no state")
        if failure.time is not None and _naive(failure.time):
            raise _reject("allocation_failure time must be timezone-aware")
        self._alloc = failure
        return self

    def execution_cancellation(self, cancel: ExecutionCancellation) -> "JobInfoBuilder":
        if not cancel.record_id:
            raise _reject("execution_cancellation has no record id")
        if str(cancel.record_id) != self._fields["id"]:
            raise _reject(f"execution_cancellation is for record {cancel.record_id!r}, not {self._fields['id']!r}")
        if not cancel.cancelled_by:
            raise _reject("execution_cancellation does not say who cancelled (missing identity)")
        if cancel.source_time is None:
            raise _reject("execution_cancellation has no source time")
        if _naive(cancel.source_time):
            raise _reject("execution_cancellation source time must be timezone-aware")
        self._cancel = cancel
        return self

    def build(self) -> JobInfo:
        f = dict(self._fields)
        ranks = {int(k): str(v) for k, v in (f.pop("ranks", None) or {}).items()}
        return JobInfo(ranks=ranks, allocation_failure=self._alloc, execution_cancellation=self._cancel, **f)


def _naive(t: datetime) -> bool:
    return t.tzinfo is None or t.tzinfo.utcoffset(t) is None
