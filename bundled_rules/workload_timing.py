"""Timeouts whose cause is the workload's own pace, and a SIGKILL with nothing else.

DataPrepOutlivedTimeout: one rank prepares the dataset (tokenising, `datasets` map,
packing) behind a barrier while the others wait in a collective or on the c10d
store; when the preparation runs past the timeout the waiting ranks die with a
watchdog / store timeout.  Those timeouts are victims; the cause is the workload.
The filter adds DATA_PREP_OUTLIVED_TIMEOUT when a data-preparation progress line
reports an elapsed time of at least 80 % of a timeout some rank hit (or the job's
usual 30-minute default when the timeout line does not say).

SigkillAloneIsHostOom: a rank killed by SIGKILL (`exits with return code = -9`,
`exitcode: -9`, `task N: Killed`) with no stop of the scheduler, no other failure
and no kernel line saying who killed it is most often the host's OOM killer.  The
filter adds HOST_OOM_SUSPECTED, ranked just above PROCESS_SIGKILL: weak evidence,
never above a named cause.  Both filters only add events; they never discard.
"""
import re

from rulekit.plugin import Accumulator, EventSpec, FilterPriority, accumulator_def, filter_def, register_symptom

from .common.relations import STOPS

AUTHOR = "rulekit corpus"

register_symptom("C10D_STORE_TIMEOUT", blame="none", outcome="unknown", sub_domain="nccl", rank=402,
                 docs="A rank's c10d store socket timed out (`[c10d] waitForInput: socket SocketImpl(...) timed out "
                      "after 1800000ms`): it waited for another rank that did not arrive. A victim.")
register_symptom("DATA_PREP_OUTLIVED_TIMEOUT", blame="workload", outcome="application", sub_domain="python", rank=615,
                 docs="A rank was still preparing data (tokenising, dataset map, packing) when the others timed out "
                      "waiting for it: raise the collective timeout (ddp_timeout) or preprocess before training.")
register_symptom("HOST_OOM_SUSPECTED", blame="workload", outcome="application", sub_domain="host_oom", rank=332,
                 docs="A rank was SIGKILLed with no other evidence (no scheduler stop, no kernel OOM line, no other "
                      "failure): most often the host's OOM killer. Weak: any named cause outranks it.")

_PROGRESS = re.compile(r"(?P<desc>[^|\]\n]{0,100}?):?\s+(?P<pct>\d{1,3})%\|[^|\n]*\|\s*[\d.]+[kMG]?/[\d.]+[kMG]?\s*"
                       r"\[(?P<elapsed>(?:\d+:)?\d{1,2}:\d\d)<")
_DATA_PREP = re.compile(r"(?i)token|\bmap\b|filter|group(?:ing)? texts|pack|preprocess|dataset|prompts|shard")
_TIMEOUT_MS = re.compile(r"Timeout\(ms\)=(\d+)|timed out after (\d+)ms")
DEFAULT_TIMEOUT_S = 1800
VICTIM_TIMEOUTS = ("NCCL_WATCHDOG_TIMEOUT", "C10D_STORE_TIMEOUT", "NCCL_WATCHDOG_STUCK", "RENDEZVOUS_TIMEOUT")


def _seconds(elapsed: str) -> int:
    parts = [int(p) for p in elapsed.split(":")]
    secs = 0
    for p in parts:
        secs = secs * 60 + p
    return secs


def data_prep_progress(text: str):
    """(description, elapsed seconds) of the last data-preparation progress bar on a line."""
    best = None
    for m in _PROGRESS.finditer(text):
        desc = m.group("desc").strip()
        if _DATA_PREP.search(desc):
            best = (desc, _seconds(m.group("elapsed")))
    return best


@filter_def(name="DataPrepOutlivedTimeout", author=AUTHOR, priority=FilterPriority.LATE + 10,
            symptoms=("DATA_PREP_OUTLIVED_TIMEOUT",))
