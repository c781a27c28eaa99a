"""Shared vocabulary of the corpus's relational rules: which symptoms are victims,
which are primaries, which CUDA errors are sticky, how to order events (in the
report and in time: a consequence cannot precede its cause) and map IPs / GIDs
to hosts.  Pure functions over events and the job; no writes but trace notes.
"""
from __future__ import annotations

import re

from rulekit.plugin import Before, job_window
from rulekit.plugin import order_key as event_order_key

# never the root cause when a primary fault exists (they stay as interesting evidence)
VICTIMS = frozenset({
    "NCCL_WATCHDOG_TIMEOUT", "NCCL_WATCHDOG_STUCK", "NCCL_COMM_ABORTED", "NCCL_REMOTE_ERROR", "NCCL_SYSTEM_ERROR",
    "NCCL_CONNECTION_CLOSED", "NCCL_UNHANDLED_CUDA_ERROR", "NCCL_IB_WR_FLUSH", "NCCL_IB_REMOTE_ACCESS",
    "NCCL_IB_RETRY_EXCEEDED", "NCCL_IB_RNR_RETRY_EXCEEDED", "NCCL_IB_COMPLETION_ERROR",
    "XID-43-RESETCHANNEL_VERIF", "XID-45-PREEMPTIVE_REMOVAL", "XID-154-RECOVERY_ACTION_CHANGED",
    "PROCESS_SIGABRT", "PROCESS_SIGKILL", "PROCESS_EXIT_NONZERO", "CPP_TERMINATE", "PYTHON_DISTRIBUTED_ERROR",
    "NVML_UNKNOWN_ERROR", "RENDEZVOUS_CONNECT_FAILED", "NCCL_ASYNC_ERROR_TEARDOWN", "SLURM_TASK_EXIT",
    "K8S_RESTART_CONSEQUENCE", "RENDEZVOUS_TIMEOUT", "PYTHON_CUDA_ERROR", "GLOO_COLLECTIVE_TIMEOUT",
    "C10D_STORE_TIMEOUT",
})
PRIMARY_MIN_RANK = 600

# CUDA errors that poison every later call in the process
STICKY_CUDA = frozenset({
    "cudaErrorIllegalAddress", "cudaErrorAssert", "cudaErrorIllegalInstruction", "cudaErrorLaunchFailure",
    "cudaErrorECCUncorrectable", "cudaErrorContained", "cudaErrorNvlinkUncorrectable", "cudaErrorUnknown",
    "cudaErrorHardwareStackError", "cudaErrorInvalidAddressSpace", "cudaErrorInvalidPc", "cudaErrorTensorMemoryLeak",
    "NCCL_UNHANDLED_CUDA_ERROR",
})

# cancellations / limits: the job was stopped from outside
STOPS = frozenset({
    "SLURM_CANCELLED", "SLURM_TIMEOUT", "SLURM_DEADLINE", "SLURM_PREEMPTED", "SLURM_REQUEUED", "EXECUTION_CANCELLED",
    "K8S_PREEMPTED", "KUEUE_EVICTED", "K8S_DEADLINE_EXCEEDED",
})
# victims that report a device's state, not a process's end: a stop (time limit, cancel)
# kills processes, it does not make NVML lose a GPU, so they are never its teardown
DEVICE_STATE_VICTIMS = frozenset({"NVML_UNKNOWN_ERROR", "XID-154-RECOVERY_ACTION_CHANGED"})
# what a stop leaves behind in the logs
STOP_TEARDOWN = (VICTIMS - DEVICE_STATE_VICTIMS) | {"PROCESS_SIGTERM", "PYTHON_INTERRUPTED", "SLURM_FAILED"}

# decoded fatal NVLink5 symptoms (HandleXidBurstEvents) and what the spec's FINAL
# refiners do with them: Xid149AndNvlinkFiltering demotes every job-wide symptom that is
# not an independent hardware fault; Gb200PriorityRootCause demotes the GPU-local Xids
# the NVLink5 error causes on its own node (REFERENCE 1.2: "may cause 48/94/95/45 locally")
NVLINK5_DECODED = ("XID-149-NVLINK_SIGNAL_INTEGRITY", "XID-149-NVLINK_NETIR_FATAL", "XID-144-NVLINK_SAW_FATAL",
                   "XID-145-NVLINK_RLW_FATAL", "XID-146-NVLINK_TLW_FATAL", "XID-147-NVLINK_TREX_FATAL",
                   "XID-148-NVLINK_NVLPW_CTRL_FATAL", "XID-150-NVLINK_MSE_FATAL")
NVLINK5_LOCAL_CONSEQUENCES = ("XID-43-", "XID-45-", "XID-48-", "XID-94-", "XID-95-", "XID-154-", "XID-74-")


def nvlink5_filtering_demotes(info) -> bool:
    """What Xid149AndNvlinkFiltering demotes once a decoded NVLink5 fault remains."""
    return info.outcome != "hardware" or info.sub_domain == "nvlink"


