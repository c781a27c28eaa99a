"""Hangs named from PyTorch's NCCL flight-recorder dumps.

- FlightRecorderCulprits (filter, EARLY + 60, after ResolveRankFields): unpacks the
  `FlightRecorderDump` data events (one per rank), runs the cross-rank matching of
  `rulekit.inputs.fr_analysis`, and adds
  * NCCL_FR_COLLECTIVE_MISMATCH on the node of the ranks whose collective differs
    from their group's at one sequence id (a workload bug);
  * for every culprit rank (the one the stuck collectives wait for), on its node
    (through the job's rank map): NCCL_FR_CULPRIT_WORKLOAD when the rank's own
    evidence says its program stalled (Python stack dump, GIL held, DataLoader
    timeout / worker death, an exception, an NVRx-injected fault), else
    NCCL_FR_CULPRIT_RANK (the node is
    suspected; an Xid or CUDA error on it outranks the culprit symptom and makes
    the verdict hardware);
  * one data event with the whole analysis for the collector.
  Both culprit symptoms rank above 600, so DemoteVictimsWhenPrimary (LATE) turns the
  watchdog timeouts of every other rank into interesting victims.
- flight_recorder (collector): `collectors.flight_recorder` = culprit ranks and nodes,
  each culprit's verdict and evidence, the stuck collective per group, mismatches,
  which ranks dumped and which did not.

Reads dumps only through the event stream; never decides the outcome itself.
"""
import json

from rulekit.inputs.flight_recorder import FRDumpError, unpack_line
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
    "PYTHON_EXCEPTION", "PYTHON_IMPORT_ERROR",
})
MAX_STUCK_SHOWN = 32  # stuck collectives listed in the result (all that name a culprit come first)
INJECTED = "NVRX_INJECTED_"  # a resiliency test's injected fault on the rank explains its stall


def world_size(job):
    if job.ranks:
        return max(job.ranks) + 1
    if job.tasks_per_node and job.nodes:
        return job.tasks_per_node * len(job.nodes)
    return None


def load_dumps(stream):
    """rank -> (FRDump, its data event); the last dump of a rank wins.  Corrupt packed
    dumps are skipped and returned as problems."""
    dumps, problems = {}, []
    for e in stream.data_events():
        if e.rule != "FlightRecorderDump" or not e.fields.get("fr"):
            continue
        try:
            d = unpack_line(e.fields["fr"], e.label or "flight recorder")
        except FRDumpError as err:
            problems.append(str(err))
            continue
        if d.rank is None or d.rank < 0:
            problems.append(f"{d.where}: no rank (name the file <prefix><rank>)")
            continue
        dumps[d.rank] = (d, e)
    return dumps, problems


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


def _level_of(stuck, rank):
    for name, ranks in stuck.states.items():
        if rank in ranks:
            return name
    return "?"


@filter_def(name=RULE, author=AUTHOR, priority=FilterPriority.EARLY + 60,
            symptoms=(CULPRIT, CULPRIT_WORKLOAD, MISMATCH))