def data_prep_outlived_timeout(context):
    """Victim timeouts plus a data-preparation progress line at >= 80 % of the timeout:
    one DATA_PREP_OUTLIVED_TIMEOUT on the node of the progress line."""
    stream = context.event_stream
    victims = [e for e in stream.query() if e.symptom in VICTIM_TIMEOUTS]
    if not victims:
        return
    timeouts = []
    for v in victims:
        raw = str(v.fields.get("timeout_ms") or v.fields.get("ms") or "")
        m = _TIMEOUT_MS.search(v.datum or "")
        if raw.isdigit():
            timeouts.append(int(raw) // 1000)
        elif m:
            timeouts.append(int(m.group(1) or m.group(2)) // 1000)
    limit = min(timeouts) if timeouts else DEFAULT_TIMEOUT_S
    for e in stream.data_events():
        if e.fields.get("kind") != "data_prep_progress":
            continue
        elapsed = int(e.fields.get("elapsed_s", 0))
        if elapsed >= 0.8 * limit:
            stream.add(EventSpec(type="bad_node", symptom="DATA_PREP_OUTLIVED_TIMEOUT", node=e.node,
                                 fields={"desc": e.fields.get("desc"), "elapsed_s": elapsed, "timeout_s": limit}),
                       rule="DataPrepOutlivedTimeout", cause=e,
                       reason=f"data preparation had run {elapsed}s of a {limit}s timeout")
            return


SIGKILL = ("PROCESS_SIGKILL",)
# symptoms that say nothing about why a rank died (launcher / scheduler echoes of the kill)
ECHOES = {"PROCESS_SIGKILL", "SLURM_FAILED", "SLURM_TASK_EXIT", "PROCESS_EXIT_NONZERO", "PROCESS_SIGTERM",
          "NCCL_ASYNC_ERROR_TEARDOWN", "K8S_RESTART_CONSEQUENCE", "CPP_TERMINATE"}


@filter_def(name="SigkillAloneIsHostOom", author=AUTHOR, priority=FilterPriority.LATE + 20,
            symptoms=("HOST_OOM_SUSPECTED",))
def sigkill_alone_is_host_oom(context):
    """PROCESS_SIGKILL and nothing but its echoes (no stop, no other bad symptom): one
    HOST_OOM_SUSPECTED on the first killed rank's node."""
    stream = context.event_stream
    bad = stream.bad_events()
    kills = [e for e in bad if e.symptom in SIGKILL]
    if not kills:
        return
    # (generic error lines of the fallback band, rank 0, are not another failure)
    others = {e.symptom for e in bad if e.symptom and context.registry.rank(e.symptom) > 0} - ECHOES
    if others or any(e.symptom in STOPS for e in stream.query()):
        return
    if (context.job.state or "").upper() in ("CANCELLED", "TIMEOUT", "PREEMPTED", "DEADLINE", "NODE_FAIL"):
        return
    first = min(kills, key=lambda e: (e.line_num or 0))
    stream.add(EventSpec(type="bad_node", symptom="HOST_OOM_SUSPECTED", node=first.node, fields={}),
               rule="SigkillAloneIsHostOom", cause=first,
               reason="SIGKILL with no scheduler stop and no other failure: most often the OOM killer")


@accumulator_def(
    name="DataPrepProgress", author=AUTHOR, trigger_re=r"\d%\|[^|\n]*\|[^\n]*?(?:examples|ba)/s\]",
    sources=("applog",), max_lines=0,
    symptoms=(),
    tests=[
        {"line": "Tokenizing Prompts (num_proc=64):  92%|█████████▏| 328986/359152 [29:58<12:05, 41.59 examples/s]\n",
         "expect": "data", "captures": {"kind": "data_prep_progress", "elapsed_s": "1798"}},
        {"line": "Running tokenizer on dataset: 47%|████▊ | 1695000/3634744 [30:09<33:25, 967.30 examples/s]\n",
         "expect": "data", "captures": {"elapsed_s": "1809"}},
        {"line": " 45%|████▌     | 1400/3100 [29:58<36:15,  1.28s/it]\n", "expect": "nothing"},
        {"line": "Epoch 0:   0%|          | 1/109375 [00:01<37:20:13,  0.81it/s, loss_step=14.90]\n",
         "expect": "nothing"},
    ],
)
# rulekit: ignore[RK306]  (a progress bar glued to an error is read by the error's rule too, on purpose)
class DataPrepProgress(Accumulator):
    """A `datasets`-style bar (`examples/s`, `ba/s`) whose description names data preparation:
    its elapsed time, as data."""

    def __init__(self, ctx, line, match):
        super().__init__(ctx, line, match)
        self.found = data_prep_progress(line)

    def finalize(self):
        if self.found is None:
            return []
        desc, elapsed = self.found
        return [EventSpec(type="data", fields={"kind": "data_prep_progress", "desc": desc[:120],
                                               "elapsed_s": str(elapsed)})]
