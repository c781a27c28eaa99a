"""Order in time as a rule of the cascade: among competing faults of similar rank, the
first in time is the better root cause.

- FirstInTimeRootCause (POST_OUTCOME): the outcome mapping named the highest-ranked
  remaining symptom; when another remaining fault of similar rank (within
  `SIMILAR_RANK`, not a victim, an outcome that says what happened, and the same
  answer to "does it blame a node") provably came first (its first line more than the
  clock-skew tolerance before every line of the chosen one, and at most
  `CASCADE_WINDOW_SECONDS` before: a fault long before was a separate incident the job
  survived), the earliest such fault becomes the root cause.  Nothing is demoted: both
  stay among the job's symptoms and keep blaming their nodes; only the root cause,
  outcome and sub-domain change, and the trace says which symptom was preferred over
  which and by how many seconds (`prefer_symptom`; the decision's reason too).

Its companion, "a victim that comes before a fault cannot be its victim", lives where
victims are demoted (DemoteVictimsWhenPrimary, IbStatus12PeerBlame, and the FINAL
refiners through `common.relations.spare_first`).  POST_OUTCOME, because only the
outcome mapping knows which symptom won on rank, and because preferring a root must
not remove evidence (a FINAL demotion would take a second faulty node out of
`bad_nodes`).  Times and tolerance: docs/time.md.
"""
from rulekit.plugin import RefinerPriority, order_key, refiner_def

from .common.relations import VICTIMS, before_all, lead_text

AUTHOR = "rulekit corpus"

SIMILAR_RANK = 50  # ranks apart at most for two faults to compete on time (hardware 900-960, network 815-880, ...)
CASCADE_WINDOW_SECONDS = 900.0  # a fault further ahead than this was a separate incident, not the cascade's start
DECISIVE = ("hardware", "network", "application", "infrastructure")


def _competes(sym, root, reg) -> bool:
    """Whether `sym` may compete with the chosen root on time."""
    if sym == root or sym in VICTIMS:
        return False
    info, rinfo = reg.info(sym), reg.info(root)
    if info.outcome not in DECISIVE or abs(reg.rank(root) - reg.rank(sym)) > SIMILAR_RANK:
        return False
    return (info.outcome == "application") == (rinfo.outcome == "application")  # node blame or not: unchanged


@refiner_def(name="FirstInTimeRootCause", author=AUTHOR, priority=RefinerPriority.POST_OUTCOME + 10)
def first_in_time_root_cause(context):
    """Among remaining faults of similar rank, the first in time is the root cause (see
    the module docstring): the decision moves to the earliest one that provably came
    before every event of the one the ranks chose, within the cascade window."""
    d = context.outcome
    if d is None or not d.root_symptom:
        return
    reg, stream = context.registry, context.event_stream
    root = d.root_symptom
    if root in VICTIMS or reg.info(root).outcome not in DECISIVE:
        return
    rivals = [s for s in context.symptoms.symptoms() if _competes(s, root, reg)]
    if not rivals:
        return
    root_events = stream.query("bad_node", symptom=root)
    before = before_all(context, root_events)
    best = None  # (its first event's order key, symptom, first event, lead in seconds)
    for sym in rivals:
        evs = stream.query("bad_node", symptom=sym)
        if not evs:
            continue
        first = min(evs, key=order_key)
        gap = before(first)
        if gap is None or gap > CASCADE_WINDOW_SECONDS:
            continue
        key = order_key(first)
        if best is None or key < best[0]:
            best = (key, sym, first, gap)
    if best is None:
        return
    _key, sym, first, gap = best
    info = reg.info(sym)
    why = (f"`{sym}` ({reg.rank(sym)}) on {first.node or 'the job'} came {lead_text(gap)} before `{root}` "
           f"({reg.rank(root)}), within {SIMILAR_RANK} ranks: the first in time is the better root cause")
    context.symptoms.note(sym, "FirstInTimeRootCause", why, action="prefer_symptom")
    d.set("FirstInTimeRootCause", outcome=info.outcome, sub_domain=info.sub_domain, root_symptom=sym,
          root_node=first.node, root_event_id=first.id, reason=why + f" (ranks alone chose `{root}`)")
