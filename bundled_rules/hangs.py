"""Hangs from logs alone: the rank the others waited for.

- BusyProgress (extractor-accumulator, one line): a line that says a rank is in a
  long piece of its own work — tokenizing, loading data or weights, downloading,
  compiling, saving a checkpoint, preprocessing — as a data event (`kind = busy`)
  with what it was doing and the progress numbers on the line (percent, done /
  total, elapsed).  The vocabulary is `BUSY` below (data, one row per activity);
  `DataPrepProgress` (workload_timing.py) reads `datasets` progress bars the same way.
- HangLaggard (filter, STANDARD + 30): when ranks timed out waiting (NCCL watchdog,
  gloo, TCPStore / rendezvous, monitored barrier) or NCCL's opCount lines are in
  the log, runs the cross-rank comparison of `common/hangcmp.py` and adds
  * NCCL_COLLECTIVE_MISMATCH on the nodes of the ranks whose collective differs at
    one sequence number / opCount (a program bug; no node is blamed);
  * for each laggard rank, on its node: HANG_LAGGARD_WORKLOAD when the rank was busy
    in the program while the others waited (application, no bad node), else
    HANG_LAGGARD_RANK (its node suspected, blamed only by its peers); both rank above
    600, so DemoteVictimsWhenPrimary turns the others' timeouts into victims.  When a
    primary fault is already known (an Xid, an exception) or the laggard's node shows
    device evidence, the laggard is added as interesting only: that evidence leads;
  * when the logs cannot tell (all ranks equal, one rank's lines only, too many
    missing), nothing bad: the reason is in the trace and the report, and a gloo /
    NCCL closed connection is demoted unless its own stamp is earlier than the first
    timeout (a peer that gave up waiting closed its end: not the network);
  * one data event with the comparison (`kind = hang_analysis`) for the collector.
- hang_ranks (collector): `collectors.hang_ranks` = the verdict(s), the criterion and
  the numbers compared, and one row per rank (bounded).

Never decides the outcome; never names a rank the comparison did not single out.
"""
import json
import re

from rulekit.plugin import Accumulator, EventSpec, FilterPriority, accumulator_def, collector_def, filter_def

from .common.hangcmp import COMM_ERRORS, PROGRESS_DATA, PROGRESS_KINDS, WAITS, WORKLOAD_EVIDENCE, analyze, order
from .common.relations import is_primary

AUTHOR = "rulekit corpus"
RULE = "HangLaggard"
LAGGARD = "HANG_LAGGARD_RANK"
LAGGARD_WORKLOAD = "HANG_LAGGARD_WORKLOAD"
MISMATCH = "NCCL_COLLECTIVE_MISMATCH"
# the capture rules whose view of the ranks a cap makes partial (hangcmp reads `capped` for them)
CAPTURE_RULES = frozenset({
    "NcclWatchdogTimeout", "NcclWatchdogWorkSeq", "NcclDumpSignal", "GlooCollectiveTimeout", "C10dStoreWaitTimeout",
    "C10dStoreSocketTimeout", "Rendezvous.StoreTimeout", "Rendezvous.StoreBarrier", "MonitoredBarrierLate",
    "NcclCollOpCount", "BusyProgress", "DataPrepProgress",
})
TRIGGER_KINDS = ("barrier_late", "nccl_coll", "watchdog_progress")
# what the comparison reads (through the symptom index and the data events): not every event of a job
READ_SYMPTOMS = tuple(sorted(WAITS | COMM_ERRORS | WORKLOAD_EVIDENCE | {MISMATCH}))
READ_KINDS = frozenset({*TRIGGER_KINDS, *PROGRESS_KINDS, *PROGRESS_DATA})

