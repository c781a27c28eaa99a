"""Filters that encode the corpus's relational reasoning over events.

In the order they run (the file is sorted by it; the number is the offset in the
stratum, and filters of other files interleave by that number):
- XidCausedByPrevious (EARLY+20): Xid 43/45 lines that name their cause add it;
- ResolveRankFields (EARLY+50): events with no node move to the rank their text names,
  or to the host a pasted syslog line names;
- K8sDescribePlacement (EARLY+55): node-less Kubernetes events move to the node of the
  `kubectl describe pod` block (`Node:  <node>/<ip>`) they appear in;
- EnrootImportNoSpace (EARLY+56): `No space left on device` after an enroot import step
  in the same log is enroot's data / temp path filling up (ENROOT_NO_SPACE);
- PythonChainFirstCause (EARLY+60): drops the partial events of chained tracebacks;
- BareExceptionLineCovered (EARLY+61): a bare final-exception line is dropped when the
  traceback it ends was captured;
- StickyCudaAfterFirst (MID+10): keeps the first sticky CUDA error of a process;
- XidUserFaultRepeats (MID+20): Xid 13/31 recurring on the same GPU become hardware;
- AerBeforeGpuFault (MID+25): an application-class Xid on a GPU whose PCIe link had just
  reported an uncorrectable AER error is that error's consequence;
- IbStatus12PeerBlame (MID+30): IB retry-exceeded blame moves to the remote node that
  several peers name (certain with host-side link evidence); one report names the
  peer in a `bad_peers` event;
- PeerNamedByReports (MID+35): a closed-connection report naming its far end adds a
  `bad_peers` event on that peer;
- TracebackFanOut (MID+40): identical tracebacks on many ranks are one failure;
- TransientStorageRecovered (STANDARD+10): storage outages that recovered are demoted;
- PlacedEvidenceWins (STANDARD+20): node-less copies of a placed symptom are demoted;
- DemoteVictimsWhenPrimary (LATE+10): victims become interesting once a primary exists.

Each filter runs as the stream's current rule: its changes are recorded under its
name without repeating it (`stream.demote(events, reason=...)`).
Filters only move events between bad and interesting, or add derived events; they
never decide the outcome.
"""
import re
from datetime import datetime

from rulekit.plugin import EventSpec, FilterPriority, Selection, filter_def, register_symptom

from .common.relations import (
    STAMPED_LATE_CAUSES,
    NETWORK_HOST_EVIDENCE, NVLINK5_DECODED, NVLINK5_LOCAL_CONSEQUENCES, STICKY_CUDA, VICTIMS, before_all, ip_host_map,
    is_primary, lead_text, nvlink5_filtering_demotes, order_key, rank_field,
)

AUTHOR = "rulekit corpus"

register_symptom("GPU_XID_REPEATED_SAME_GPU", outcome="hardware", sub_domain="gpu", rank=905, blame="node", action="inspect",
                 docs="Xid 13 (same GPC/TPC) or Xid 31 recurred on the same GPU in separate bursts: the GPU, not the "
                      "code, is suspect (NVSentinel rule); a DCGM diag is due.")
register_symptom("IB_REMOTE_PEER_SUSPECT", outcome="network", sub_domain="infiniband", rank=300, blame="peer",
                 docs="The one remote node a single IB status-12 report names, with no host-side link evidence on "
                      "either end: a lead (interesting), never the root. One report cannot tell the reporter's end "
                      "(GID index, its own port) from the peer's; the status-12 event stays on the reporter.")


# ---- EARLY ---------------------------------------------------------------------------------

_CAUSED_BY = re.compile(r"caused by previous Xid (\d+)")


def _catalog_name(registry, xid):
    """The Xid catalog's symptom for number `xid` (not a decoded NVLink5 variant)."""
    for name in registry.names():
        if name.startswith(f"XID-{xid}-"):
            sym = registry.symptom(name)
            if sym is not None and sym.span is not None and sym.span.file.rsplit("/", 1)[-1].startswith("xid_catalog."):
                return name
    return None


