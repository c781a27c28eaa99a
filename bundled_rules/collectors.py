"""Collectors: `bad_pairs` (NCCL "Got completion from peer" network pairs, exactly as
the spec's Phase 4 paragraph says) and `job_parameters` (component versions and
parallelism seen in the logs).

Collectors only read the event stream and return JSON-able data; they never add
events, change bad nodes or the job's node list.
"""
from rulekit.linectx import host_of, rank_of
from rulekit.plugin import collector_def

from .common.relations import gid_host_map, ipv4_of, normalize_gid

AUTHOR = "rulekit corpus"
COMPLETION_RULE = "NcclIbCompletion"


def _declared_node(e, nodes):
    """The producer-declared node of the event's observation (syslog/<node>.log, an
    observation record's node), when the job lists it; None for parser fallbacks."""
    declared = e.fields.get("declared_node")
    if declared and declared in nodes:
        return declared
    if e.node and e.node in nodes and ((e.label and e.node in e.label) or e.source == "syslog"):
        return e.node
    return None


def _source(e, job, gidmap):
    """(src_node, how, src_gid_node, declared_node) for one completion-error line."""
    nodes = set(job.nodes)
    logged = host_of(e.datum or "")
    local_ip = ipv4_of(e.fields.get("local_gid"))
    mapped = None
    if local_ip:
        hosts = gidmap.get(local_ip, set())
        mapped = next(iter(hosts)) if len(hosts) == 1 else None
    if logged:
        # the explicit hostname wins, even outside the workload's node list
        return logged, "hostname", (mapped if mapped and mapped != logged else None), None
    if mapped:
        return mapped, "gid", None, None
    declared = _declared_node(e, nodes)
    if declared:
        return declared, "declared_node", None, declared
    rank = rank_of(e.datum or "")  # explicit leading rank only: never an implicit rank-0 default
    if rank is not None:
        node = job.rank_to_node(rank)
        if node and node in nodes:
            return node, "rank", None, None
    return None, None, None, None


@collector_def(name="bad_pairs", author=AUTHOR)
def bad_pairs(context):
    """One entry per distinct network pair of NCCL `Got completion from peer` errors:
    src (the reporting side) and dst (the peer), IPs, HCA, statuses and count.  See
    the spec's Phase 4 for how the source is resolved; reverse-direction reports of
    the same pair are combined; conflicting IPs, interfaces or GID hostnames stay
    separate pairs.  Evidence only: no node is marked faulty here."""
    stream, job = context.event_stream, context.job
    gidmap = gid_host_map(stream)
    events = [e for e in stream.all() if e.rule and e.rule.startswith(COMPLETION_RULE)]
    pairs = []
    index = {}
    for e in sorted(events, key=lambda e: (e.obs_context_id or 0, e.line_num or 0, e.id)):
        f = e.fields
        src_node, how, src_gid_node, declared = _source(e, job, gidmap)
        src_ip = ipv4_of(f.get("local_gid"))
        peer = f.get("peer")
        dst_ip = ipv4_of(peer) or ipv4_of(normalize_gid(f.get("remote_gid")))
        dst_node = None
        if dst_ip:
            hosts = gidmap.get(dst_ip, set())
            dst_node = next(iter(hosts)) if len(hosts) == 1 else None
        elif peer:
            dst_node = peer  # the peer was printed as a hostname
        hca = f.get("hca")
        status = int(f["status"]) if str(f.get("status", "")).isdigit() else f.get("status")
        ends = (src_node or src_ip, dst_node or dst_ip)
        fwd = (ends, src_ip, dst_ip, hca, src_gid_node)
        rev = ((ends[1], ends[0]), dst_ip, src_ip, hca)
        entry = index.get(fwd)
        if entry is None:
            # a reverse-direction report of an existing pair: combine, its GID disagreement becomes dst_gid_node
            for key, cand in index.items():
                if (key[0], key[1], key[2], key[3]) == rev and cand.get("dst_gid_node") in (None, src_gid_node):
                    entry = cand
                    if src_gid_node:
                        entry["dst_gid_node"] = src_gid_node
                    entry["reverse_count"] = entry.get("reverse_count", 0) + 1
                    break
        if entry is None:
            entry = {"src_node": src_node, "src_ip": src_ip, "dst_node": dst_node, "dst_ip": dst_ip}
            if hca:
                entry["hca"] = hca
            if src_gid_node:
                entry["src_gid_node"] = src_gid_node
            if how:
                entry["src_resolved_by"] = how
            if declared:
                entry["declared_node"] = declared
            entry["statuses"] = []
            entry["count"] = 0
            index[fwd] = entry
            pairs.append(entry)
        entry["count"] += 1
        if status is not None and status not in entry["statuses"]:
            entry["statuses"].append(status)
    return pairs


@collector_def(name="job_parameters", author=AUTHOR)
def job_parameters(context):
    """Component versions (nccl, cuda, driver, torch, container image) and parallelism
    sizes seen in the logs, each with every distinct value in order of appearance."""
    versions = {}
    params = {}
    for e in context.event_stream.data_events():
        f = e.fields
        kind = f.get("kind")
        if kind == "version" and f.get("component") and f.get("value"):
            vals = versions.setdefault(f["component"], [])
            if f["value"] not in vals:
                vals.append(f["value"])
        elif kind == "param" and f.get("name") and f.get("value"):
            vals = params.setdefault(f["name"].lower(), [])
            if f["value"] not in vals:
                vals.append(f["value"])
        elif kind == "parallelism":
            for k in ("world_size", "data_parallel_size", "context_parallel_size", "tensor_model_parallel_size",
                      "pipeline_model_parallel_size"):
                if f.get(k):
                    vals = params.setdefault(k, [])
                    if f[k] not in vals:
                        vals.append(f[k])
    if not versions and not params:
        return None
    return {"versions": versions, "parameters": params}
