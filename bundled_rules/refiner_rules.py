"""Refiners named by the attribution spec (FINAL, job-wide): Xid149AndNvlinkFiltering
and Gb200PriorityRootCause.  Xid171Cascade is declarative: see cascades.rule.
A symptom whose every event came before the NVLink5 error (beyond the clock-skew
tolerance) is not its consequence and is left alone (`spare_first`, noted in the trace)."""
from rulekit.plugin import RefinerPriority, refiner_def

from .common.relations import NVLINK5_DECODED as _NVLINK5_DECODED, NVLINK5_LOCAL_CONSEQUENCES, demote_consequences, \
    nvlink5_filtering_demotes, spare_first

AUTHOR = "rulekit core"
NVLINK5_DECODED = _NVLINK5_DECODED
LOCAL_CONSEQUENCES = NVLINK5_LOCAL_CONSEQUENCES


def _priority(name):
    order = ["Xid171Cascade", "Xid149AndNvlinkFiltering", "Gb200PriorityRootCause"]
    return RefinerPriority.FINAL + 10 * (order.index(name) + 1)


@refiner_def(name="Xid149AndNvlinkFiltering", author=AUTHOR, priority=_priority("Xid149AndNvlinkFiltering"),
             symptoms=NVLINK5_DECODED)
def xid_149_and_nvlink_filtering(context):
    """A decoded fatal NVLink5 error explains the communication failures of the job:
    keep it and demote the other symptoms that are not independent hardware faults
    (NCCL, CUDA, Python, network, scheduler noise) to interesting evidence."""
    symptoms = context.symptoms
    decoded = [s for s in symptoms.symptoms() if s in NVLINK5_DECODED]
    if not decoded:
        return
    demote_consequences(context, symptoms, lambda s, info: nvlink5_filtering_demotes(info),
                        "Xid149AndNvlinkFiltering", f"consequence of {decoded[0]}", decoded, keep=NVLINK5_DECODED)


@refiner_def(name="Gb200PriorityRootCause", author=AUTHOR, priority=_priority("Gb200PriorityRootCause"),
             symptoms=NVLINK5_DECODED)
def gb200_priority_root_cause(context):
    """On NVLink5 (GB200) systems, a decoded fatal NVLink5 error is the root cause over the
    GPU-local Xids it causes on the same node (43/45/48/94/95/154, raw 74)."""
    nodes_with_nvlink5 = {n for n, s in context.my_bad_nodes.items() if any(x in NVLINK5_DECODED for x in s.symptoms())}
    if not nodes_with_nvlink5:
        return
    for node in sorted(nodes_with_nvlink5, key=lambda n: n or ""):
        node_set = context.my_bad_nodes[node]
        local = node_set.matching(LOCAL_CONSEQUENCES)
        roots = [x for x in node_set.symptoms() if x in NVLINK5_DECODED]
        spared = spare_first(context, node_set, local, roots, "Gb200PriorityRootCause", node=node)
        for s in local:
            if s not in spared:
                node_set.demote(s, "Gb200PriorityRootCause", "local consequence of the NVLink5 error on this node")
    # a symptom that no longer remains on any node leaves the job-wide set too
    for s in context.symptoms.matching(LOCAL_CONSEQUENCES):
        if all(s not in ns for ns in context.my_bad_nodes.values()):
            context.symptoms.demote(s, "Gb200PriorityRootCause", "local consequence of an NVLink5 error")