@filter_def(name="XidCausedByPrevious", author=AUTHOR, priority=FilterPriority.EARLY + 20)
def xid_caused_by_previous(context):
    """Newer drivers append `caused by previous Xid N` to Xid 43/45 lines: the cleanup
    names its cause.  When no event of Xid N exists on that node (its line was lost or
    rotated), the cause is added as a bad event derived from the 43/45 line."""
    stream, reg = context.event_stream, context.registry
    events = stream.node_events()
    have = {(e.node, e.symptom.split("-")[1]) for e in events if e.symptom and e.symptom.startswith("XID-")}
    for e in events:
        if not e.symptom or not e.symptom.startswith(("XID-43-", "XID-45-")):
            continue
        m = _CAUSED_BY.search(e.fields.get("body") or e.datum or "")
        if not m or (e.node, m.group(1)) in have:
            continue
        name = _catalog_name(reg, m.group(1))
        if name is None:
            continue
        have.add((e.node, m.group(1)))
        stream.add(EventSpec(type="bad_node", symptom=name, node=e.node,
                             fields={"pci": e.fields.get("pci"), "derived_from": e.symptom}),
                   cause=e, reason=f"{e.symptom} says it was caused by Xid {m.group(1)}")


_SYSLOG_HOST = re.compile(
    r"(?:^|\s)(?:[A-Z][a-z]{2} +\d{1,2} \d\d:\d\d:\d\d|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\S*) "
    r"(?P<host>[A-Za-z][\w.-]*) (?:kernel|slurmd|slurmstepd|nvidia-\w+|nv-\w+|systemd)(?:\[\d+\])?:")


@filter_def(name="ResolveRankFields", author=AUTHOR, priority=FilterPriority.EARLY + 50)
def resolve_rank_fields(context):
    """Events that no node was found for: an application-log line naming a rank in its
    text (`[Rank 3]` inside a ProcessGroupNCCL line, a ChildFailedError rank) moves to
    that rank's node; a syslog-shaped line pasted into an application log
    (`Aug 11 03:14:22 node0003 kernel: ...`) moves to the host it names when that host
    is one of the job's nodes (or the job lists none)."""
    stream, job = context.event_stream, context.job
    nodes = set(job.nodes)
    for e in stream.node_events():
        if e.node is not None:
            continue
        rank = rank_field(e)
        node = job.rank_to_node(rank) if rank is not None else None
        why = f"rank {rank} runs on {node}"
        if not node:
            m = _SYSLOG_HOST.search((e.datum or "")[:200])
            host = m.group("host").split(".", 1)[0] if m else None
            if host and (not nodes or host in nodes):
                node, why = host, f"the syslog line names host {host}"
        if not node:
            continue
        stream.move_to_node(e, node, reason=why)


K8S_PREFIXES = ("K8S_", "KUEUE_")


def _job_node(name, nodes):
    """`name` (or its short host name) as one of the job's nodes; `name` itself when the
    job lists no nodes; None when the job's nodes do not include it."""
    if not nodes:
        return name
    for cand in (name, name.split(".", 1)[0]):
        if cand in nodes:
            return cand
    return None


@filter_def(name="K8sDescribePlacement", author=AUTHOR, priority=FilterPriority.EARLY + 55)
def k8s_describe_placement(context):
    """A pasted `kubectl describe pod` names the pod's node in its header (`Node:
    gpu-node-17/10.0.0.17`, K8sDescribeNode data); the pod's Kubernetes events below it
    (Reason: OOMKilled, Warning Evicted, UnexpectedAdmissionError, ...) have no node of
    their own.  Each node-less Kubernetes / Kueue event moves to the node of the nearest
    `Node:` line above it in the same observation, when that node is one of the job's
    nodes (or the job lists none).  Other evidence is left alone: a describe header says
    nothing about logs pasted next to it."""
    stream = context.event_stream
    nodes = set(context.job.nodes)
    marks = {}
    for d in stream.data_events():
        if d.fields.get("kind") == "k8s_pod_node" and d.line_num is not None and d.fields.get("node"):
            marks.setdefault((d.obs_context_id, d.label), []).append((d.line_num, d.fields["node"]))
    if not marks:
        return
    for e in stream.node_events():
        if e.node is not None or e.line_num is None or not (e.symptom or "").startswith(K8S_PREFIXES):
            continue
        above = [m for m in marks.get((e.obs_context_id, e.label), ()) if m[0] <= e.line_num]
        if not above:
            continue
        line, name = max(above)
        node = _job_node(name, nodes)
        if node is None:
            continue
        stream.move_to_node(e, node, reason=f"the pod described at line {line} ran on {node}")


