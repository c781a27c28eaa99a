"""Who is to blame, for the report: `bad_nodes` (only nodes a remaining symptom
blames on node, link or peer, each with an action and a confidence),
`affected_nodes` (where workload, environment, scheduler or victim symptoms
surfaced), and the result's overall `confidence` with the `alternatives` it
competed with.  See docs/blame.md.

Pure functions over events, the symptom registry and the outcome decision: no
SQL, no writes, no rule knowledge beyond the registry's blame and action.
"""
from __future__ import annotations

import re
from typing import Any, Callable, Iterable

from rulekit.engine import locality
from rulekit.engine.refine import DECISIVE_OUTCOMES, FALLBACK_RANK, OutcomeDecision
from rulekit.engine.store import Event
from rulekit.rules.model import NODE_BLAMES
from rulekit.rules.registry import SymptomRegistry

XID154 = "XID-154-RECOVERY_ACTION_CHANGED"
# Xid 154's printed recovery action (`... changed from 0x0 (None) to 0x4 (Drain and Reset)`)
XID154_ACTIONS = {"0x1": "reset_gpu", "0x2": "reboot", "0x3": "drain_p2p", "0x4": "drain_and_reset"}
XID154_NAMES = {"gpu reset required": "reset_gpu", "node reboot required": "reboot", "drain p2p": "drain_p2p",
                "drain and reset": "drain_and_reset"}
_XID154_TO = re.compile(r"recovery action changed from [^()]*\([^)]*\) to (0x[0-9a-fA-F]+)\s*\(([^)]*)\)", re.I)

# blames that are certain by themselves; a `peer` blame is `suspected` until the node's own logs agree
CERTAIN_BLAMES = ("node", "link")
# outcomes that blame no node: the user's program, the time limit, a cancellation, success
NO_FAULT_OUTCOMES = ("application", "timeout", "cancelled", "success")
MAX_ALTERNATIVES = 4
_CERTAIN = locality.Locality("node", True, "")
# a hardware/network/application/infrastructure root ranked below this is weak evidence
# (thermal slowdown, a bare non-zero exit, Xid 154 alone); scheduler states are not
WEAK_RANK = 300


def xid154_action(datum: str | None) -> str | None:
    """The action Xid 154 printed, or None (`0x0 None`, or a line it cannot read)."""
    m = _XID154_TO.search(datum or "")
    if not m:
        return None
    return XID154_ACTIONS.get(m.group(1).lower()) or XID154_NAMES.get(m.group(2).strip().lower())


def _by_rank(reg: SymptomRegistry, symptoms: Iterable[str]) -> list[str]:
    return sorted(set(symptoms), key=lambda s: (-reg.rank(s), s))


def resource_blames(events: list[Event], reg: SymptomRegistry, job_nodes: int) -> dict[int, locality.Locality]:
    """event id -> the resolved blame of each remaining bad-node event whose symptom blames
    `storage` or `service` (rulekit/engine/locality.py): `node` only with evidence that
    the resource is the node's own, `environment` otherwise."""
    bad = [e for e in events if e.node is not None and e.is_bad and e.symptom
           and reg.info(e.symptom).blame in locality.RESOURCE_BLAMES]
    if not bad:
        return {}
    spread = locality.nodes_per_symptom((e.symptom, e.node) for e in bad)  # type: ignore[misc]
    return {e.id: locality.resolve(reg.info(e.symptom).blame, e.node, spread[e.symptom], job_nodes, e.fields, e.datum,  # type: ignore[arg-type,index]
                                   e.source) for e in bad}


def blame_of(e: Event, reg: SymptomRegistry, resolved: dict[int, locality.Locality]) -> str | None:
    """An event's blame: its symptom's, with `storage` / `service` resolved by locality."""
    loc = resolved.get(e.id)
    return loc.blame if loc is not None else reg.info(e.symptom).blame if e.symptom else None