# The vocabulary of a rank's own long work (activity, RE2 pattern): the start of work that can
# outlast a collective timeout on one rank.  Periodic lines of a healthy loop (iteration counters,
# `saving checkpoint at iteration N`) are not in it: a hang is compared on what a rank was doing
# when the others gave up, and those lines are most of a training log.
BUSY = (
    ("tokenizing", r"[Tt]okeniz(?:ing|ation)|[Rr]unning tokenizer"),
    ("loading", r"Loading checkpoint shards|[Ll]oading (?:the )?(?:dataset|data (?:from|shards?)|data shard|cached "
                r"(?:processed )?dataset|model weights|pretrained weights)"),
    ("downloading", r"Downloading (?:data|shards|builder|model|checkpoint)"),
    ("compiling", r"[Cc]ompiling (?:the )?(?:model|graph|kernels?|CUDA graphs?|module|functions?)|Building extension "
                  r"module|Capturing (?:CUDA|cuda) graphs?"),
    ("saving checkpoint", r"[Ss]aving (?:model )?checkpoint (?:to|shards?)|is about to be saved|[Ss]aving (?:the )?"
                          r"(?:model|state dict|optimizer states?) to"),
    ("preprocessing", r"[Pp]reprocessing (?:the )?(?:data|dataset)|[Pp]acking (?:the )?(?:dataset|sequences|samples)|"
                      r"[Gg]rouping texts|[Gg]enerating (?:train|validation|test) split|[Ee]xtracting data files"),
)
_BUSY_RE = [(what, re.compile(p)) for what, p in BUSY]
_PCT = re.compile(r"(\d{1,3}(?:\.\d+)?)\s?%")
_DONE = re.compile(r"(\d+)\s?/\s?(\d+)")
_ELAPSED = re.compile(r"\[(?:(\d+):)?(\d{1,2}):(\d\d)<")


def busy_fields(line):
    """(activity, fields) of the last busy phrase on a line (a progress bar rewritten with
    `\\r` is one line: its last state counts), None if there is none."""
    best = None
    for what, rx in _BUSY_RE:
        for m in rx.finditer(line):
            if best is None or m.start() > best[1]:
                best = (what, m.start())
    if best is None:
        return None
    what, at = best
    tail = line[at:at + 400]
    fields = {"kind": "busy", "activity": what}
    pct = _PCT.findall(tail)
    if pct:
        fields["pct"] = pct[-1]
    done = _DONE.findall(tail)
    if done:
        fields["done"], fields["total"] = done[-1]
    el = _ELAPSED.findall(tail)
    if el:
        h, m, s = el[-1]
        fields["elapsed_s"] = str(int(h or 0) * 3600 + int(m) * 60 + int(s))
    return what, fields


@accumulator_def(
    name="BusyProgress", author=AUTHOR, trigger_re="|".join(f"(?:{p})" for _w, p in BUSY),
    sources=("applog",), max_lines=0, symptoms=(),
    tests=[
        {"line": "1: 2026-12-04 23:55:44 Tokenizing dataset: 40% (4000/10000 examples)\n", "expect": "data",
         "captures": {"kind": "busy", "activity": "tokenizing", "pct": "40", "done": "4000", "total": "10000"}},
        {"line": "Loading checkpoint shards:  50%|█████     | 2/4 [00:41<00:41, 20.61s/it]\n", "expect": "data",
         "captures": {"activity": "loading", "pct": "50", "elapsed_s": "41"}},
        {"line": "[rank0]: Saving model checkpoint to /ckpt/checkpoint-500\n", "expect": "data",
         "captures": {"activity": "saving checkpoint"}},
        {"line": "Building extension module fused_adam...\n", "expect": "data", "captures": {"activity": "compiling"}},
        {"line": "saving checkpoint at iteration    1000 to /lustre/ckpt/run3\n", "expect": "nothing"},
        {"line": "> compiling dataset index builder ... done (0.312 s)\n", "expect": "nothing"},
        {"line": "Loading extension module fused_adam...\n", "expect": "nothing"},
        {"line": "[Rank 3] data loader: fetched batch 1234 in 2.1 ms from shard 00012.bin\n", "expect": "nothing"},
    ],
)
class BusyProgress(Accumulator):
    """One line of a rank's own long work, as data."""

    def __init__(self, ctx, line, match):
        super().__init__(ctx, line, match)
        self.found = busy_fields(line)

    def finalize(self):
        if self.found is None:
            return []
        return [EventSpec(type="data", fields=self.found[1])]


def _might_hang(stream):
    """Cheap gate (symptom index): a wait, a monitored barrier or NCCL opCount lines."""
    if any(stream.query(symptom=s) for s in WAITS):
        return True
    if stream.query(symptom=MISMATCH):
        return True
    return any(e.fields.get("kind") in TRIGGER_KINDS for e in stream.data_events())


def _device_evidence(stream, reg, node):
    """Bad or interesting events on `node` whose symptom's outcome is hardware."""
    if not node:
        return []
    return [e for e in stream.query(node=node)
            if e.symptom and e.event_type.rsplit(".", 1)[-1] in ("bad", "interesting")
            and reg.info(e.symptom).outcome == "hardware"]