@filter_def(name="EnrootImportNoSpace", author=AUTHOR, priority=FilterPriority.EARLY + 56,
            symptoms=("ENROOT_NO_SPACE",))
def enroot_import_no_space(context):
    """enroot's import prints `[INFO] Fetching image` / `Extracting image content...` and
    then the raw errors of its tools (`tar: ...: Cannot write: No space left on device`,
    `mksquashfs: write failed`), which the generic ENOSPC rule reads as FS_NO_SPACE.  An
    FS_NO_SPACE event after an enroot import step (EnrootImportStep data) in the same
    observation is enroot's data / temp path filling up: one ENROOT_NO_SPACE event per
    node and observation is added, caused by the first such line, and those generic
    events are demoted.  ENOSPC before the first import step is left alone."""
    stream = context.event_stream
    steps = {}
    for d in stream.data_events():
        if d.fields.get("kind") == "enroot_import" and d.line_num is not None:
            key = (d.obs_context_id, d.label)
            steps[key] = min(steps.get(key, d.line_num), d.line_num)
    if not steps:
        return
    seen, generic = set(), []
    for e in stream.bad_events():
        if e.symptom != "FS_NO_SPACE" or e.line_num is None:
            continue
        key = (e.obs_context_id, e.label)
        if key not in steps or e.line_num < steps[key]:
            continue
        generic.append(e)
        if (key, e.node) in seen:
            continue
        seen.add((key, e.node))
        stream.add(EventSpec(type="bad_node", symptom="ENROOT_NO_SPACE", node=e.node, fields={"via": "enroot import"},
                             line_num=e.line_num, timestamp=e.timestamp, datum=e.datum),
                   cause=e,
                   reason=f"ENOSPC after enroot's import step at line {steps[key]}")
    if generic:
        stream.demote(generic, reason="enroot's import ran out of space")


@filter_def(name="PythonChainFirstCause", author=AUTHOR, priority=FilterPriority.EARLY + 60)
def python_chain_first_cause(context):
    """A chained traceback also triggers an accumulator at each inner `Traceback` line;
    those partial events repeat the tail of a longer chain seen on the same node and
    rank just before.  Keep the longest chain's event (its first exception is the
    nearer cause) and discard the partial ones."""
    stream = context.event_stream
    evs = [e for e in stream.node_events() if e.rule == "PythonTraceback" and e.fields.get("chain")]
    groups = {}
    for e in evs:
        groups.setdefault((e.node, e.fields.get("rank"), e.obs_context_id), []).append(e)
    for group in groups.values():
        group.sort(key=lambda e: (e.line_num or 0, e.id))
        for i, e in enumerate(group):
            chain = e.fields["chain"].split(" <- ")
            for longer in group[:i]:
                lchain = longer.fields["chain"].split(" <- ")
                if len(lchain) > len(chain) and lchain[-len(chain):] == chain:
                    stream.discard([e], reason=f"part of the chain {longer.fields['chain']} (line {longer.line_num})")
                    break


@filter_def(name="BareExceptionLineCovered", author=AUTHOR, priority=FilterPriority.EARLY + 61)
def bare_exception_line_covered(context):
    """BareOsErrorLine reads a lone `FileNotFoundError: [Errno 2] ...` line as the end of
    an uncaptured traceback.  When a PythonTraceback event of the same observation
    covers that line (it starts at or before it), the line event says nothing new and
    would escape TracebackFanOut: it is discarded."""
    stream = context.event_stream
    bare = [e for e in stream.node_events() if e.rule == "BareOsErrorLine"]
    if not bare:
        return
    starts = {}
    for t in stream.node_events():
        if t.rule == "PythonTraceback" and t.line_num is not None:
            key = (t.obs_context_id, t.label)
            starts[key] = min(starts.get(key, t.line_num), t.line_num)
    covered = [e for e in bare if (e.obs_context_id, e.label) in starts
               and e.line_num is not None and e.line_num >= starts[(e.obs_context_id, e.label)]]
    if covered:
        stream.discard(covered, reason="the captured traceback already says it")


# ---- MID -----------------------------------------------------------------------------------

@filter_def(name="StickyCudaAfterFirst", author=AUTHOR, priority=FilterPriority.MID + 10,
            symptoms=tuple(sorted(STICKY_CUDA)), selects=Selection.of("bad_node", sorted(STICKY_CUDA)))