def blame_nodes(events: list[Event], reg: SymptomRegistry, decision: OutcomeDecision,
                sort_key: Callable[[Event], tuple], node_domain: Callable[[str], str | None] = lambda n: None,
                job_nodes: int = 0, resolved: dict[int, locality.Locality] | None = None
                ) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, list[str]]]:
    """(bad_nodes, affected_nodes, outranked) from the node events that remain after refinement.

    A node is bad when a remaining bad-node symptom on it blames node, link or peer.
    Its entry names those symptoms, the blame and action of the highest-ranked one (Xid
    154's printed recovery action on that node takes precedence), and `certain` unless
    only peers blame it.  `bad_peers` events (other nodes naming this one) make a node
    a `suspected` bad node only when nothing certain explains the job and its outcome
    is network or unknown.  Every node where a remaining symptom blames nobody on the
    node (workload, environment, scheduler, none) is listed in affected_nodes with
    those symptoms.  When the outcome blames no node (application, timeout, cancelled,
    success) nothing is a bad node: node evidence the root outranked is returned as
    `outranked` (node -> symptoms), for the report's interesting nodes.  A `storage` or
    `service` symptom blames its node only when `resolved` (see `resource_blames`) says the
    evidence is the node's own; the entry then says why (`locality`), and an affected
    node whose resource error was not its own says why not."""
    if resolved is None:
        resolved = resource_blames(events, reg, job_nodes)
    why: dict[str, str] = {}
    blaming: dict[str, list[Event]] = {}
    other: dict[str, list[Event]] = {}
    peers: dict[str, list[Event]] = {}
    x154: dict[str, list[Event]] = {}
    for e in events:
        if e.node is None:
            continue
        if e.symptom == XID154:
            x154.setdefault(e.node, []).append(e)
        if e.event_type.endswith(".bad_peers"):
            if e.symptom:
                peers.setdefault(e.node, []).append(e)
            continue
        if not e.is_bad or not e.symptom:
            continue
        blame = blame_of(e, reg, resolved)
        loc = resolved.get(e.id)
        if loc is not None:
            why.setdefault(e.node, loc.reason)
        (blaming if blame in NODE_BLAMES else other).setdefault(e.node, []).append(e)

    entries: dict[str, dict[str, Any]] = {}
    for node, evs in blaming.items():
        syms = _by_rank(reg, (e.symptom for e in evs if e.symptom))
        top = reg.info(syms[0])
        top_blame = next(blame_of(e, reg, resolved) for e in evs if e.symptom == syms[0])
        # (generic evidence of the fallback band suspects a node, never makes it certain)
        certain = any(blame_of(e, reg, resolved) in CERTAIN_BLAMES and resolved.get(e.id, _CERTAIN).certain
                      and (not e.symptom or reg.rank(e.symptom) > FALLBACK_RANK)
                      for e in evs) or any(e.fields.get("certain") is True for e in evs)
        entries[node] = {"node": node, "symptoms": syms, "blame": top_blame, "action": top.action,
                         "confidence": "certain" if certain else "suspected"}
        if node in why and any(e.id in resolved for e in evs):
            entries[node]["locality"] = why[node]
    any_certain = any(b["confidence"] == "certain" for b in entries.values())
    if not any_certain and decision.outcome in ("network", "unknown"):
        for node, evs in peers.items():
            if node in entries:
                continue
            syms = _by_rank(reg, (e.symptom for e in evs if e.symptom))
            entries[node] = {"node": node, "symptoms": syms, "blame": "peer",
                             "action": reg.info(syms[0]).action if reg.info(syms[0]).blame == "peer" else "inspect",
                             "confidence": "suspected",
                             "named_by": sorted({str(e.fields.get("reporter")) for e in evs if e.fields.get("reporter")})}
    for node, entry in entries.items():
        printed = [e for e in x154.get(node, ()) if xid154_action(e.datum)]
        if printed:
            last = max(printed, key=sort_key)
            entry["action"] = xid154_action(last.datum)
            entry["action_from"] = XID154
        dom = node_domain(node)
        if dom:
            entry["domain"] = dom
    if decision.outcome in NO_FAULT_OUTCOMES:
        # the job failed of its own (or the scheduler's) accord: node evidence the root
        # outranks did not cause it, and draining on it would drain a working machine
        outranked = {n: e["symptoms"] for n, e in entries.items()}
        entries = {}
    else:
        outranked = {}
    bad_nodes = [entries[n] for n in sorted(entries, key=lambda n: (n != decision.root_node, n))]
    affected = [{"node": n, "symptoms": _by_rank(reg, (e.symptom for e in other[n] if e.symptom)),
                 **({"locality": why[n]} if n in why and any(e.id in resolved for e in other[n]) else {})}
                for n in sorted(other)]
    return bad_nodes, affected, outranked


def assess(decision: OutcomeDecision, remaining: list[str], reg: SymptomRegistry) -> tuple[str, list[dict[str, Any]]]:
    """The result's confidence (high | medium | low) and what competed with the root.

    low: no root (no error evidence), the root's own outcome is unknown or it blames
    nobody (victim / generic evidence only), the decision fell back from such a root,
    a hardware/network/application/infrastructure root ranked below WEAK_RANK, or
    the top rank is tied between different outcomes.  medium: a tie within one
    outcome, a root only peers blame, or a symptom of another outcome within 10 ranks
    of the root.  high otherwise."""
    root = decision.root_symptom
    if root is None:
        return "low", []
    info = reg.info(root)
    alternatives: list[dict[str, Any]] = []
    seen = {(info.outcome, info.sub_domain)}

    def alt(s: str) -> None:
        i = reg.info(s)
        if (i.outcome, i.sub_domain) in seen or len(alternatives) >= MAX_ALTERNATIVES:
            return
        seen.add((i.outcome, i.sub_domain))
        alternatives.append({"outcome": i.outcome, "sub_domain": i.sub_domain, "symptom": s})

    for s in decision.tied:
        if s != root:
            alt(s)
    for s in decision.fallback_from:
        alt(s)
    close = [s for s in remaining if s != root and reg.rank(s) >= reg.rank(root) - 10
             and reg.info(s).outcome != info.outcome]
    weak = (info.outcome == "unknown" or bool(decision.fallback_from)
            or (info.blame in (None, "none") and info.outcome != "success")
            or (info.outcome in DECISIVE_OUTCOMES and info.rank < WEAK_RANK))
    if weak or decision.ambiguous:
        for s in remaining:
            if s != root and reg.info(s).outcome != "unknown":
                alt(s)
        return "low", alternatives
    if decision.tied or info.blame == "peer" or close:
        for s in close:
            alt(s)
        return "medium", alternatives
    return "high", alternatives
