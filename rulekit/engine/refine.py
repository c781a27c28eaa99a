"""Symptom sets for the refinement phase and the outcome decision.

A `SymptomSet` is what refiners see: a node's symptoms (SCRUB) or the job-wide
set (FINAL, POST_OUTCOME), each symptom with the nodes and events carrying it.
Refiners discard or demote symptoms; the phase runner back-propagates those
changes to the bad-node events.  `decide_outcome` maps the highest-ranked
remaining symptom to root cause and outcome.  No SQL here.
"""
from __future__ import annotations

from dataclasses import field
from typing import Any, Iterable, Iterator

from rulekit.rules.records import dataclass
from rulekit.rules.registry import SymptomRegistry
from rulekit.engine.store import TraceEntry


@dataclass
class Removal:
    action: str  # "discard" | "demote"
    rule: str
    reason: str


class SymptomSet:
    """Active symptoms -> the nodes (and event ids) that carry them."""

    def __init__(self, registry: SymptomRegistry, scope: str | None, trace: list[TraceEntry], phase: str = ""):
        self.registry = registry
        self.scope = scope  # node name, or None for the job-wide set
        self.trace = trace
        self.phase = phase
        self._nodes: dict[str, set[str | None]] = {}
        self._events: dict[str, list[int]] = {}
        self.removed: dict[str, Removal] = {}
        self.added_by: dict[str, str] = {}

    # ---- building (the phase runner) ----
    def put(self, symptom: str, node: str | None, event_id: int | None = None) -> None:
        """Record that `node` carries `symptom` (through event `event_id`, if any)."""
        self.put_many(symptom, node, () if event_id is None else (event_id,))

    _put = put  # the former private name

    def put_many(self, symptom: str, node: str | None, event_ids: Iterable[int]) -> None:
        """Record that `node` carries `symptom` through these events (in this order)."""
        nodes = self._nodes.get(symptom)
        if nodes is None:
            nodes = self._nodes[symptom] = set()
        nodes.add(node)
        ids = self._events.get(symptom)
        if ids is None:
            ids = list(event_ids)
            if ids:
                self._events[symptom] = ids
        else:
            ids.extend(event_ids)

    def merge(self, other: "SymptomSet", node: str | None) -> None:
        """Add every active symptom of `other` as carried by `node` (with its events)."""
        for sym in other.symptoms():
            self.put_many(sym, node, other.event_ids(sym))

    def recorded(self) -> list[str]:
        """Every symptom ever put, removed or not, in the order first put."""
        return list(self._nodes)

    def removal(self, symptom: str) -> "Removal | None":
        """How `symptom` was removed (discard / demote, by which rule), or None if active."""
        return self.removed.get(symptom)

    def record_removal(self, symptom: str, removal: "Removal") -> None:
        """Note a removal decided elsewhere (job-wide) unless this set has its own."""
        self.removed.setdefault(symptom, removal)

    # ---- reading ----
    def symptoms(self) -> list[str]:
        """Active symptoms, highest rank first (ties by name)."""
        return sorted((s for s in self._nodes if s not in self.removed), key=lambda s: (-self.registry.rank(s), s))

    def __contains__(self, symptom: object) -> bool:
        if isinstance(symptom, str):
            symptom = self.registry.canonical(symptom)
        return symptom in self._nodes and symptom not in self.removed

    def __iter__(self) -> Iterator[str]:
        return iter(self.symptoms())

    def __len__(self) -> int:
        return len(self.symptoms())

    def nodes(self, symptom: str) -> set[str | None]:
        symptom = self.registry.canonical(symptom)
        return set(self._nodes.get(symptom, ())) if symptom in self else set()

    def event_ids(self, symptom: str) -> list[int]:
        return list(self._events.get(self.registry.canonical(symptom), ()))

    def matching(self, prefix: str | tuple[str, ...]) -> list[str]:
        pre = (prefix,) if isinstance(prefix, str) else tuple(prefix)
        return [s for s in self.symptoms() if s.startswith(pre)]

    def any(self, prefix: str | tuple[str, ...]) -> bool:
        return bool(self.matching(prefix))

    def rank(self, symptom: str) -> int:
        return self.registry.rank(symptom)

    def top(self) -> str | None:
        s = self.symptoms()
        return s[0] if s else None

    # ---- writing ----
    def _remove(self, symptom: str, action: str, rule: str, reason: str) -> bool:
        symptom = self.registry.canonical(symptom)
        if symptom not in self:
            return False
        self.removed[symptom] = Removal(action, rule, reason)
        self.trace.append(TraceEntry(self.phase, rule, f"{action}_symptom", None, symptom, self.scope, reason))
        return True

    def discard(self, symptom: str, rule: str = "", reason: str = "") -> bool:
        """Remove the symptom; its bad-node events are deleted at back-propagation."""
        return self._remove(symptom, "discard", rule, reason)

    def demote(self, symptom: str, rule: str = "", reason: str = "") -> bool:
        """Remove the symptom; its bad-node events become interesting at back-propagation."""
        return self._remove(symptom, "demote", rule, reason)

    def keep_only(self, symptoms: set[str], rule: str = "", reason: str = "", action: str = "demote") -> list[str]:
        symptoms = {self.registry.canonical(s) for s in symptoms}
        gone = [s for s in self.symptoms() if s not in symptoms]
        for s in gone:
            self._remove(s, action, rule, reason)
        return gone

    def to_dict(self) -> dict[str, Any]:
        return {s: sorted(n or "" for n in self._nodes[s]) for s in self.symptoms()}


