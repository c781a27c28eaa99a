"""The generic fallback: an error line that no rule explains becomes a low-confidence
symptom of the component it names, so a log with an error line is never `unknown`.

What reads as an error and the component vocabulary are data
(`rulekit/data/error_lines.toml`, read by `rulekit.extract.errorline`): each component
row registers one `UNEXPLAINED_<COMPONENT>_ERROR` symptom at rank 0, the fallback band
(rulekit.engine.refine.FALLBACK_RANK: it decides only when no other symptom does, and a
node it blames is a suspected bad node, never a certain one).  ErrorLine is a fallback
accumulator: the engine drops its trigger on a line another rule explains and its
events on lines an accumulator's reading covers (rulekit.engine.explained).
GenericErrorsAfterVictims discards a generic error line that comes after a victim
symptom (a watchdog timeout, a terminate, an abort: outcome unknown, blaming nobody):
it is part of that victim's cascade, and a victim cannot precede its cause.
GenericErrorsYield discards these symptoms once the outcome rests on anything else.
Must not carry knowledge of specific failures: a shape worth a diagnosis gets its own
rule or catalog entry.
"""
from rulekit.plugin import (Accumulator, EventSpec, FilterPriority, RefinerPriority, accumulator_def,
                            error_vocabulary, filter_def, refiner_def, register_symptom)

AUTHOR = "rulekit corpus"
RANK = 0  # the fallback band

VOCABULARY = error_vocabulary()
SYMPTOMS = VOCABULARY.symptoms()
for _name, _comp in SYMPTOMS.items():
    register_symptom(_name, outcome=_comp.outcome, sub_domain=_comp.sub_domain, rank=RANK, blame=_comp.blame,
                     action=_comp.action, docs=_comp.docs)


@accumulator_def(
    name="ErrorLine", author=AUTHOR, trigger_re=VOCABULARY.trigger, max_lines=0, fallback=True,
    symptoms=tuple(SYMPTOMS),
    tests=[
        {"line": "libfabric:4711:1690000000::efa:ep_ctrl:efa_rdm_ep_open():512<warn> failed: Operation not "
                 "permitted, fi_strerror returned -1\n", "expect": "nothing"},
        {"line": "[2026-06-01 03:10:40] node0003:2211:2290 [0] some/file.cc:12 NCCL WARN NET/OFI Request "
                 "0x7f completed with error. RC: 21. Error: Unknown\n", "symptom": "UNEXPLAINED_EFA_ERROR",
         "captures": {"component": "efa", "cue": "nccl"}},
        {"line": "[rank3]: SomeFrameworkError: the planner found no valid schedule\n",
         "symptom": "UNEXPLAINED_PYTHON_ERROR", "captures": {"cue": "exception"}},
        {"line": "E0601 03:22:41.426000 4711 vendor/thing.cc:42] dispatcher stopped unexpectedly\n",
         "symptom": "UNEXPLAINED_PROGRAM_ERROR", "captures": {"cue": "level"}},
        {"line": "Jun 01 03:10:40 node0001 kernel: nvidia 0000:3b:00.0: probe of device failed with error -1\n",
         "source": "syslog", "symptom": "UNEXPLAINED_GPU_ERROR"},
        {"line": "Jun 01 03:10:40 node0001 systemd[1]: some.service: Failed with result 'exit-code'.\n",
         "source": "syslog", "symptom": "UNEXPLAINED_HOST_ERROR"},
        # near misses: counters, flags, INFO/WARNING lines, frames, advice
        {"line": "step 100 | loss 2.31 | errors=0 | error_rate 0.00 | grad_norm 1.2\n", "expect": "nothing"},
        {"line": "INFO:root:no error found in health check; all 8 GPUs nominal\n", "expect": "nothing"},
        {"line": "[2026-06-01 03:10:40] WARNING: retrying the download after a failure\n", "expect": "nothing"},
        {"line": "  File \"/opt/lib/torch/distributed/elastic/multiprocessing/errors/__init__.py\", line 355\n",
         "expect": "nothing"},
        {"line": "Namespace(on_error='skip', fail_fast=False)\n", "expect": "nothing"},
    ],
)
# rulekit: ignore[RK304,RK305]  (the gate is error words: an INFO line that holds one, 0.6 % of the sample, passes it and reads_as_error rejects it)
class ErrorLine(Accumulator):
    """An error line by the error-line vocabulary: the generic symptom of its component."""

    def __init__(self, ctx, line, match):
        super().__init__(ctx, line, match)
        self.reading = VOCABULARY.reads_as_error(line, ctx.source)

    def finalize(self):
        r = self.reading
        if r is None:
            return []
        return [EventSpec(type="bad_node", symptom=r.component.symptom,
                          fields={"component": r.component.name, "cue": r.cue})]


@refiner_def(name="GenericErrorsYield", author=AUTHOR, priority=RefinerPriority.POST_OUTCOME, symptoms=tuple(SYMPTOMS))
def generic_errors_yield(context):
    """Once the outcome rests on a specific symptom (or the job's state), the generic
    error lines said nothing the decision needs: they are discarded."""
    root = context.outcome.root_symptom if context.outcome else None
    if root is None or root in SYMPTOMS:
        return
    for s in context.symptoms.symptoms():
        if s in SYMPTOMS:
            context.symptoms.discard(s, "GenericErrorsYield", f"the outcome rests on {root}")


def _before(a, b) -> bool:
    """Whether event `a` is shown to come before event `b`: by their timestamps (own or
    carried) when both have one and they differ, else by line when both come from the
    same file and are not adjacent (two adjacent lines are one moment: a message the
    terminal wrapped, or printed in two lines).  False when nothing tells."""
    ta = a.timestamp or a.fields.get("carried_ts")
    tb = b.timestamp or b.fields.get("carried_ts")
    if ta and tb and ta != tb:
        return ta < tb
    if a.obs_context_id is not None and a.obs_context_id == b.obs_context_id and a.line_num is not None \
            and b.line_num is not None:
        return a.line_num < b.line_num - 1
    return False


@filter_def(name="GenericErrorsAfterVictims", author=AUTHOR, priority=FilterPriority.EARLY)
def generic_errors_after_victims(context):
    """A generic error line not shown to come before every victim symptom of the job (a
    watchdog timeout, a C++ terminate, an abort: outcome unknown, blaming nobody; the job
    record's own state aside) may belong to that victim's cascade, and a victim cannot
    precede its cause: it is discarded.  A generic line shown to come first stays."""
    stream, reg = context.event_stream, context.registry
    events = stream.query()
    generic = [e for e in events if e.symptom in SYMPTOMS]
    if not generic:
        return
    victims = [e for e in events if e.symptom and e.symptom not in SYMPTOMS and e.source != "scheduler"
               and not e.event_type.endswith(".data") and reg.info(e.symptom).outcome == "unknown"
               and reg.info(e.symptom).blame in (None, "none")]
    for g in generic:
        v = next((v for v in victims if not _before(g, v)), None)
        if v is not None:
            stream.discard([g], reason=f"after {v.symptom} (line {v.line_num}): part of its cascade")