NETWORK_HOST_EVIDENCE = ("IB_LINK_DOWN", "IB_CABLE_ERROR", "HCA_FATAL", "NCCL_IB_ASYNC_PORT_ERROR",
                         "NCCL_IB_ASYNC_CATASTROPHIC", "NET_TX_TIMEOUT")

_IPV4_GID = re.compile(r"(?:::ffff:|^)(\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3})$")


def is_primary(symptom: str | None, registry) -> bool:
    if not symptom or symptom in VICTIMS:
        return False
    return registry.rank(symptom) >= PRIMARY_MIN_RANK


def order_key(e) -> tuple:
    """The engine's one order of evidence (rulekit.plugin.order_key): timestamp (own or
    carried from the file's last stamped line), kernel uptime, rank, line, node, text,
    id; never the file name or read order."""
    return event_order_key(e)


def rank_field(e) -> int | None:
    for k in ("rank", "pg_rank", "comm_rank"):
        v = e.fields.get(k)
        if v is None or v == "":
            continue
        try:
            return int(v)
        except (TypeError, ValueError):
            continue
    return None


def ipv4_of(text: str | None) -> str | None:
    """The IPv4 address of an IPv4-mapped GID (`::ffff:10.0.0.3`) or a bare IPv4."""
    if not text:
        return None
    t = text.strip()
    while t.startswith(":::"):
        t = t[1:]
    m = _IPV4_GID.search(t)
    return m.group(1) if m else None


def normalize_gid(text: str | None) -> str | None:
    """`remoteGids` is printed as `remoteGids<gid>` or `remoteGids:<gid>`: undo the glued colon."""
    if not text:
        return None
    t = text.strip()
    if t.startswith(":::"):
        return t[1:]
    if t.startswith(":") and not t.startswith("::"):
        return t[1:]
    return t


def ip_host_map(stream, canonical=lambda n: n) -> dict[str, set[str]]:
    """IP -> hostnames that printed it as their own local GID / OOB address."""
    out: dict[str, set[str]] = {}
    for e in stream.data_events():
        kind = e.fields.get("kind")
        if kind not in ("gid_host", "host_ip"):
            continue
        ip, host = e.fields.get("ip"), e.fields.get("host")
        if ip and host:
            out.setdefault(ip, set()).add(canonical(host))
    return out


# ---- order in time: a consequence cannot precede its cause ------------------------------------------


def lead_text(gap: float) -> str:
    """How far ahead an event provably was (`rulekit.plugin.lead`), for a trace reason."""
    if gap <= 0:
        return "earlier in the same log"
    return f"{gap:.3f} s" if gap < 1 else f"{gap:.0f} s"


def before_all(context, events):
    """`rulekit.plugin.Before` over `events` with the job's clock-skew tolerance and time
    window: `before_all(context, causes)(e)` is by how many seconds `e` provably came
    before every one of them, else None."""
    return Before(events, context.clock_skew, job_window(context.job))


# causes whose lines are stamped by what the rank was still doing when the others gave up
# waiting (the laggard's last busy line, the data preparation's progress), not by when
# the wait began: a victim stamped before them can still be theirs
STAMPED_LATE_CAUSES = frozenset({"HANG_LAGGARD_WORKLOAD", "HANG_LAGGARD_RANK", "DATA_PREP_OUTLIVED_TIMEOUT"})


def spare_first(context, symptom_set, candidates, causes, rule: str, node=None) -> set[str]:
    """Of `candidates` (symptoms a rule is about to demote as consequences of the
    symptoms `causes`), those whose every bad event (on `node`, or anywhere) provably
    came before every bad event of the causes there (`before_all`: the job's clock-skew
    tolerance and time window): a consequence cannot precede its cause.  Each is noted in the trace on `symptom_set` (`keep_symptom`, with the lead
    in seconds) and returned for the rule to leave alone."""
    stream = context.event_stream
    causes = [c for c in causes if c and c not in STAMPED_LATE_CAUSES]
    cause_events = [e for c in causes for e in stream.query("bad_node", symptom=c, node=node)]
    if not cause_events:
        return set()
    before = before_all(context, cause_events)
    spared = set()
    for sym in candidates:
        evs = stream.query("bad_node", symptom=sym, node=node)
        gaps = [before(e) for e in evs]
        if evs and all(g is not None for g in gaps):
            spared.add(sym)
            symptom_set.note(sym, rule, f"came {lead_text(min(gaps))} before {causes[0]}: not its consequence")
    return spared


def demote_consequences(context, symptom_set, predicate, rule: str, reason: str, causes, keep=()) -> list[str]:
    """`demote_where` for the consequences of `causes`: every active symptom of
    `symptom_set` not in `keep` for which `predicate(symptom, info)` holds is demoted,
    except those that came first (`spare_first`)."""
    reg = context.registry
    kept = set(keep)
    wanted = [s for s in symptom_set.symptoms() if s not in kept and predicate(s, reg.info(s))]
    spared = spare_first(context, symptom_set, wanted, causes, rule)
    gone = [s for s in wanted if s not in spared]
    for s in gone:
        symptom_set.demote(s, rule, reason)
    return gone