def flight_recorder_culprits(context):
    """Name the ranks a hang waits for from the flight-recorder dumps (see the module
    docstring); add the culprit and mismatch symptoms on their nodes."""
    stream, job = context.event_stream, context.job
    loaded, problems = load_dumps(stream)
    if not loaded:
        return
    dumps = {r: d for r, (d, _) in loaded.items()}
    events = {r: e for r, (_, e) in loaded.items()}
    any_event = next(iter(events.values()))
    a = analyze(dumps, world_size(job))
    for m in a.mismatches:
        rank = m.ranks[0] if m.ranks else None
        found = m.found.get(rank, {}) if rank is not None else {}
        exp = m.expected
        text = (f"pg {m.group}{' (' + m.desc + ')' if m.desc else ''} collective {m.seq}: rank(s) {ranges(m.ranks)} "
                f"issued {found.get('op')} {found.get('input_sizes')}"
                + (f" while rank(s) {ranges(exp.get('ranks', []))} issued {exp.get('op')} {exp.get('input_sizes')}"
                   if exp else ""))
        stream.add(EventSpec(type="bad_node", symptom=MISMATCH, node=job.rank_to_node(rank) if rank is not None else None,
                             fields={"rank": rank, "ranks": ranges(m.ranks), "pg": m.group, "pg_desc": m.desc,
                                     "seq": m.seq, "what": m.what, "op": found.get("op"),
                                     "expected_op": exp.get("op")},
                             datum=text),
                   rule=RULE, cause=events.get(rank, any_event), reason=text)
    evidence = _workload_evidence(stream, job, a.culprit_ranks)
    verdicts = {}
    for r in a.culprit_ranks:
        stuck = next((s for s in a.stuck if r in s.culprits), None)
        node = job.rank_to_node(r)
        own = evidence.get(r) or []
        symptom = CULPRIT_WORKLOAD if own else CULPRIT
        why = a.culprit_why.get(r, "")
        text = f"rank {r}" + (f" ({node})" if node else "") + f": {why}"
        if own:
            text += f"; its own evidence: {', '.join(sorted({s for s, _ in own}))}"
        fields = {"rank": r, "pg": stuck.group if stuck else None, "pg_desc": stuck.desc if stuck else None,
                  "op": stuck.op if stuck else None, "seq": stuck.seq if stuck else None,
                  "state": _level_of(stuck, r) if stuck else None,
                  "input_sizes": json.dumps(stuck.input_sizes) if stuck else None,
                  "waiting": ranges(stuck.waiting) if stuck else "",
                  "evidence": ",".join(sorted({s for s, _ in own}))}
        # the evidence is the rank's own dump, or (no dump) the dump of a rank waiting for it
        witness = events.get(r) or next((events[w] for w in (stuck.waiting if stuck else []) if w in events), any_event)
        stream.add(EventSpec(type="bad_node", symptom=symptom, node=node, fields=fields, datum=text),
                   rule=RULE, cause=witness, reason=text)
        verdicts[r] = {"symptom": symptom, "evidence": [{"symptom": s, "node": e.node, "source": e.label or e.source,
                                                         "line_num": e.line_num} for s, e in own[:5]]}
    analysis = a.to_dict()
    analysis["problems"] = problems + [f"{d.where}: {p}" for d in dumps.values() for p in d.problems][:50]
    analysis["verdicts"] = {str(r): v for r, v in verdicts.items()}
    stream.add(EventSpec(type="data", fields={"kind": "fr_analysis", "analysis": json.dumps(analysis)}),
               rule=RULE, cause=any_event, reason=a.reason)


def _hardware_on(stream, registry, node):
    """Remaining bad symptoms on the node that the registry classes as hardware."""
    if node is None:
        return []
    out = []
    for e in stream.bad_events():
        if e.node == node and e.symptom and not e.symptom.startswith("NCCL_FR_") \
                and registry.info(e.symptom).outcome == "hardware":
            out.append(e.symptom)
    return sorted(set(out), key=lambda s: -registry.rank(s))


@collector_def(name="flight_recorder", author=AUTHOR, requires=(RULE,))
def flight_recorder(context):
    """The flight-recorder analysis: culprit ranks and nodes with each culprit's verdict
    (`hardware` + `certain` when its node carries an Xid / CUDA hardware error,
    `workload` when its own evidence says the program stalled, else `suspected`), the
    stuck collective per process group, mismatched collectives, dumped / missing ranks."""
    stream, job, reg = context.event_stream, context.job, context.registry
    data = [e for e in stream.data_events() if e.rule == RULE and e.fields.get("kind") == "fr_analysis"]
    if not data:
        return None
    a = json.loads(data[-1].fields["analysis"])
    culprits = []
    for r in a["culprit_ranks"]:
        node = job.rank_to_node(r)
        v = a.get("verdicts", {}).get(str(r), {})
        hw = _hardware_on(stream, reg, node)
        if v.get("symptom") == CULPRIT_WORKLOAD:
            verdict, confidence = "workload", None
        elif hw:
            verdict, confidence = "hardware", "certain"
        else:
            verdict, confidence = "suspected", "suspected"
        entry = {"rank": r, "node": node, "verdict": verdict, "symptom": v.get("symptom"),
                 "why": a.get("culprit_why", {}).get(str(r), ""), "evidence": v.get("evidence", [])}
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
    return {"culprit_ranks": a["culprit_ranks"], "culprit_nodes": culprit_nodes, "culprits": culprits,
            "stuck": [{k: v for k, v in s.items() if k != "frames" or v} for s in shown],
            "stuck_groups": len(a["stuck"]),
            "mismatches": a["mismatches"], "blocked": a["blocked"], "dump_ranks": a["dump_ranks"],
            "missing_dumps": a["missing_dumps"], "reason": a["reason"], "problems": a.get("problems", [])}
