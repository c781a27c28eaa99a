"""Node history and node states: the fleet's memory, read from the Blueprint's store.

`node_history(node, attempts, policy, as_of)` folds one node's attempts (the
store's `NodeAttempt` rows, oldest first) into a `NodeHistory`, the way gpud
folds its event log into a health state: the attempts it ran, its incidents
(`blamed`: a certain bad node; `ambiguous`: a suspected bad node, or a symptom
the policy lists as ambiguous where the node was affected), episodes
(incidents closer than `episode_gap`), distinct jobs and users, the time
between incidents, clean attempts since the last one, and its state with the
reasons:

- `suspect`: a blamed episode, or `suspect_after` ambiguous episodes across
  `min_users` users (a job with no user stands for its own user);
- `quarantine` (proposed): `quarantine_after` such episodes, or the same fault
  class blamed again after `escalate_after_resets` resets (action
  `drain_and_rma`);
- `cleared`: was suspect or quarantine, then `clear_after_clean` clean attempts,
  `clear_after_runtime` of clean runtime, or `clear_after_quiet` without an
  incident; only incidents after that count again (an escalated node is not
  cleared: its incidents leave the window);
- `healthy`: none of these.

`fleet_state(...)` adds the circuit breaker (never more than `breaker_share` of
the fleet newly proposed for quarantine within `breaker_window`; past it no
node is proposed, and it says so) and the proposals.  `fleet_context(...)` is
the engine's read-only `FleetContext` for one attempt.  Pure: rows in, data
out; no SQL, no clock, no Slurm.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import field
from datetime import datetime, timezone
from typing import Any, Iterable

from rulekit.blueprint.fleet_policy import FleetPolicy
from rulekit.blueprint.store import NodeAttempt
from rulekit.inputs.fleet import FleetContext, Incident, NodeRecord
from rulekit.rules.records import dataclass

# a blamed episode whose action resets the GPU or the node is taken to be followed by that
# reset before the node runs again (the store does not see resets)
RESET_ACTIONS = ("reset_gpu", "reboot", "drain_and_reset")
NO_VERDICT = ("unknown", "error")  # outcomes that say nothing about the node: not clean


def when(ts: float | None) -> str:
    return datetime.fromtimestamp(ts, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ") if ts is not None else "-"


def span(s: float) -> str:
    for unit, n in (("d", 86400), ("h", 3600), ("m", 60)):
        if s >= n:
            v = s / n
            return f"{v:.1f}{unit}" if v != int(v) else f"{int(v)}{unit}"
    return f"{s:g}s"


@dataclass
class Episode:
    start: float
    end: float
    incidents: list[Incident] = field(default_factory=list)
    resets: set[str] = field(default_factory=set)  # fault classes blamed here with a resetting action

    @property
    def blamed(self) -> bool:
        return any(i.kind == "blamed" for i in self.incidents)


@dataclass
class NodeHistory:
    node: str
    attempts: int = 0
    clean: int = 0
    incidents: list[Incident] = field(default_factory=list)  # every incident in the window
    episodes: list[Episode] = field(default_factory=list)  # since the last clearing
    state: str = "healthy"
    reasons: list[str] = field(default_factory=list)
    action: str | None = None
    clean_since: int = 0
    clean_runtime: float = 0.0
    last_incident: float | None = None
    cleared_at: float | None = None
    quarantined_at: float | None = None  # when the current quarantine was first reached
    gaps: list[float] = field(default_factory=list)  # seconds between consecutive incidents
    escalated: str | None = None  # the fault class that escalated

    @property
    def open_incidents(self) -> list[Incident]:
        return [i for e in self.episodes for i in e.incidents]

    def users(self) -> set[str]:
        return {i.user or f"job:{i.job_id}" for i in self.open_incidents}

    def jobs(self) -> set[str]:
        return {i.job_id for i in self.open_incidents}

    def record(self) -> NodeRecord:
        return NodeRecord(self.node, self.state, tuple(self.reasons), tuple(self.open_incidents), len(self.episodes),
                          len(self.jobs()), len({i.user or f"job:{i.job_id}" for i in self.open_incidents}),
                          self.attempts, self.clean_since, self.action)

    def to_dict(self) -> dict[str, Any]:
        return {"node": self.node, "state": self.state, "reasons": list(self.reasons), "action": self.action,
                "attempts": self.attempts, "clean_attempts": self.clean,
                "incidents": [i.to_dict() for i in self.incidents],
                "blamed": sum(1 for i in self.incidents if i.kind == "blamed"),
                "ambiguous": sum(1 for i in self.incidents if i.kind == "ambiguous"),
                "episodes": len(self.episodes), "jobs": sorted(self.jobs()),
                "users": sorted(u for u in {i.user for i in self.open_incidents} if u),
                "clean_since": self.clean_since, "last_incident": self.last_incident,
                "cleared_at": self.cleared_at, "quarantined_at": self.quarantined_at,
                "mean_gap_s": statistics.fmean(self.gaps) if self.gaps else None,
                "escalated": self.escalated}


def classify(a: NodeAttempt, policy: FleetPolicy) -> tuple[str | None, tuple[str, ...], str | None]:
    """(incident kind or None, the node's symptoms in it, the action of a blamed one)."""
    bad = a.roles.get("bad")
    if bad and bad.get("confidence") == "certain":
        return "blamed", tuple(bad["symptoms"]), bad.get("action")
    syms: list[str] = list(bad["symptoms"]) if bad else []
    for role in ("bad", "affected"):
        r = a.roles.get(role)
        if r:
            syms += [s for s in r["symptoms"] if policy.is_ambiguous(s) and s not in syms]
    if bad or any(policy.is_ambiguous(s) for s in syms):
        return "ambiguous", tuple(syms), None
    return None, (), None


def node_history(node: str, attempts: Iterable[NodeAttempt], policy: FleetPolicy, as_of: float) -> NodeHistory:
    """Fold one node's attempts (oldest first, all before `as_of`) into its history and state."""
    h = NodeHistory(node)
    for a in attempts:
        _quiet(h, policy, a.end)
        kind, syms, action = classify(a, policy)
        h.attempts += 1
        if kind is None:
            if a.complete and a.outcome not in NO_VERDICT:
                h.clean += 1
                h.clean_since += 1
                h.clean_runtime += max(0.0, a.end - (a.start if a.start is not None else a.end))
                _clean(h, policy, a.end)
            continue
        inc = Incident(a.key, a.job_id, a.user, a.end, kind, syms, a.outcome)
        h.incidents.append(inc)
        if h.last_incident is not None:
            h.gaps.append(a.end - h.last_incident)
        h.last_incident = a.end
        h.clean_since, h.clean_runtime = 0, 0.0
        ep = h.episodes[-1] if h.episodes and a.end - h.episodes[-1].end <= policy.episode_gap else None
        if ep is None:
            ep = Episode(a.end, a.end)
            h.episodes.append(ep)
        ep.end = a.end
        ep.incidents.append(inc)
        if kind == "blamed" and action in RESET_ACTIONS:
            ep.resets.update(policy.fault_class(s) for s in syms)
        _evaluate(h, policy)
    _quiet(h, policy, as_of)
    return h


def _evaluate(h: NodeHistory, policy: FleetPolicy) -> None:
    eps = h.episodes
    blamed = [e for e in eps if e.blamed]
    amb = [e for e in eps if not e.blamed]
    amb_users = {i.user or f"job:{i.job_id}" for e in amb for i in e.incidents}
    amb_count = len(amb) >= policy.suspect_after and len(amb_users) >= policy.min_users
    n = len(blamed) + (len(amb) if amb_count else 0)
    escalated = None
    by_class: dict[str, int] = {}
    for e in blamed:
        for c in e.resets:
            by_class[c] = by_class.get(c, 0) + 1
    for c, k in sorted(by_class.items(), key=lambda kv: (-kv[1], kv[0])):
        if k - 1 >= policy.escalate_after_resets:
            escalated = (c, k)
            break
    what = (f"{len(blamed)} episode(s) blamed on it, {len(amb)} ambiguous across {len(amb_users)} user(s)"
            f", {len({i.job_id for e in eps for i in e.incidents})} job(s), since "
            f"{when(eps[0].start) if eps else '-'}")
    before = h.state
    if escalated:
        h.state, h.action, h.escalated = "quarantine", "drain_and_rma", escalated[0]
        h.reasons = [f"{escalated[0]} blamed in {escalated[1]} episodes, after {escalated[1] - 1} resets "
                     f"(escalates after {policy.escalate_after_resets}): hardware inspection", what]
    elif n >= policy.quarantine_after:
        h.state, h.action = "quarantine", "drain"
        h.reasons = [f"{n} failure episodes (quarantine from {policy.quarantine_after})", what]
    elif blamed or amb_count:
        h.state, h.action = "suspect", "inspect"
        h.reasons = [f"{n} failure episode(s) (suspect from 1 blamed or {policy.suspect_after} ambiguous across "
                     f"{policy.min_users} users; quarantine from {policy.quarantine_after})", what]
    else:
        if before != "cleared":
            h.state, h.action = "healthy", None
        h.reasons = ([h.reasons[0]] if before == "cleared" and h.reasons else []) + [
            f"below the thresholds: {what}"]
    if h.state == "quarantine" and before != "quarantine":
        h.quarantined_at = h.last_incident


def _clean(h: NodeHistory, policy: FleetPolicy, t: float) -> None:
    if h.state not in ("suspect", "quarantine") or h.escalated:
        return
    if h.clean_since >= policy.clear_after_clean:
        _clear(h, t, f"{h.clean_since} clean attempts since its last incident ({when(h.last_incident)})")
    elif h.clean_runtime >= policy.clear_after_runtime:
        _clear(h, t, f"{span(h.clean_runtime)} of clean runtime since its last incident ({when(h.last_incident)})")


def _quiet(h: NodeHistory, policy: FleetPolicy, t: float) -> None:
    if h.state in ("suspect", "quarantine") and not h.escalated and h.last_incident is not None \
            and t - h.last_incident >= policy.clear_after_quiet:
        _clear(h, h.last_incident + policy.clear_after_quiet,
               f"no incident for {span(policy.clear_after_quiet)} since {when(h.last_incident)}")


def _clear(h: NodeHistory, t: float, why: str) -> None:
    was = h.state
    h.state, h.action, h.escalated, h.quarantined_at = "cleared", None, None, None
    h.cleared_at = t
    h.reasons = [f"cleared {when(t)} (was {was}): {why}"]
    h.episodes = []


# ---- the fleet ---------------------------------------------------------------------------

@dataclass
class FleetState:
    as_of: float
    policy: FleetPolicy
    nodes: dict[str, NodeHistory]
    fleet_size: int
    cap: int
    new_quarantines: list[str]  # nodes whose quarantine began within the breaker window
    tripped: bool
    proposals: list[dict[str, Any]]

    def counts(self) -> dict[str, int]:
        out = {s: 0 for s in ("healthy", "suspect", "quarantine", "cleared")}
        for h in self.nodes.values():
            out[h.state] += 1
        return out

    def breaker(self) -> dict[str, Any]:
        msg = (f"circuit breaker tripped: {len(self.new_quarantines)} nodes newly meet the quarantine policy within "
               f"{span(self.policy.breaker_window)}, more than {self.cap} ({self.policy.breaker_share:.0%} of "
               f"{self.fleet_size} nodes); no node is proposed: look for a cause common to them "
               f"({', '.join(sorted(self.new_quarantines)[:10])})") if self.tripped else None
        return {"tripped": self.tripped, "cap": self.cap, "share": self.policy.breaker_share,
                "window_s": self.policy.breaker_window, "fleet_size": self.fleet_size,
                "new_quarantines": sorted(self.new_quarantines), "message": msg}

    def to_dict(self) -> dict[str, Any]:
        return {"as_of": self.as_of, "window_s": self.policy.window, "counts": self.counts(),
                "breaker": self.breaker(), "proposals": self.proposals,
                "nodes": [self.nodes[n].to_dict() for n in sorted(self.nodes, key=_order(self.nodes))]}


def _order(nodes: dict[str, NodeHistory]):
    rank = {"quarantine": 0, "suspect": 1, "cleared": 2, "healthy": 3}
    return lambda n: (rank[nodes[n].state], -len(nodes[n].incidents), n)


def histories(rows: Iterable[NodeAttempt], policy: FleetPolicy, as_of: float) -> dict[str, NodeHistory]:
    by_node: dict[str, list[NodeAttempt]] = {}
    for r in rows:
        if r.end < as_of:
            by_node.setdefault(r.node, []).append(r)
    return {n: node_history(n, sorted(rs, key=lambda a: (a.end, a.key)), policy, as_of) for n, rs in by_node.items()}


def fleet_state(rows: Iterable[NodeAttempt], policy: FleetPolicy, as_of: float) -> FleetState:
    """Every node's history as of `as_of` (rows: the store's attempts in [as_of - window, as_of)),
    the circuit breaker and the proposed quarantines."""
    nodes = histories(rows, policy, as_of)
    size = policy.fleet_size or len(nodes)
    cap = max(1, math.floor(policy.breaker_share * size))
    quarantined = [n for n, h in nodes.items() if h.state == "quarantine"]
    new = [n for n in quarantined if nodes[n].quarantined_at is not None
           and as_of - nodes[n].quarantined_at <= policy.breaker_window]
    tripped = len(new) > cap
    proposals = [] if tripped else [
        {"node": n, "action": nodes[n].action, "reason": nodes[n].reasons[0] if nodes[n].reasons else ""}
        for n in sorted(quarantined, key=_order(nodes))]
    return FleetState(as_of, policy, nodes, size, cap, new, tripped, proposals)


def fleet_context(rows: Iterable[NodeAttempt], policy: FleetPolicy, as_of: float, nodes: Iterable[str]) -> FleetContext:
    """The engine's view of these nodes as of `as_of` (rows: their attempts before it,
    without the attributed job's own)."""
    want = list(dict.fromkeys(nodes))
    hist = histories((r for r in rows if r.node in set(want)), policy, as_of)
    return FleetContext({n: hist[n].record() for n in want if n in hist}, policy.ambiguous, policy.window, as_of)
