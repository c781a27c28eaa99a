"""Refiners for the cascades the corpus knows (symptom-set level).

- EccCascade (SCRUB): on a node with Xid 48 or 171/172, its 63/64/94/95/154 and the
  application's ECC / contained CUDA errors are the same memory fault again;
- Xid79ExplainsNode (SCRUB): after a GPU falls off the bus, everything later on that
  node is downstream;
- SpecificNoSpaceWins (SCRUB): an shm / enroot ENOSPC is not a full filesystem;
- InjectedFaultExplainsJob (FINAL): an NVRx-injected fault explains what it provokes;
- NvlinkExplainsNccl (FINAL): an Xid 74 or fatal NVSwitch SXid explains NCCL and
  NVLink-CUDA symptoms anywhere in the job;
- StopExplainsTeardown (FINAL): what follows a cancellation, preemption or time
  limit is its teardown; with no independent fault the stop is the outcome;
- CompletedJobHandledErrors (FINAL): in a completed job, application errors were
  handled.

Refiners only demote; they never invent symptoms.  A symptom whose every event came
before the cause a refiner names (beyond the clock-skew tolerance, docs/time.md) is not
that cause's consequence and is left alone (`spare_first`, noted in the trace).
"""
from rulekit.plugin import RefinerPriority, demote_where, event_seconds, refiner_def

from .common.relations import STOP_TEARDOWN, STOPS, demote_consequences, is_primary, order_key, spare_first

AUTHOR = "rulekit corpus"

ECC_ROOTS = ("XID-48-", "XID-171-", "XID-172-")
ECC_CASCADE = ("XID-63-", "XID-64-", "XID-94-", "XID-95-", "XID-154-", "cudaErrorContained", "cudaErrorECCUncorrectable",
               "NCCL_UNHANDLED_CUDA_ERROR")


@refiner_def(name="EccCascade", author=AUTHOR, priority=RefinerPriority.SCRUB + 10)
def ecc_cascade(context):
    """Xid 48 / 171 / 172 on a node: its 63/64/94/95/154 and the CUDA 214/226 errors of
    that node are the same memory fault seen again (demoted)."""
    s = context.symptoms
    roots = s.matching(ECC_ROOTS)
    if not roots:
        return
    for sym in s.matching(ECC_CASCADE):
        s.demote(sym, "EccCascade", f"cascade of {roots[0]} on this node")


OFF_BUS = ("XID-79-FALLEN_OFF_THE_BUS",)
BEFORE_OFF_BUS_OK = ("PCIE_AER_FATAL", "PCIE_AER_NONFATAL", "THERMAL_THROTTLE")


def _stamped_seconds(e):
    """The seconds of an event's own stamp on the job's clock, or None."""
    return event_seconds(e) if e.timestamp else None


def _comparable(a, b):
    """True/False when events a and b can be ordered, None when they cannot."""
    if _stamped_seconds(a) is not None and _stamped_seconds(b) is not None:
        return True
    if a.obs_context_id == b.obs_context_id:
        return True
    if a.fields.get("uptime") is not None and b.fields.get("uptime") is not None and a.source == b.source:
        return True
    return None


def _earlier(a, b):
    ta, tb = _stamped_seconds(a), _stamped_seconds(b)
    if ta is not None and tb is not None:
        return ta < tb
    if a.obs_context_id == b.obs_context_id:
        return (a.line_num or 0) < (b.line_num or 0)
    return float(a.fields.get("uptime") or 0) < float(b.fields.get("uptime") or 0)


@refiner_def(name="Xid79ExplainsNode", author=AUTHOR, priority=RefinerPriority.SCRUB + 20)
def xid79_explains_node(context):
    """Xid 79 (or the off-bus banner): every symptom on that node that is not provably
    earlier (GSP 119/120, 154, NVML errors, CUDA 999/719, NCCL and Python noise) is
    downstream of the lost GPU and is demoted; PCIe AER before it stays as its cause's
    companion."""
    s = context.symptoms
    if not any(x in s for x in OFF_BUS):
        return
    node_events = context.event_stream.query("bad_node", node=context.node)
    offbus = sorted((e for e in node_events if e.symptom in OFF_BUS), key=order_key)
    if not offbus:
        return
    first79 = offbus[0]
    by_symptom = {}
    for e in node_events:
        by_symptom.setdefault(e.symptom, []).append(e)
    for sym in s.symptoms():
        if sym in OFF_BUS or sym in BEFORE_OFF_BUS_OK:
            continue
        evs = by_symptom.get(sym, [])
        provably_earlier = evs and all(_comparable(e, first79) and _earlier(e, first79) for e in evs)
        if not provably_earlier:
            s.demote(sym, "Xid79ExplainsNode", "downstream of Xid 79 on this node")


NVLINK_ROOTS = ("XID-74-NVLINK_ERROR", "NVSWITCH_SXID_FATAL", "NVSWITCH_SOE_HALTED")


