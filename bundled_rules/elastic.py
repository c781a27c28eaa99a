"""torch elastic `ChildFailedError` report: the root-cause rank, its host and exit
code, as one event on that host.

The launcher prints a `Root Cause (first observed failure):` block naming the
first dead rank; the *reason* is in that rank's own output, so the event's symptom
only says how the rank died (signal / exit code).  Must not guess beyond the block.
"""
import re

from rulekit.plugin import Accumulator, EventSpec, accumulator_def

from .common.pytrace import strip_prefix

AUTHOR = "rulekit corpus"

_FIELD = re.compile(r"^\s+(?P<key>time|host|rank|exitcode|error_file|traceback)\s*:\s*(?P<val>.*)$")
_RANK = re.compile(r"^(?P<rank>-?\d+)(?: \(local_rank: (?P<local>\d+)\))?")
_EXIT = re.compile(r"^(?P<code>-?\d+)")
BY_EXIT = {"-6": "PROCESS_SIGABRT", "-7": "PROCESS_SIGBUS", "-9": "PROCESS_SIGKILL", "-11": "PROCESS_SEGFAULT",
           "-15": "PROCESS_SIGTERM", "134": "PROCESS_SIGABRT", "135": "PROCESS_SIGBUS", "137": "PROCESS_SIGKILL",
           "139": "PROCESS_SEGFAULT", "143": "PROCESS_SIGTERM"}


@accumulator_def(
    name="ElasticChildFailed", author=AUTHOR, trigger_re=r"ChildFailedError",
    sources=("applog",), max_lines=500,
    symptoms=tuple(sorted(set(BY_EXIT.values()) | {"PROCESS_EXIT_NONZERO"})),
    tests=[
        {"line": "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n"
                 "============================================================\ntrain.py FAILED\n"
                 "------------------------------------------------------------\nFailures:\n  <NO_OTHER_FAILURES>\n"
                 "------------------------------------------------------------\nRoot Cause (first observed failure):\n"
                 "[0]:\n  time      : 2026-08-13_08:21:22\n  host      : node0004\n  rank      : 6 (local_rank: 6)\n"
                 "  exitcode  : -6 (pid: 1246013)\n  error_file: <N/A>\n"
                 "  traceback : Signal 6 (SIGABRT) received by PID 1246013\n"
                 "============================================================\n",
         "symptom": "PROCESS_SIGABRT", "node": "node0004", "captures": {"rank": "6", "exitcode": "-6"}},
        {"line": "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \nRoot Cause (first observed failure):\n"
                 "[0]:\n  host      : node0002\n  rank      : 9 (local_rank: 1)\n  exitcode  : 1 (pid: 77)\n"
                 "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html\n"
                 "==========\n", "symptom": "PROCESS_EXIT_NONZERO", "node": "node0002"},
        {"line": "raise ChildFailedError(\n    name=entrypoint,\n", "expect": "nothing"},
    ],
)
class ElasticChildFailed(Accumulator):
    """Reads the Root Cause block of a ChildFailedError report."""

    def __init__(self, ctx, line, match):
        super().__init__(ctx, line, match)
        self.in_root = False
        self.values = {}
        self.header_lines = 0

    def feed(self, line):
        text = strip_prefix(line)
        if text.startswith("Root Cause"):
            self.in_root = True
            return True
        if not self.in_root:
            # header: rules, title, the Failures list; a blank line or a long header means
            # this is not a launcher report
            self.header_lines += 1
            return bool(text.strip()) and self.header_lines <= 400
        if text.startswith("====") or (text.startswith("[") and self.values and text.rstrip().endswith("]:")):
            return False
        m = _FIELD.match(text)
        if m:
            self.values[m.group("key")] = m.group("val").strip()
        return True

    def finalize(self):
        host = self.values.get("host")
        if not host and "rank" not in self.values:
            return []
        fields = {"elastic_root_cause": "true"}
        rm = _RANK.match(self.values.get("rank", ""))
        if rm:
            fields["rank"] = rm.group("rank")
            if rm.group("local"):
                fields["local_rank"] = rm.group("local")
        em = _EXIT.match(self.values.get("exitcode", ""))
        code = em.group("code") if em else None
        if code is not None:
            fields["exitcode"] = code
        if self.values.get("traceback"):
            fields["traceback"] = self.values["traceback"][:300]
        if host:
            fields["host"] = host
        symptom = BY_EXIT.get(code or "", "PROCESS_EXIT_NONZERO")
        node = host
        if not node and rm:
            node = self.ctx.job.rank_to_node(rm.group("rank"))
        return [EventSpec(type="bad_node", symptom=symptom, node=node, fields=fields)]
