"""The fleet context: what the fleet's memory says about the nodes of one attempt.

A read-only record handed to the engine beside the job (`Session(..., fleet=)`)
and exposed to filters, refiners and collectors as `context.fleet`.  Without a
store there is none (`context.fleet is None`) and a job is judged on its own
evidence.  Per node: its state (`healthy`, `suspect`, `quarantine`,
`cleared`), the reasons, and the incidents the state rests on (earlier
attempts of other jobs where the node was blamed, or was part of an
ambiguous failure); plus the symptoms the fleet policy counts as ambiguous
between the workload and the node.

Who builds it (the Blueprint, over its store) and how the state is decided is
not known here; this module only holds the data, renders it as a sentence for
evidence, and reads it back from JSON (`from_dict`, for the Service), checking
every field and bounding its size: a request is untrusted.
"""
from __future__ import annotations

from datetime import datetime, timezone
from types import MappingProxyType
from typing import Any, Mapping

from rulekit.rules.records import dataclass

STATES = ("healthy", "suspect", "quarantine", "cleared")
IMPLICATING = ("suspect", "quarantine")
INCIDENT_KINDS = ("blamed", "ambiguous")
MAX_NODES = 4096  # nodes a context may describe (a request's)
MAX_INCIDENTS = 256  # incidents kept per node (the most recent)
MAX_TEXT = 512  # characters of any one string field
MAX_SYMPTOMS = 64


class FleetContextError(ValueError):
    """A fleet context read from JSON is malformed; `path` names the field."""

    def __init__(self, path: str, msg: str):
        super().__init__(f"{path}: {msg}")
        self.path = path


@dataclass(frozen=True)
class Incident:
    """One earlier attempt in a node's record."""

    key: str  # job#attempt
    job_id: str
    user: str | None
    end: float  # unix seconds
    kind: str  # blamed | ambiguous
    symptoms: tuple[str, ...] = ()
    outcome: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "job_id": self.job_id, "user": self.user, "end": self.end, "kind": self.kind,
                "symptoms": list(self.symptoms), "outcome": self.outcome}


@dataclass(frozen=True)
class NodeRecord:
    """A node's state as of an attempt, with why, and the incidents it rests on."""

    node: str
    state: str
    reasons: tuple[str, ...] = ()
    incidents: tuple[Incident, ...] = ()
    episodes: int = 0
    jobs: int = 0
    users: int = 0
    attempts: int = 0  # attempts it ran in the window (before this one)
    clean_since: int = 0  # clean attempts since its last incident
    action: str | None = None  # what the policy proposes (inspect, drain_and_rma, ...)

    @property
    def implicated(self) -> bool:
        """The record alone makes the node a suspect (state suspect or quarantine)."""
        return self.state in IMPLICATING

    def summary(self, window_s: float | None = None) -> str:
        """One sentence a verdict can carry as evidence."""
        inc = self.incidents
        last = max((i.end for i in inc), default=None)
        span = f" in the last {_duration(window_s)}" if window_s else ""
        blamed = sum(1 for i in inc if i.kind == "blamed")
        what = (f"{len(inc)} failure(s) ({blamed} blamed on it, {len(inc) - blamed} ambiguous) in "
                f"{self.episodes} episode(s), {self.jobs} job(s) of {self.users} user(s){span}")
        syms = sorted({s for i in inc for s in i.symptoms})[:6]
        text = f"fleet history of {self.node}: {self.state}; {what}"
        if syms:
            text += f" ({', '.join(syms)})"
        if last is not None:
            text += f"; last {_iso(last)}"
        text += f"; {self.clean_since} clean attempt(s) since"
        if self.reasons:
            text += f"; {self.reasons[0]}"
        return text

    def to_dict(self) -> dict[str, Any]:
        return {"node": self.node, "state": self.state, "reasons": list(self.reasons),
                "incidents": [i.to_dict() for i in self.incidents], "episodes": self.episodes, "jobs": self.jobs,
                "users": self.users, "attempts": self.attempts, "clean_since": self.clean_since,
                "action": self.action}