def sticky_cuda_after_first(context):
    """Sticky CUDA errors (700/710/715/716/719/214/226/999) poison every later call of the
    process: per node and rank, the first sticky error is the cause; later, different
    sticky errors are its teardown noise (demoted).  NCCL_UNHANDLED_CUDA_ERROR is NCCL's
    wrapper around a CUDA error (`Cuda failure 999 'unknown error'`, `unhandled cuda
    error`): it never demotes the specific CUDA error it wraps, which is the cause
    when one is known, and it is never demoted itself (it ranks below them)."""
    stream = context.event_stream
    groups = {}
    for e in context.selected():
        groups.setdefault((e.node, e.fields.get("rank")), []).append(e)
    for group in groups.values():
        group.sort(key=order_key)
        specific = [e for e in group if e.symptom != "NCCL_UNHANDLED_CUDA_ERROR"]
        if not specific:
            continue
        first_sym = specific[0].symptom
        later = [e for e in specific[1:] if e.symptom != first_sym]
        if later:
            stream.demote(later, reason=f"sticky error after {first_sym}")


_GPC_TPC = re.compile(r"GPC (\d+), TPC (\d+)")
_BURST_SECONDS = {"13": 15.0, "31": 180.0}


def _seconds(e):
    if e.fields.get("uptime") is not None:
        try:
            return float(e.fields["uptime"])
        except (TypeError, ValueError):
            pass
    if e.timestamp:
        try:
            return datetime.fromisoformat(e.timestamp).timestamp()
        except ValueError:
            return None
    return None


@filter_def(name="XidUserFaultRepeats", author=AUTHOR, priority=FilterPriority.MID + 20,
            symptoms=("GPU_XID_REPEATED_SAME_GPU",))
def xid_user_fault_repeats(context):
    """Xid 13 / 31 point to user code unless they repeat on the same GPU: two or more
    separate bursts (13: 15 s apart and the same GPC+TPC; 31: 3 min apart) on one GPU,
    and on no other GPU of the job, add GPU_XID_REPEATED_SAME_GPU (hardware) on that
    node.  The same Xid on several GPUs (one fault fanned out, or a buggy job that
    crashes again after each restart) is the workload."""
    stream = context.event_stream
    groups = {}
    for e in stream.node_events():
        if not e.symptom or not e.symptom.startswith(("XID-13-", "XID-31-")):
            continue
        xid = e.symptom.split("-")[1]
        where = ""
        if xid == "13":
            m = _GPC_TPC.search(e.fields.get("body") or "")
            where = f"GPC {m.group(1)}, TPC {m.group(2)}" if m else ""
        groups.setdefault((e.node, e.fields.get("pci"), xid, where), []).append(e)
    gpus_with = {}
    for (node, pci, xid, _where) in groups:
        gpus_with.setdefault(xid, set()).add((node, pci))
    for (node, pci, xid, where), group in groups.items():
        if node is None or pci is None:
            continue
        if len(gpus_with[xid]) > 1:
            continue  # the same Xid on several GPUs: the workload, not one GPU
        group.sort(key=order_key)
        bursts, last_t, last_line = 0, None, None
        for e in group:
            t = _seconds(e)
            if last_t is None and last_line is None:
                bursts = 1
            elif t is not None and last_t is not None:
                bursts += 1 if t - last_t > _BURST_SECONDS[xid] else 0
            else:  # no clock: lines far apart are separate bursts
                bursts += 1 if (e.line_num or 0) - (last_line or 0) > 20 else 0
            last_t, last_line = t, e.line_num
        if bursts >= 2:
            stream.add(EventSpec(type="bad_node", symptom="GPU_XID_REPEATED_SAME_GPU", node=node,
                                 fields={"pci": pci, "xid": xid, "bursts": bursts, "where": where}),
                       cause=group[0],
                       reason=f"Xid {xid} in {bursts} bursts on GPU {pci} {where}".strip())


_BDF = re.compile(r"^(?:[0-9a-fA-F]{4,8}:)?([0-9a-fA-F]{2}):([0-9a-fA-F]{2})")


