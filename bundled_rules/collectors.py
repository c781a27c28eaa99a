"""Collectors: `bad_pairs` (NCCL "Got completion from peer" network pairs, exactly as
the spec's Phase 4 paragraph says) and `job_parameters` (component versions and
parallelism seen in the logs).

Collectors only read the event stream and return JSON-able data; they never add
events, change bad nodes or the job's node list.
"""
from rulekit.extract.linectx import host_of, rank_of
from rulekit.plugin import collector_def

from .common.relations import ipv4_of, normalize_gid

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


def _address_book(stream):
    """IPv4 -> [(host, (obs, line))]: every line where a host printed the IP as its own
    local GID or bootstrap / OOB address."""
    book = {}
    for d in stream.data_events():
        if d.fields.get("kind") in ("gid_host", "host_ip") and d.fields.get("ip") and d.fields.get("host"):
            book.setdefault(d.fields["ip"], []).append((d.fields["host"], (d.obs_context_id, d.line_num)))
    return book


def _mapped(book, ip, exclude=None, besides=None):
    """The one hostname the address book gives for `ip`, not counting the line `exclude`
    and, when `besides` is given, other than that name; None if none or several."""
    hosts = {h for h, where in book.get(ip or "", []) if where != exclude and h != besides}
    return next(iter(hosts)) if len(hosts) == 1 else None


def _source(e, job, book):
    """(src_node, how, src_gid_node, declared_node) for one completion-error line."""
    nodes = set(job.nodes)
    logged = host_of(e.datum or "")
    local_ip = ipv4_of(e.fields.get("local_gid"))
    own_line = (e.obs_context_id, e.line_num)
    if logged:
        # the explicit hostname wins, even outside the workload's node list; a different
        # name for its local GID elsewhere in the job is exposed as src_gid_node
        return logged, "hostname", _mapped(book, local_ip, own_line, besides=logged), None
    mapped = _mapped(book, local_ip, own_line)
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


def _same_direction(pairs, src_node, src_ip, dst_node, dst_ip, hca, src_gid_node):
    for p in pairs:
        if (p["src_node"], p["src_ip"], p["dst_node"], p["dst_ip"], p.get("hca"), p.get("src_gid_node")) == \
                (src_node, src_ip, dst_node, dst_ip, hca, src_gid_node):
            return p
    return None


def _reverse(pairs, src_node, src_ip, dst_node, dst_ip, hca, src_gid_node):
    """An existing pair reported from the other end: same two IPs swapped, names that do
    not conflict; the reporter's GID disagreement becomes the pair's dst_gid_node."""
    for p in pairs:
        if (p["src_ip"], p["dst_ip"]) != (dst_ip, src_ip) or src_ip is None:
            continue
        if p["dst_node"] not in (None, src_node) or (dst_node is not None and p["src_node"] not in (None, dst_node)):
            continue
        if src_gid_node and p.get("dst_gid_node") not in (None, src_gid_node):
            continue
        if not src_gid_node and p.get("dst_gid_node"):
            continue
        if p["dst_node"] is None:
            p["dst_node"] = src_node
        if src_gid_node:
            p["dst_gid_node"] = src_gid_node
        if hca and hca != p.get("hca"):
            p["dst_hca"] = hca
        p["reverse_count"] = p.get("reverse_count", 0) + 1
        return p
    return None


@collector_def(name="bad_pairs", author=AUTHOR)
def bad_pairs(context):
    """One entry per distinct network pair of NCCL `Got completion from peer` errors:
    src (the reporting side) and dst (the peer), IPs, HCA, statuses and count.  See
    the spec's Phase 4 for how the source is resolved; reverse-direction reports of
    the same pair are combined; conflicting IPs, interfaces or GID hostnames stay
    separate pairs.  Evidence only: no node is marked faulty here."""
    stream, job = context.event_stream, context.job
    book = _address_book(stream)
    events = [e for e in stream.all() if e.rule and e.rule.startswith(COMPLETION_RULE)]
    pairs = []
    for e in sorted(events, key=lambda e: (e.obs_context_id or 0, e.line_num or 0, e.id)):
        f = e.fields
        src_node, how, src_gid_node, declared = _source(e, job, book)
        src_ip = ipv4_of(f.get("local_gid"))
        peer = f.get("peer")
        dst_ip = ipv4_of(peer) or ipv4_of(normalize_gid(f.get("remote_gid")))
        dst_node = _mapped(book, dst_ip, (e.obs_context_id, e.line_num)) if dst_ip else peer
        hca = f.get("hca")
        status = int(f["status"]) if str(f.get("status", "")).isdigit() else f.get("status")
        entry = _same_direction(pairs, src_node, src_ip, dst_node, dst_ip, hca, src_gid_node)
        if entry is None:
            entry = _reverse(pairs, src_node, src_ip, dst_node, dst_ip, hca, src_gid_node)
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