@dataclass
class OutcomeDecision:
    """The outcome mapping's result; POST_OUTCOME refiners may change it."""

    outcome: str = "unknown"
    sub_domain: str = "unknown"
    root_symptom: str | None = None
    root_node: str | None = None
    root_event_id: int | None = None
    ambiguous: bool = False
    tied: list[str] = field(default_factory=list)
    reason: str = ""
    changed_by: list[str] = field(default_factory=list)
    # higher-ranked symptoms whose own outcome is unknown, passed over for a decisive one
    fallback_from: list[str] = field(default_factory=list)

    def set(self, rule: str, **changes: Any) -> None:
        for k, v in changes.items():
            setattr(self, k, v)
        self.changed_by.append(rule)


def decide_outcome(job_set: SymptomSet, first_event: dict[str, tuple[Any, int, str | None]]) -> OutcomeDecision:
    """Highest-ranked remaining symptom -> root cause and outcome.

    first_event: symptom -> (sort key of its earliest event, event id, node).
    Ties on the top rank between symptoms with a different outcome or sub_domain make
    the result ambiguous; the earliest evidence then names the root cause."""
    active = job_set.symptoms()
    if not active:
        return OutcomeDecision(reason="no bad-node symptom remained after refinement")
    reg = job_set.registry
    fallback_from: list[str] = []
    if reg.info(active[0]).outcome == "unknown":
        # never give up early: a root whose own outcome is unknown (a victim, a generic
        # exit) yields to the best remaining symptom that says what happened, with low
        # confidence; only when none does is the outcome unknown
        known = [s for s in active if reg.info(s).outcome in DECISIVE_OUTCOMES]
        specific = [s for s in known if reg.rank(s) > FALLBACK_RANK]
        decisive = [s for s in specific if reg.info(s).blame not in (None, "none")]
        # second tier: a victim whose outcome is known (ncclRemoteError -> network) still says more;
        # third: the generic evidence of an error line no rule explains (the fallback band)
        decisive = decisive or specific or known
        if decisive:
            fallback_from = [s for s in active if reg.rank(s) > reg.rank(decisive[0])]
            active = decisive
    top_rank = reg.rank(active[0])
    tied = [s for s in active if reg.rank(s) == top_rank]
    # explicit tie-break: earliest evidence (timestamp, uptime, source, line), then the name
    tied.sort(key=lambda s: (first_event.get(s, (((1, ""),), 0, None))[0], s))
    root = tied[0]
    info = reg.info(root)
    kinds = {(reg.info(s).outcome, reg.info(s).sub_domain) for s in tied}
    ev = first_event.get(root)
    reason = f"`{root}` has the highest rank ({top_rank}) of {len(active)} remaining symptom(s)"
    if fallback_from:
        reason = (f"`{root}` is the highest-ranked symptom with a known outcome; "
                  f"{', '.join('`' + s + '`' for s in fallback_from)} say(s) nothing about the cause")
    if len(tied) > 1:
        reason += f"; tied with {', '.join('`' + s + '`' for s in tied[1:])}"
    return OutcomeDecision(outcome=info.outcome, sub_domain=info.sub_domain, root_symptom=root,
                           root_node=ev[2] if ev else None, root_event_id=ev[1] if ev else None,
                           ambiguous=len(kinds) > 1, tied=tied if len(tied) > 1 else [], reason=reason,
                           fallback_from=fallback_from)


DECISIVE_OUTCOMES = ("hardware", "network", "application", "infrastructure")
# symptoms ranked at or below this are the fallback band: generic evidence (an error line
# no rule explains, bundled_rules/error_lines.py) that decides only when nothing else
# does, and never makes a bad node certain
FALLBACK_RANK = 0