def _bus_dev(pci):
    """`0000:63:00.0` / `0000:63:00` / `00000000:63:00.0` -> ("63", "00"); None otherwise."""
    m = _BDF.match(str(pci or ""))
    return (m.group(1).lower(), m.group(2).lower()) if m else None


_BAD_XIDS = Selection.of("bad_node", ["XID-*"])
_BAD_AER = Selection.of("bad_node", ["PCIE_AER_FATAL", "PCIE_AER_NONFATAL"])


@filter_def(name="AerBeforeGpuFault", author=AUTHOR, priority=FilterPriority.MID + 25)
def aer_before_gpu_fault(context):
    """An uncorrectable PCIe AER error (PCIE_AER_FATAL / PCIE_AER_NONFATAL) naming a GPU's
    bus address, followed on that node by an Xid of that GPU whose outcome is
    `application` (31 MMU fault, 13 graphics exception, ...): the GPU lost its link
    (completion timeouts, an unplugged eGPU, a failing riser) and the Xid is the
    consequence, not user code.  Those Xid events are demoted; the AER event stays."""
    stream, reg = context.event_stream, context.registry
    aer = stream.select(_BAD_AER)
    if not aer:
        return
    aer_by_node = {}  # node -> [(event, the bus/device addresses it names)], in event order
    for a in aer:
        aer_by_node.setdefault(a.node, []).append((a, (_bus_dev(a.fields.get("src")), _bus_dev(a.fields.get("bdf")))))
    for x in stream.select(_BAD_XIDS):  # the bad Xid events, in event order (from the symptom index)
        if x.node not in aer_by_node or reg.info(x.symptom).outcome != "application":
            continue
        gpu = _bus_dev(x.fields.get("pci"))
        if gpu is None:
            continue
        for a, named in aer_by_node[x.node]:
            if gpu not in named:
                continue
            if a.obs_context_id == x.obs_context_id and order_key(a) > order_key(x):
                continue
            stream.demote([x], reason=f"the GPU's PCIe link reported {a.symptom} first (line {a.line_num})")
            break


@filter_def(name="IbStatus12PeerBlame", author=AUTHOR, priority=FilterPriority.MID + 30,
            symptoms=("IB_REMOTE_PEER_UNREACHABLE", "NCCL_IB_RETRY_EXCEEDED"))
def ib_status12_peer_blame(context):
    """IB status 12 (retry exceeded) is reported by the survivors about the peer. When
    two or more nodes name the same remote node, or one does and that node shows
    host-side link / HCA trouble, blame the remote node (IB_REMOTE_PEER_UNREACHABLE,
    `certain` when host evidence exists) and demote the reporters' events.  If the
    remote node had an independent non-network fault, the status-12 events are its
    victims and are demoted without network blame.

    A single reporter naming a remote node that shows no host-side evidence is not
    enough to move blame: the reporter's own end (GID index, its port) fails the same
    way.  Its NCCL_IB_RETRY_EXCEEDED stays bad on the reporter (network outcome) and
    the remote node gets an interesting IB_REMOTE_PEER_SUSPECT lead.  A peer address
    that maps to no node of the job (no `Bootstrap : Using` line for it) leaves the
    report as it is."""
    stream, job, reg = context.event_stream, context.job, context.registry
    reports = [e for e in stream.bad_events() if e.symptom == "NCCL_IB_RETRY_EXCEEDED"]
    if not reports:
        return
    ipmap = ip_host_map(stream)
    nodes = set(job.nodes)
    by_remote = {}
    for e in reports:
        peer = e.fields.get("peer") or ""
        cands = ipmap.get(peer, set()) or ({peer} if peer in nodes else set())
        if len(cands) != 1:
            continue
        remote = next(iter(cands))
        if nodes and remote not in nodes:
            continue
        by_remote.setdefault(remote, []).append(e)
    bad = stream.bad_events()
    for remote, evs in by_remote.items():
        reporters = sorted({e.node for e in evs if e.node and e.node != remote})
        on_remote = [e for e in bad if e.node == remote]
        host_net = [e for e in on_remote if e.symptom in NETWORK_HOST_EVIDENCE]
        other_primary = [e for e in on_remote if is_primary(e.symptom, reg)
                         and reg.info(e.symptom).outcome != "network"]
        if other_primary:
            before = before_all(context, other_primary)
            first = [e for e in evs if before(e) is not None]  # reports before the peer's fault are not its victims
            if len(first) < len(evs):
                stream.demote([e for e in evs if e not in first],
                              reason=f"peer {remote} failed first ({other_primary[0].symptom})")
                if first:
                    stream.note(first, reason=f"reported before {remote}'s {other_primary[0].symptom}: not its victim")
                continue
            stream.note(evs, reason=f"reported before {remote}'s {other_primary[0].symptom}: not its victim")
        if len(reporters) >= 2 or (reporters and host_net):
            stream.add(EventSpec(type="bad_node", symptom="IB_REMOTE_PEER_UNREACHABLE", node=remote,
                                 fields={"peer_ip": evs[0].fields.get("peer"), "reporters": reporters,
                                         "certain": bool(host_net)}),
                       cause=evs[0],
                       reason=f"{len(reporters)} node(s) got retry-exceeded from {remote}"
                              + (" and it logged link/HCA trouble" if host_net else ""))
            stream.demote(evs, reason=f"blame moved to the remote node {remote}")
        elif reporters:
            # the spec's peer-scoped event: evidence about `remote` reported by another node
            stream.add(EventSpec(type="bad_peers", symptom="IB_REMOTE_PEER_SUSPECT", node=remote,
                                 fields={"peer_ip": evs[0].fields.get("peer"), "reporters": reporters,
                                         "reporter": reporters[0]}),
                       cause=evs[0],
                       reason=f"only {reporters[0]} got retry-exceeded from {remote}, and neither end logged "
                              "link/HCA trouble: the report stays on the reporter")