@refiner_def(name="NvlinkExplainsNccl", author=AUTHOR, priority=RefinerPriority.FINAL + 50)
def nvlink_explains_nccl(context):
    """Xid 74 or a fatal NVSwitch SXid: the NCCL errors on every peer, the NVLink /
    contained CUDA errors and unknown-outcome noise are its consequences (demoted)."""
    s = context.symptoms
    roots = [x for x in NVLINK_ROOTS if x in s]
    if not roots:
        return
    demote_consequences(context, s, lambda sym, info: info.sub_domain == "nccl" or info.outcome == "unknown" or sym in (
        "cudaErrorNvlinkUncorrectable", "cudaErrorContained", "NCCL_UNHANDLED_CUDA_ERROR"),
        "NvlinkExplainsNccl", f"consequence of {roots[0]}", roots, keep=NVLINK_ROOTS)


def _after(e, stop):
    """True when event e provably comes after the stop event."""
    te, ts = _stamped_seconds(e), _stamped_seconds(stop)
    if te is not None and ts is not None:
        return te > ts
    if e.obs_context_id is not None and e.obs_context_id == stop.obs_context_id:
        return (e.line_num or 0) > (stop.line_num or 0)
    return False


@refiner_def(name="StopExplainsTeardown", author=AUTHOR, priority=RefinerPriority.FINAL + 60)
def stop_explains_teardown(context):
    """A cancellation, preemption, requeue or time limit explains what follows it: every
    symptom whose evidence all comes after the stop (the SIGTERM teardown's exceptions,
    NCCL errors, even a GPU lost while shutting down) is demoted.  If then no
    independent fault is left, the teardown noise (watchdog timeouts, NCCL remote
    errors, SIGTERM/SIGKILL, interrupts) is demoted too, so the outcome is `cancelled`
    / `timeout`.  An independent fault before the stop keeps winning on rank."""
    s = context.symptoms
    stops = [x for x in s.symptoms() if x in STOPS]
    if not stops:
        return
    bad = context.event_stream.bad_events()
    stop_events = [e for e in bad if e.symptom in STOPS]
    for sym in s.symptoms():
        if sym in STOPS:
            continue
        evs = [e for e in bad if e.symptom == sym]
        if evs and all(any(_after(e, st) for st in stop_events) for e in evs):
            s.demote(sym, "StopExplainsTeardown", f"logged after {stops[0]}")
    reg = context.registry
    if any(is_primary(x, reg) and x not in STOPS for x in s.symptoms()):
        return
    teardown = [sym for sym in s.symptoms() if sym in STOP_TEARDOWN]
    spared = spare_first(context, s, teardown, stops, "StopExplainsTeardown")
    for sym in teardown:
        if sym not in spared:
            s.demote(sym, "StopExplainsTeardown", f"teardown after {stops[0]}")


@refiner_def(name="CompletedJobHandledErrors", author=AUTHOR, priority=RefinerPriority.FINAL + 70)
def completed_job_handled_errors(context):
    """The scheduler says every task exited 0 (SLURM_COMPLETED): application-level errors
    in the log (a retried download's traceback, an OOM caught by a batch-size finder,
    teardown noise) were handled and did not end the job; they are demoted.  Hardware,
    network and infrastructure evidence stays: a completed job can still have run on a
    failing node."""
    s = context.symptoms
    if "SLURM_COMPLETED" not in s:
        return
    demote_where(s, context.registry, lambda sym, info: info.outcome in ("application", "unknown", "cancelled", "timeout"),
                 "CompletedJobHandledErrors", "the job completed: this error was handled", keep=("SLURM_COMPLETED",))


SPECIFIC_NO_SPACE = ("NCCL_SHM_NO_SPACE", "ENROOT_NO_SPACE", "ENROOT_USERNS_DENIED", "DATALOADER_BUS_ERROR")


@refiner_def(name="SpecificNoSpaceWins", author=AUTHOR, priority=RefinerPriority.SCRUB + 30)
def specific_no_space_wins(context):
    """`No space left on device` inside an NCCL shared-memory, DataLoader shared-memory or
    enroot line (including enroot's user-namespace creation, where ENOSPC means the
    namespace limit) is that component's failure (/dev/shm, the enroot data path), not a full
    checkpoint filesystem: the generic FS_NO_SPACE of that node is demoted."""
    s = context.symptoms
    specific = [x for x in SPECIFIC_NO_SPACE if x in s]
    if specific and "FS_NO_SPACE" in s:
        s.demote("FS_NO_SPACE", "SpecificNoSpaceWins", f"the same ENOSPC is {specific[0]}")


@refiner_def(name="InjectedFaultExplainsJob", author=AUTHOR, priority=RefinerPriority.FINAL + 40)
def injected_fault_explains_job(context):
    """An NVRx-injected fault (a resiliency test) explains the errors it provokes: the
    device assert of GPU_ERROR, the segfault of SEGFAULT, the watchdog timeouts of
    GPU_SLEEP / LOCK_GIL, the signals.  Everything but independent hardware evidence is
    demoted so the test run is never read as a real fault."""
    s = context.symptoms
    injected = [x for x in s.symptoms() if x.startswith("NVRX_INJECTED_")]
    if not injected:
        return
    demote_consequences(context, s, lambda sym, info: info.outcome != "hardware",
                        "InjectedFaultExplainsJob", f"provoked by {injected[0]}", injected, keep=injected)
