"""Hangs named from PyTorch's flight-recorder dumps.

- FlightRecorderCulprits (filter, EARLY + 60, after ResolveRankFields): runs the
  cross-rank analysis of `rulekit.inputs.fr_analysis` over the dumps the session
  ingested as data (`context.dumps`, every one of them, each attempt of a restarted
  job on its own), and adds
  * NCCL_FR_COLLECTIVE_MISMATCH on the node of the ranks whose collective differs
    from their group's at one sequence id (a workload bug);
  * for every culprit rank (one whose own progress stopped first: the stuck
    collectives wait for it, and nothing of its own is pending), on its node
    (through the job's rank map): NCCL_FR_CULPRIT_WORKLOAD when the rank's own
    evidence says its program stalled (a py-spy GIL holder, a faulthandler stack
    dump, a DataLoader timeout or worker death, an exception, an NVRx-injected
    fault), else NCCL_FR_CULPRIT_RANK (blame `peer`: the node is suspected; a
    device error on it, an Xid or a hardware CUDA error, outranks it and makes the
    verdict hardware);
  * for a collective stuck *inside* (every member reached it, none completed it,
    so the dumps cannot single one out): NCCL_FR_CULPRIT_RANK on the members whose
    node shows a device error, when those are some of its members but not all;
  * one data event with the whole analysis for the collector.
  Both culprit symptoms rank above 600, so DemoteVictimsWhenPrimary (LATE) turns the
  watchdog timeouts of every other rank into interesting victims.  The analysis's
  limits that were hit are reported (`limits_hit`).
- flight_recorder (collector): `collectors.flight_recorder` = culprit ranks and nodes,
  each culprit's verdict and evidence, the stuck collective per group, the undecided
  ones, mismatches, which ranks dumped and which did not, the attempts (epochs).

Reads dumps only as the session's data; never decides the outcome itself.
"""
import json

from rulekit.inputs.fr_analysis import analyze, ranges
from rulekit.plugin import EventSpec, FilterPriority, collector_def, filter_def

from .common.relations import rank_field

AUTHOR = "rulekit corpus"
RULE = "FlightRecorderCulprits"
CULPRIT = "NCCL_FR_CULPRIT_RANK"
CULPRIT_WORKLOAD = "NCCL_FR_CULPRIT_WORKLOAD"
MISMATCH = "NCCL_FR_COLLECTIVE_MISMATCH"
# a rank's own evidence that its program (not its node) stalled
WORKLOAD_EVIDENCE = frozenset({
    "PYTHON_GIL_HELD", "PYTHON_STACK_DUMP", "DATALOADER_TIMEOUT", "DATALOADER_WORKER_EXITED", "DATALOADER_BUS_ERROR",
    "PYTHON_EXCEPTION", "PYTHON_EXCEPTION_TAIL", "PYTHON_IMPORT_ERROR",
})
MAX_STUCK_SHOWN = 32  # stuck collectives listed in the result (all that name a culprit come first)
MAX_PROBLEMS_SHOWN = 50
INJECTED = "NVRX_INJECTED_"  # a resiliency test's injected fault on the rank explains its stall
# a rank's own report that its last op failed because a peer went away (the dump marks it retired)
PEER_ERRORS = frozenset({"NCCL_CONNECTION_CLOSED", "NCCL_REMOTE_ERROR"})


def world_size(job):
    if job.ranks:
        return max(job.ranks) + 1
    if job.tasks_per_node and job.nodes:
        return job.tasks_per_node * len(job.nodes)
    return None


def dump_events(stream):
    """dump index -> its provenance data event (the session adds one per dump)."""
    out = {}
    for e in stream.data_events():
        if e.fields.get("kind") == "fr_dump" and isinstance(e.fields.get("dump"), int):
            out[e.fields["dump"]] = e
    return out