register_symptom("NCCL_PEER_SUSPECT", outcome="network", sub_domain="nccl", rank=300, blame="peer",
                 docs="A node other nodes name as the far end of a closed / reset NCCL or gloo connection "
                      "(`Connection closed by remote peer node0007<45678>`). Carried by `bad_peers` events only: "
                      "a suspected bad node when nothing certain explains a network or unknown outcome, never "
                      "the root.")


@filter_def(name="PeerNamedByReports", author=AUTHOR, priority=FilterPriority.MID + 35,
            symptoms=("NCCL_PEER_SUSPECT",))
def peer_named_by_reports(context):
    """A closed / reset connection report that names its far end (a host of the job, or
    an address a host printed as its own) is evidence about that peer, not about the
    reporter: add a `bad_peers` event on the peer (one per reporter), so the report can
    list it as a *suspected* bad node (the reporter's own symptom blames nobody)."""
    stream, job = context.event_stream, context.job
    nodes = set(job.nodes)
    ipmap = None
    seen = set()
    for e in sorted(stream.query(["bad_node", "interesting_node"], symptom="NCCL_CONNECTION_CLOSED"), key=order_key):
        peer = (e.fields.get("peer") or "").strip("[]")
        if not peer:
            continue
        if ipmap is None:
            ipmap = ip_host_map(stream)
        cands = ipmap.get(peer, set()) or ({peer} if peer in nodes else set())
        if len(cands) != 1:
            continue
        remote = next(iter(cands))
        if remote == e.node or (nodes and remote not in nodes) or (remote, e.node) in seen:
            continue
        seen.add((remote, e.node))
        stream.add(EventSpec(type="bad_peers", symptom="NCCL_PEER_SUSPECT", node=remote,
                             fields={"peer": peer, "reporter": e.node}),
                   cause=e,
                   reason=f"{e.node or 'a rank'} lost its connection to {remote}")


_DIGITS = re.compile(r"\d+")


@filter_def(name="TracebackFanOut", author=AUTHOR, priority=FilterPriority.MID + 40)
def traceback_fan_out(context):
    """Identical tracebacks on many ranks are one failure fanned out (every rank ran the
    same code on the same config): keep the earliest one as the bad event and demote the
    copies (same exception type, same message up to numbers) to interesting."""
    stream = context.event_stream
    groups = {}
    for e in stream.bad_events():
        if e.rule != "PythonTraceback":
            continue
        key = (e.symptom, e.fields.get("exc_type"), _DIGITS.sub("#", e.fields.get("exc_msg") or ""))
        groups.setdefault(key, []).append(e)
    for group in groups.values():
        if len(group) < 2:
            continue
        group.sort(key=lambda e: (order_key(e)[:2], rank_field(e) if rank_field(e) is not None else 1 << 30,
                                  order_key(e)[2:]))
        first = group[0]
        copies = [e for e in group[1:] if e.node != first.node or rank_field(e) != rank_field(first)]
        if copies:
            stream.demote(copies,
                          reason=f"same {first.fields.get('exc_type')} as rank {rank_field(first)} on {first.node}")


