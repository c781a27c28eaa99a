"""Refiners named by the attribution spec (FINAL, job-wide): Xid149AndNvlinkFiltering
and Gb200PriorityRootCause.  Xid171Cascade is declarative: see cascades.rule."""
from rulekit.plugin import RefinerPriority, demote_where, refiner_def

AUTHOR = "rulekit core"
NVLINK5_DECODED = ("XID-149-NVLINK_SIGNAL_INTEGRITY", "XID-149-NVLINK_NETIR_FATAL", "XID-144-NVLINK_SAW_FATAL",
                   "XID-145-NVLINK_RLW_FATAL", "XID-146-NVLINK_TLW_FATAL", "XID-147-NVLINK_TREX_FATAL",
                   "XID-148-NVLINK_NVLPW_CTRL_FATAL", "XID-150-NVLINK_MSE_FATAL")
# consequences of an NVLink5 fatal error on its own node (REFERENCE 1.2: "may cause 48/94/95/45 locally")
LOCAL_CONSEQUENCES = ("XID-43-", "XID-45-", "XID-48-", "XID-94-", "XID-95-", "XID-154-", "XID-74-")


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
    demote_where(symptoms, context.registry, lambda s, info: info.outcome != "hardware" or info.sub_domain == "nvlink",
                 "Xid149AndNvlinkFiltering", f"consequence of {decoded[0]}", keep=NVLINK5_DECODED)


@refiner_def(name="Gb200PriorityRootCause", author=AUTHOR, priority=_priority("Gb200PriorityRootCause"),
             symptoms=NVLINK5_DECODED)
def gb200_priority_root_cause(context):
    """On NVLink5 (GB200) systems, a decoded fatal NVLink5 error is the root cause over the
    GPU-local Xids it causes on the same node (43/45/48/94/95/154, raw 74)."""
    nodes_with_nvlink5 = {n for n, s in context.my_bad_nodes.items() if any(x in NVLINK5_DECODED for x in s.symptoms())}
    if not nodes_with_nvlink5:
        return
    for node in nodes_with_nvlink5:
        node_set = context.my_bad_nodes[node]
        for s in node_set.matching(LOCAL_CONSEQUENCES):
            node_set.demote(s, "Gb200PriorityRootCause", "local consequence of the NVLink5 error on this node")
    # a symptom that no longer remains on any node leaves the job-wide set too
    for s in context.symptoms.matching(LOCAL_CONSEQUENCES):
        if all(s not in ns for ns in context.my_bad_nodes.values()):
            context.symptoms.demote(s, "Gb200PriorityRootCause", "local consequence of an NVLink5 error")
