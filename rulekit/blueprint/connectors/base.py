"""The connector interfaces (what a user implements to add their own).

    class MyContext(ContextConnector):
        KEYS = {"type", "name", "url"}            # keys its config table may hold
        @classmethod
        def from_config(cls, sec): ...            # read `sec.get(...)`; errors are located
        def attempts(self, window, job_id): ...   # -> iterable of Attempt

    class MyLogs(LogConnector):
        def collect(self, attempt): ...           # -> list of rulekit Observation

    class MyMetrics(MetricConnector):
        def collect(self, attempt): ...           # -> list of metric series

    class MyOutput(Output):
        def write(self, result): ...; def close(self): ...

A connector raises `ConnectorError` with a one-line reason when it cannot
deliver; the orchestrator records it in the result's coverage and goes on.
When it delivers only part of the evidence (a name refused, a size limit or
its deadline reached, one node's query failed) it appends the reason to
`self.faults` and returns what it has: the coverage says `partial` and the
verdict `evidence_complete: false`.  `collect` may also append notes to
`self.notes` (what it did that the user may want to know).  A connector reads
`self.deadline` (a `rulekit.blueprint.limits.Deadline`, set by the
orchestrator for each attempt) between requests and passes it to the HTTP
client.  Nothing here does I/O.
"""
from __future__ import annotations

from typing import Any, Iterable

from rulekit.blueprint.model import Attempt, Window
from rulekit.inputs.observation import Observation


class Connector:
    TYPE = "?"
    KEYS: set[str] = {"type", "name"}
    name: str = "?"

    @classmethod
    def from_config(cls, sec: Any) -> "Connector":
        raise NotImplementedError

    def take_notes(self) -> list[str]:
        notes = list(getattr(self, "notes", []) or [])
        self.notes = []
        return notes

    def take_faults(self) -> list[str]:
        faults = list(getattr(self, "faults", []) or [])
        self.faults = []
        return faults


class ContextConnector(Connector):
    def attempts(self, window: Window, job_id: str | None = None) -> Iterable[Attempt]:
        raise NotImplementedError


class LogConnector(Connector):
    def collect(self, attempt: Attempt) -> list[Observation]:
        raise NotImplementedError


class MetricConnector(Connector):
    def collect(self, attempt: Attempt) -> list[Any]:
        raise NotImplementedError


class Output:
    def write(self, result: dict[str, Any]) -> None:
        raise NotImplementedError

    def close(self) -> None:
        pass
