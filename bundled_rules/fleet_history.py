"""A node's fleet history as evidence (docs/blueprint.md, "Fleet memory").

FleetHistoryImplicatesNode (LATE filter): when this attempt failed on a node in a way
that is ambiguous between the workload and the node (a symptom the fleet policy lists
as ambiguous: a segfault, an unspecified launch failure, an illegal address, a silent
rank, a bare storage error...) and the node's record implicates it (its state is
`suspect` or `quarantine`: failures across other jobs and users in the policy's
window), the node is named with NODE_REPEATED_FAILURES, a `suspected` bad node
(`certain: false`) whose evidence line is its history.

It reads `context.fleet`, which only a store supplies: without one it does nothing,
so a job is judged on its own evidence.  It does nothing either when the job's own
evidence blames a node or a link: that explains the failure.  It never demotes or
removes the ambiguous evidence; a clear error of the program (an assert, an OOM)
still outranks the history.
"""
from rulekit.plugin import EventSpec, FilterPriority, filter_def, register_symptom

from .common.relations import order_key

AUTHOR = "rulekit corpus"
SYMPTOM = "NODE_REPEATED_FAILURES"
OWN_EVIDENCE = ("node", "link")  # blames that explain the job by themselves

register_symptom(
    SYMPTOM, outcome="hardware", sub_domain="node", rank=656, blame="node", action="inspect",
    docs="The node failed ambiguously here (segfault, launch failure, illegal address, silent rank, storage "
         "error) and its fleet record implicates it: failures across other jobs and users in the policy's "
         "window. A suspected bad node; the evidence line is the record. Ranked above the ambiguous "
         "symptoms (segfault 630 .. illegal address 650) and below clear program errors (assert 670, "
         "CUDA OOM 680) and any hardware the job's own logs show.")


@filter_def(name="FleetHistoryImplicatesNode", author=AUTHOR, priority=FilterPriority.LATE + 50, symptoms=(SYMPTOM,))
def fleet_history_implicates_node(context):
    """Name a node `suspected` from its fleet record when this attempt's evidence on it is
    ambiguous between the workload and the node and nothing in the job blames a node."""
    fleet = context.fleet
    if fleet is None:
        return
    stream = context.event_stream
    reg = context.registry
    bad = stream.bad_events()
    if any(e.symptom and reg.info(e.symptom).blame in OWN_EVIDENCE for e in bad):
        return
    by_node = {}
    for e in [*bad, *stream.query("bad_peers")]:
        if e.node and fleet.ambiguous(e.symptom):
            by_node.setdefault(e.node, []).append(e)
    for node in sorted(by_node):
        rec = fleet.record(node)
        if rec is None or not rec.implicated:
            continue
        evs = sorted(by_node[node], key=order_key)
        here = sorted({e.symptom for e in evs})
        stream.add(EventSpec(type="bad_node", symptom=SYMPTOM, node=node, datum=rec.summary(fleet.window_s),
                             fields={"certain": False, "fleet_state": rec.state, "episodes": rec.episodes,
                                     "jobs": rec.jobs, "users": rec.users, "ambiguous_here": here,
                                     "incidents": [i.key for i in rec.incidents[-10:]]}),
                   cause=evs[0],
                   reason=f"{', '.join(here)} on {node}, whose fleet record is {rec.state} "
                          f"({rec.episodes} episode(s), {rec.jobs} job(s), {rec.users} user(s))")