@filter_def(name=RULE, author=AUTHOR, priority=FilterPriority.STANDARD + 30,
            symptoms=(LAGGARD, LAGGARD_WORKLOAD, MISMATCH))
def hang_laggard(context):
    """Compare what every rank's lines say about a hang; name the rank the others waited
    for (or the mismatched collective), or say why the logs cannot tell."""
    stream, job, reg = context.event_stream, context.job, context.registry
    if (job.state or "").upper() == "COMPLETED" or not _might_hang(stream):
        return
    capped = {rule for (rule, _node), (count, _ts) in stream.left_out().items() if count and rule in CAPTURE_RULES}
    relevant = [e for s in READ_SYMPTOMS for e in stream.query(symptom=s)]
    relevant += [e for e in stream.data_events() if e.fields.get("kind") in READ_KINDS]
    analysis = analyze(relevant, job, capped, everything=stream.query)
    if analysis is None:
        return
    primaries = [e for e in stream.bad_events() if is_primary(e.symptom, reg)] if any(
        f.kind == "laggard" for f in analysis.findings) else []
    for f in analysis.findings:
        cause = f.evidence[0] if f.evidence else None
        if f.kind == "mismatch":
            if f.criterion == "reported":
                continue  # the line's own rule already says so
            nodes = sorted({n for n in f.nodes.values() if n} | set(f.details.get("nodes", ())))
            for node in nodes or [None]:
                stream.add(EventSpec(type="bad_node", symptom=MISMATCH, node=node,
                                     fields={"criterion": f.criterion, "why": f.why[:600],
                                             "ranks": ",".join(map(str, f.ranks)) or ",".join(f.procs)}),
                           cause=cause, reason=f.why)
        elif f.kind == "laggard":
            targets = [(r, f.nodes.get(r)) for r in f.ranks] or [(None, n) for n in f.details.get("nodes", ())]
            for rank, node in targets:
                busy = f.busy.get(rank) if rank is not None else None
                fields = {"criterion": f.criterion, "why": f.why[:600]}
                if rank is not None:
                    fields["laggard_rank"] = rank
                if busy:
                    fields["busy"] = busy[:200]
                own = [p for p in primaries if node and p.node == node]
                device = _device_evidence(stream, reg, node)
                if own or primaries or device:
                    lead = (own or primaries or device)[0]
                    where = "its own" if (own or device) and lead.node == node else "the job's"
                    stream.add(EventSpec(type="interesting_node", symptom=LAGGARD, node=node, fields=fields),
                               cause=cause, reason=f"{f.why}; {where} {lead.symptom} on {lead.node} leads")
                elif busy:
                    stream.add(EventSpec(type="bad_node", symptom=LAGGARD_WORKLOAD, node=node, fields=fields),
                               cause=f.busy_lines.get(rank, cause), reason=f"{f.why}; it was busy: {busy}")
                else:
                    stream.add(EventSpec(type="bad_node", symptom=LAGGARD, node=node, fields=fields),
                               cause=cause, reason=f"{f.why}; nothing on it says why (suspected)")
        elif cause is not None:
            # the ranks' lines interleave in no reliable order: only a closed connection whose own
            # stamp is earlier than the first timeout's is not the peers' giving up
            closed = [e for e in stream.bad_events() if e.symptom == "NCCL_CONNECTION_CLOSED"
                      and not (e.timestamp and cause.timestamp and order(e, cause) == -1)]
            if closed:
                stream.demote(closed, reason="a connection closed while the peers timed out waiting: a peer "
                                             "gave up and left, not the network")
    verdict = ", ".join(f.kind for f in analysis.findings) or "none"
    stream.add(EventSpec(type="data", fields={"kind": "hang_analysis", "verdict": verdict,
                                              "summary": analysis.to_field()}),
               reason="; ".join(f.why for f in analysis.findings if f.kind == "undecided")
               or f"the comparison ({verdict}) for collectors.hang_ranks")


@collector_def(name="hang_ranks", author=AUTHOR, requires=(RULE,))
def hang_ranks(context):
    """The log-only hang comparison: each finding (mismatch / laggard / undecided) with its
    criterion, the ranks and nodes it names, why, and the per-rank table it compared."""
    data = [e for e in context.event_stream.data_events() if e.rule == RULE and e.fields.get("kind") == "hang_analysis"]
    if not data:
        return None
    return json.loads(data[-1].fields["summary"])