# ---- STANDARD ----------------------------------------------------------------------------------

@filter_def(name="TransientStorageRecovered", author=AUTHOR, priority=FilterPriority.STANDARD + 10,
            symptoms=("NFS_NOT_RESPONDING", "LUSTRE_CONNECTION_LOST"),
            selects=Selection.of("bad_node", ["NFS_NOT_RESPONDING", "LUSTRE_CONNECTION_LOST"]))
def transient_storage_recovered(context):
    """`nfs: server X not responding` followed on the same node by `nfs: server X OK`
    (Lustre: `Connection restored to X`) was a transient outage: demote it."""
    stream = context.event_stream
    recovered = {}
    for d in stream.data_events():
        if d.fields.get("kind") == "storage_recovered":
            recovered.setdefault((d.node, d.fields.get("server")), []).append(d)
    out = []
    for e in context.selected():
        rec = recovered.get((e.node, e.fields.get("server")), [])
        if any(order_key(r) > order_key(e) for r in rec):
            out.append(e)
    if out:
        stream.demote(out, reason="the server came back")


@filter_def(name="PlacedEvidenceWins", author=AUTHOR, priority=FilterPriority.STANDARD + 20)
def placed_evidence_wins(context):
    """A symptom seen both on a known node and on lines that name no node (a Slurm
    banner, an unprefixed launcher line) is the same failure: the node-less copies
    become interesting so the root cause carries its node."""
    stream = context.event_stream
    bad = stream.bad_events()
    placed = {e.symptom for e in bad if e.node is not None and e.symptom}
    loose = [e for e in bad if e.node is None and e.symptom in placed]
    if loose:
        stream.demote(loose, reason="the same symptom is placed on a node elsewhere")


# ---- LATE ------------------------------------------------------------------------------------------

@filter_def(name="DemoteVictimsWhenPrimary", author=AUTHOR, priority=FilterPriority.LATE + 10,
            symptoms=tuple(sorted(VICTIMS)))
def demote_victims_when_primary(context):
    """Watchdog timeouts, ncclRemoteError / system errors, IB status 5 / 12 reports,
    Xid 43/45/154, signals, launcher and teardown noise are never the root cause when
    a primary fault (rank >= 600, not itself a victim) exists anywhere in the job:
    they become interesting evidence, so only culprit nodes stay bad.

    When the primary is a decoded fatal NVLink5 error, the attribution spec's FINAL
    refiners do this work (Xid149AndNvlinkFiltering job-wide, Gb200PriorityRootCause on
    the NVLink5 node): the victims they cover reach refinement as bad-node symptoms and
    only the rest are demoted here."""
    stream, reg = context.event_stream, context.registry
    bad = stream.bad_events()
    primaries = [e for e in bad if is_primary(e.symptom, reg)]
    if not primaries:
        return
    top = max(primaries, key=lambda e: reg.rank(e.symptom))
    victims = [e for e in bad if e.symptom in VICTIMS]
    nvlink5_nodes = {e.node for e in primaries if e.symptom in NVLINK5_DECODED}
    if nvlink5_nodes:
        victims = [e for e in victims if not nvlink5_filtering_demotes(reg.info(e.symptom))
                   and not (e.node in nvlink5_nodes and e.symptom.startswith(NVLINK5_LOCAL_CONSEQUENCES))]
    if not victims:
        return
    # a victim that provably came before every primary fault is not their victim: it stays bad
    # (not provable against a cause stamped by what the late rank was still doing)
    late = any(e.symptom in STAMPED_LATE_CAUSES for e in primaries)
    before = (lambda e: None) if late else before_all(context, primaries)
    first = min(primaries, key=order_key)
    demoted = []
    for v in victims:
        gap = before(v)
        if gap is None:
            demoted.append(v)
        else:
            stream.note([v], reason=f"came {lead_text(gap)} before the first primary fault ({first.symptom} on "
                                    f"{first.node}): not its victim")
    if demoted:
        stream.demote(demoted, reason=f"victim of the primary fault {top.symptom} on {top.node}")