def _workload_evidence(stream, job, culprits):
    """culprit rank -> [(symptom, event)] of its own stall evidence.  Evidence seen on
    more than half the ranks (a stack dump every rank printed) does not single out a
    culprit and is ignored."""
    nodes = {r: job.rank_to_node(r) for r in culprits}
    by_symptom = {}
    found = {r: [] for r in culprits}
    for e in stream.node_events():
        if not e.symptom or not (e.symptom in WORKLOAD_EVIDENCE or e.symptom.startswith(INJECTED)):
            continue
        rank = rank_field(e)
        if rank is not None:
            by_symptom.setdefault(e.symptom, set()).add(rank)
        for r in culprits:
            if rank == r or (rank is None and e.node is not None and e.node == nodes[r]):
                found[r].append((e.symptom, e))
    world = world_size(job) or 0
    common = {s for s, rs in by_symptom.items() if len(rs) > max(len(culprits), world // 2)}
    return {r: [(s, e) for s, e in evs if s not in common] for r, evs in found.items()}


def _device_evidence(stream, registry, nodes):
    """node -> the hardware symptoms of its own bad events (Xid, hardware CUDA errors, ...)."""
    out = {}
    want = {n for n in nodes if n}
    for e in stream.bad_events():
        if e.node in want and e.symptom and not e.symptom.startswith("NCCL_FR_") \
                and registry.info(e.symptom).outcome == "hardware":
            out.setdefault(e.node, set()).add(e.symptom)
    return out


def _peer_errors(stream):
    """Ranks whose own log says a peer closed the connection or exited."""
    out = set()
    for e in stream.node_events():
        if e.symptom in PEER_ERRORS:
            r = rank_field(e)
            if r is not None:
                out.add(r)
    return out


def _level_of(stuck, rank):
    for name, ranks in stuck.states.items():
        if rank in ranks:
            return name
    return "?"


def _epochs(a):
    return [*a.earlier, a]


@filter_def(name=RULE, author=AUTHOR, priority=FilterPriority.EARLY + 60,
            symptoms=(CULPRIT, CULPRIT_WORKLOAD, MISMATCH))
def flight_recorder_culprits(context):
    """Name the ranks a hang waits for from the flight-recorder dumps (see the module
    docstring); add the culprit and mismatch symptoms on their nodes."""
    stream, job, reg = context.event_stream, context.job, context.registry
    dumps = list(getattr(context, "dumps", ()) or ())
    if not dumps:
        return
    events = dump_events(stream)
    problems = [f"{d.where}: no rank (name the file <prefix><rank>)" for d in dumps if d.rank is None or d.rank < 0]
    by_where = {d.where: events.get(i) for i, d in enumerate(dumps)}
    any_event = next(iter(events.values()), None)
    a = analyze(dumps, world_size(job), _peer_errors(stream))
    verdicts = {}
    for ep in reversed(_epochs(a)):  # the latest attempt's verdict on a rank first
        ev_of = {}
        for d in dumps:
            if d.rank in ep.dump_ranks and d.where in by_where and d.rank not in ev_of:
                ev_of[d.rank] = by_where[d.where]
        first = next((e for e in ev_of.values() if e is not None), any_event)
        for m in ep.mismatches:
            rank = m.ranks[0] if m.ranks else None
            found = m.found.get(rank, {}) if rank is not None else {}
            exp = m.expected
            text = (f"pg {m.group}{' (' + m.desc + ')' if m.desc else ''} collective {m.seq}: rank(s) "
                    f"{ranges(m.ranks)} issued {found.get('op')} {found.get('input_sizes')}"
                    + (f" while rank(s) {ranges(exp.get('ranks', []))} issued {exp.get('op')} {exp.get('input_sizes')}"
                       if exp else ""))
            stream.add(EventSpec(type="bad_node", symptom=MISMATCH,
                                 node=job.rank_to_node(rank) if rank is not None else None,
                                 fields={"rank": rank, "ranks": ranges(m.ranks), "pg": m.group, "pg_desc": m.desc,
                                         "seq": m.seq, "what": m.what, "op": found.get("op"),
                                         "expected_op": exp.get("op"), "epoch": ep.epoch},
                                 datum=text),
                       rule=RULE, cause=ev_of.get(rank) or first, reason=text)
        named = list(ep.culprit_ranks)
        why = dict(ep.culprit_why)
        how = {r: "stopped" for r in named}
        # a collective stuck inside: the members whose node shows a device error, if only some
        devices = _device_evidence(stream, reg, {job.rank_to_node(r) for s in ep.undecided for r in s.members})
        for s in ep.undecided:
            hit = [r for r in s.members if devices.get(job.rank_to_node(r))]
            if hit and len(hit) < len(s.members):
                for r in hit:
                    if r not in how:
                        named.append(r)
                        how[r] = "device_error_inside"
                        why[r] = (f"{s.reason}; of its members only rank(s) {ranges(hit)} have a device error on "
                                  f"their node ({', '.join(sorted(devices[job.rank_to_node(r)]))})")
        named.sort()
        evidence = _workload_evidence(stream, job, named)
        for r in named:
            stuck = next((s for s in ep.stuck if r in s.culprits), None) or \
                next((s for s in ep.undecided if r in s.members), None)
            node = job.rank_to_node(r)
            own = evidence.get(r) or []
            symptom = CULPRIT_WORKLOAD if own else CULPRIT
            text = f"rank {r}" + (f" ({node})" if node else "") + f": {why.get(r, '')}"
            if own:
                text += f"; its own evidence: {', '.join(sorted({s for s, _ in own}))}"
            fields = {"rank": r, "pg": stuck.group if stuck else None, "pg_desc": stuck.desc if stuck else None,
                      "op": stuck.op if stuck else None, "seq": stuck.seq if stuck else None,
                      "state": _level_of(stuck, r) if stuck else None,
                      "input_sizes": json.dumps(stuck.input_sizes) if stuck else None,
                      "waiting": ranges(stuck.waiting) if stuck else "", "how": how[r], "epoch": ep.epoch,
                      "evidence": ",".join(sorted({s for s, _ in own}))}
            # the evidence is the rank's own dump, or (no dump) the dump of a rank waiting for it
            witness = ev_of.get(r) or next((ev_of[w] for w in (stuck.waiting if stuck else []) if ev_of.get(w)),
                                           first)
            stream.add(EventSpec(type="bad_node", symptom=symptom, node=node, fields=fields, datum=text),
                       rule=RULE, cause=witness, reason=text)
            verdicts.setdefault(str(r), {"symptom": symptom, "how": how[r], "epoch": ep.epoch,
                                         "why": why.get(r, ""),
                                         "evidence": [{"symptom": s, "node": e.node, "source": e.label or e.source,
                                                       "line_num": e.line_num} for s, e in own[:5]]})
        for lim in ep.limits:
            context.limit_hit(lim["limit"], lim["value"], lim["what"])
    analysis = a.to_dict()
    analysis["earlier"] = [e.to_dict() for e in a.earlier]
    analysis["problems"] = (problems + [f"{d.where}: {p}" for d in dumps for p in d.problems])[:MAX_PROBLEMS_SHOWN]
    analysis["verdicts"] = verdicts
    analysis["dumps"] = len(dumps)
    stream.add(EventSpec(type="data", fields={"kind": "fr_analysis", "analysis": json.dumps(analysis)}),
               rule=RULE, cause=any_event, reason=a.reason)


@collector_def(name="flight_recorder", author=AUTHOR, requires=(RULE,))
def flight_recorder(context):
    """The flight-recorder analysis: culprit ranks and nodes with each culprit's verdict
    (`hardware` + `certain` when its node carries an Xid / CUDA hardware error,
    `workload` when its own evidence says the program stalled, else `suspected`), the
    stuck collective per process group, the undecided ones, mismatched collectives,
    dumped / missing ranks, and the earlier attempts."""
    stream, job, reg = context.event_stream, context.job, context.registry
    data = [e for e in stream.data_events() if e.rule == RULE and e.fields.get("kind") == "fr_analysis"]
    if not data:
        return None
    a = json.loads(data[-1].fields["analysis"])
    verdicts = a.get("verdicts", {})
    ranks = sorted(int(r) for r in verdicts)
    devices = _device_evidence(stream, reg, {job.rank_to_node(r) for r in ranks})
    culprits = []
    for r in ranks:
        node = job.rank_to_node(r)
        v = verdicts[str(r)]
        hw = sorted(devices.get(node, ()), key=lambda s: -reg.rank(s))
        if v.get("symptom") == CULPRIT_WORKLOAD:
            verdict, confidence = "workload", None
        elif hw:
            verdict, confidence = "hardware", "certain"
        else:
            verdict, confidence = "suspected", "suspected"
        entry = {"rank": r, "node": node, "verdict": verdict, "symptom": v.get("symptom"), "how": v.get("how"),
                 "epoch": v.get("epoch"), "why": v.get("why", ""), "evidence": v.get("evidence", [])}
        stopped = a.get("stopped_at", {}).get(str(r))
        if stopped is not None:
            entry["stopped_at_ns"] = stopped
        if confidence:
            entry["confidence"] = confidence
        if hw:
            entry["node_hardware"] = hw
        culprits.append(entry)
    culprit_nodes = sorted({c["node"] for c in culprits if c["node"]})
    # every stuck collective that names a culprit, then a bounded number of the others
    naming = [s for s in a["stuck"] if s["culprits"]]
    others = [s for s in a["stuck"] if not s["culprits"]]
    shown = naming + others[:max(0, MAX_STUCK_SHOWN - len(naming))]
    if len(shown) < len(a["stuck"]):
        context.limit_hit("max_stuck_shown", MAX_STUCK_SHOWN,
                          f"{len(a['stuck']) - len(shown)} stuck op(s) naming no culprit are not listed "
                          "(`stuck_groups` counts them all)")
    return {"culprit_ranks": ranks, "culprit_nodes": culprit_nodes, "culprits": culprits,
            "stuck": [{k: v for k, v in s.items() if k != "frames" or v} for s in shown],
            "stuck_groups": len(a["stuck"]), "undecided": a.get("undecided", []),
            "mismatches": a["mismatches"], "blocked": a["blocked"], "dump_ranks": a["dump_ranks"],
            "missing_dumps": a["missing_dumps"], "dumps": a.get("dumps"), "epoch": a.get("epoch", 0),
            "earlier_epochs": [{"epoch": e["epoch"], "dump_ranks": ranges(e["dump_ranks"]),
                                "culprit_ranks": e["culprit_ranks"], "reason": e["reason"]}
                               for e in a.get("earlier", [])],
            "duplicates": a.get("duplicates", []),
            "reason": a["reason"], "problems": a.get("problems", [])}