class FleetContext:
    """Read-only: `record(node)`, `ambiguous(symptom)`, `window_s`, `as_of`."""

    __slots__ = ("_nodes", "_ambiguous", "_prefixes", "window_s", "as_of")

    def __init__(self, nodes: Mapping[str, NodeRecord], ambiguous: tuple[str, ...] = (), window_s: float = 0.0,
                 as_of: float | None = None):
        object.__setattr__(self, "_nodes", MappingProxyType(dict(nodes)))
        amb = tuple(ambiguous)
        object.__setattr__(self, "_ambiguous", frozenset(a for a in amb if not a.endswith(("-", "_"))))
        object.__setattr__(self, "_prefixes", tuple(a for a in amb if a.endswith(("-", "_"))))
        object.__setattr__(self, "window_s", float(window_s))
        object.__setattr__(self, "as_of", as_of)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("a FleetContext is read-only")

    @property
    def nodes(self) -> Mapping[str, NodeRecord]:
        return self._nodes

    def record(self, node: str | None) -> NodeRecord | None:
        return self._nodes.get(node) if node else None

    def ambiguous(self, symptom: str | None) -> bool:
        """The policy counts this symptom as ambiguous between the workload and the node
        (an entry ending in `-` or `_` is a prefix)."""
        return bool(symptom) and (symptom in self._ambiguous or symptom.startswith(self._prefixes))  # type: ignore[union-attr]

    @property
    def ambiguous_symptoms(self) -> tuple[str, ...]:
        return tuple(sorted(self._ambiguous)) + self._prefixes

    def to_dict(self) -> dict[str, Any]:
        return {"window_s": self.window_s, "as_of": self.as_of, "ambiguous": list(self.ambiguous_symptoms),
                "nodes": {n: r.to_dict() for n, r in sorted(self._nodes.items())}}

    @staticmethod
    def from_dict(d: Any, path: str = "fleet") -> "FleetContext":
        """Read (and check) the JSON form; FleetContextError names the first bad field."""
        obj = _obj(d, path)
        nodes_raw = _obj(obj.get("nodes", {}), f"{path}.nodes")
        if len(nodes_raw) > MAX_NODES:
            raise FleetContextError(f"{path}.nodes", f"at most {MAX_NODES} nodes")
        nodes = {}
        for name, raw in nodes_raw.items():
            p = f"{path}.nodes.{_text(name, f'{path}.nodes')}"
            nodes[name] = _record(_obj(raw, p), name, p)
        amb = obj.get("ambiguous", [])
        if not isinstance(amb, list) or len(amb) > 1024:
            raise FleetContextError(f"{path}.ambiguous", "must be a list of at most 1024 symptom names")
        return FleetContext(nodes, tuple(_text(a, f"{path}.ambiguous[{i}]") for i, a in enumerate(amb)),
                            _num(obj.get("window_s", 0), f"{path}.window_s"),
                            None if obj.get("as_of") is None else _num(obj["as_of"], f"{path}.as_of"))


def _record(o: dict, name: str, p: str) -> NodeRecord:
    state = o.get("state", "healthy")
    if state not in STATES:
        raise FleetContextError(f"{p}.state", f"must be one of {', '.join(STATES)}")
    inc_raw = o.get("incidents", [])
    if not isinstance(inc_raw, list):
        raise FleetContextError(f"{p}.incidents", "must be a list")
    incidents = []
    for i, x in enumerate(inc_raw[-MAX_INCIDENTS:]):
        q = f"{p}.incidents[{i}]"
        x = _obj(x, q)
        kind = x.get("kind")
        if kind not in INCIDENT_KINDS:
            raise FleetContextError(f"{q}.kind", f"must be one of {', '.join(INCIDENT_KINDS)}")
        syms = x.get("symptoms", [])
        if not isinstance(syms, list) or len(syms) > MAX_SYMPTOMS:
            raise FleetContextError(f"{q}.symptoms", f"must be a list of at most {MAX_SYMPTOMS} names")
        incidents.append(Incident(_text(x.get("key"), f"{q}.key"), _text(x.get("job_id"), f"{q}.job_id"),
                                  None if x.get("user") is None else _text(x["user"], f"{q}.user"),
                                  _num(x.get("end"), f"{q}.end"), kind,
                                  tuple(_text(s, f"{q}.symptoms") for s in syms),
                                  None if x.get("outcome") is None else _text(x["outcome"], f"{q}.outcome")))
    reasons = o.get("reasons", [])
    if not isinstance(reasons, list) or len(reasons) > 32:
        raise FleetContextError(f"{p}.reasons", "must be a list of at most 32 sentences")
    ints = {k: _int(o.get(k, 0), f"{p}.{k}") for k in ("episodes", "jobs", "users", "attempts", "clean_since")}
    action = o.get("action")
    return NodeRecord(name, state, tuple(_text(r, f"{p}.reasons") for r in reasons), tuple(incidents),
                      action=None if action is None else _text(action, f"{p}.action"), **ints)


def _obj(v: Any, path: str) -> dict:
    if not isinstance(v, dict):
        raise FleetContextError(path, "must be an object")
    return v


def _text(v: Any, path: str) -> str:
    if not isinstance(v, str) or not v or len(v) > MAX_TEXT:
        raise FleetContextError(path, f"must be a non-empty string of at most {MAX_TEXT} characters")
    return v


def _num(v: Any, path: str) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v != v or v < 0:
        raise FleetContextError(path, "must be a non-negative number")
    return float(v)


def _int(v: Any, path: str) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise FleetContextError(path, "must be a non-negative integer")
    return v


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _duration(s: float) -> str:
    for unit, n in (("d", 86400), ("h", 3600), ("m", 60)):
        if s >= n and s % n == 0:
            return f"{int(s // n)}{unit}"
    return f"{s:g}s"
