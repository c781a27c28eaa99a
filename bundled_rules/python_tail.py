"""A Python exception's final line with no `Traceback` header above it (a pasted tail).

Users paste the last lines of a failed rank; a log connector returns the tail of a
step.  The final `pkg.SomeError: message` line is then all that is left of the
traceback, behind a rank prefix (`[rank3]: `, `15: [rank15]: `), a docker-compose
prefix (`vllm-1  | `), a logger prefix (`ERROR 11-18 18:07:28 engine.py:366] `) or
glued to a progress bar.  PythonTail reads such a line as PYTHON_EXCEPTION_TAIL,
classified like a traceback's exception (CUDA, distributed and interrupt exceptions
emit nothing here: their text rules and the traceback rules speak for them), and
DropTailInsideTraceback discards a tail that a full traceback of the same node
already reported.  Must not read lines that are not an exception's final line
(an exception quoted inside a message, an indented frame, a warning).
"""
import re
from functools import lru_cache

from rulekit.plugin import Accumulator, EventSpec, FilterPriority, accumulator_def, filter_def, register_symptom

from .common.pytrace import classify, cut, cut_rank_prefix, exception_of, strip_ansi

AUTHOR = "rulekit corpus"

register_symptom("PYTHON_EXCEPTION_TAIL", blame="workload", outcome="application", sub_domain="python", rank=560,
                 docs="A Python exception's final line with no Traceback header above it (a pasted or truncated "
                      "tail): the program raised it. Weaker than a whole traceback (PYTHON_EXCEPTION outranks it); "
                      "a CUDA, NCCL or hardware symptom outranks it too.")

# what may stand before the exception on its line: launcher rank prefixes (possibly two,
# `15: [rank15]: `), a compose service prefix, a `LEVEL MM-DD HH:MM:SS file.py:N] ` logger
# prefix, a bracketed CI timestamp, or the tail of a progress bar (`...it/s]`)
_COMPOSE = re.compile(r"^[\w.-]+\s+\|\s")
_LOGGER = re.compile(r"^(?:\[[\dT:.Z+-]+\]\s*)?(?:INFO|WARNING|ERROR|CRITICAL|DEBUG)\s+\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?\s+"
                     r"(?:\[[^\]]*\]|[\w.]+:\d+\])\s")
_LOGGER_FIRST = "[IWECD"  # what a `_LOGGER` match starts with (a text starting otherwise is not tried)
_BAR = re.compile(r"^.*?(?:it/s|s/it|examples/s)\]")
# `ncclUnhandledCudaError: Call to CUDA function failed.`, `cudaErrorLaunchFailure: ...`: a C library's
# result name printed like an exception; the NCCL / CUDA rules read those lines
_C_RESULT = re.compile(r"^(?:nccl|cuda|cu[A-Z]|CUDA|NCCL|Xid)")
TRIGGER = r"(?:^|[\s\]|:>])(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception): \S"


def tail_exception(line: str):
    """(type, message) when `line` ends a traceback that is not there; None otherwise."""
    text = strip_ansi(line).rstrip("\r\n")
    for _ in range(4):  # (the prefixes are anchored: `cut` tries only the start; `|` and `/s]`, `s/it]` are
        before = text   # in every compose and progress-bar match)
        text = cut_rank_prefix(text)
        if "|" in text:
            text = cut(_COMPOSE, text)
        if text[:1] in _LOGGER_FIRST:
            text = cut(_LOGGER, text)
        if "/s]" in text or "s/it]" in text:
            text = cut(_BAR, text)
        if text == before:
            break
    exc = exception_of(text)
    if exc is None or not exc[1]:
        return None
    short = exc[0].rsplit(".", 1)[-1]
    if not short.endswith(("Error", "Exception")) or _C_RESULT.match(short):
        return None
    return exc


@accumulator_def(
    name="PythonTail", author=AUTHOR, trigger_re=TRIGGER, sources=("applog",), max_lines=0,
    symptoms=("PYTHON_EXCEPTION_TAIL",),
    tests=[
        {"line": "AssertionError: Check batch related parameters. train_batch_size is not equal to "
                 "micro_batch_per_gpu * gradient_acc_step * world_size 256 != 2 * 18 * 7\n",
         "symptom": "PYTHON_EXCEPTION_TAIL", "captures": {"exc_type": "AssertionError"}},
        {"line": "15: [rank15]: AssertionError: num_layers should be divisible by pipeline_model_parallel_size\n",
         "symptom": "PYTHON_EXCEPTION_TAIL", "captures": {"exc_type": "AssertionError"}},
        {"line": "vllm-1  | ERROR 11-18 18:07:28 engine.py:366] ValueError: No available memory for the cache "
                 "blocks. Try increasing `gpu_memory_utilization` when initializing the engine.\n",
         "symptom": "PYTHON_EXCEPTION_TAIL", "captures": {"exc_type": "ValueError"}},
        {"line": "RuntimeError: It looks like your LightningModule has parameters that were not used in producing "
                 "the loss returned by training_step.\n", "symptom": "PYTHON_EXCEPTION_TAIL"},
        # near misses: an exception quoted in a message, a frame line, a CUDA / NCCL exception, a warning
        {"line": "WARNING: caught ValueError: bad value, retrying\n", "expect": "nothing"},
        {"line": "    raise ValueError(\"No available memory for the cache blocks. \"\n", "expect": "nothing"},
        {"line": "RuntimeError: CUDA error: an illegal memory access was encountered\n", "expect": "nothing"},
        {"line": "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled system "
                 "error\n", "expect": "nothing"},
        {"line": "UserWarning: TypedStorage is deprecated.\n", "expect": "nothing"},
        {"line": "[rank7]: ncclUnhandledCudaError: Call to CUDA function failed.\n", "expect": "nothing"},
    ],
)
# rulekit: ignore[RK306,RK307]  (any exception line is also a tail on purpose; the specific CUDA / NCCL / storage rules outrank it or the classifier drops the line)
class PythonTail(Accumulator):
    """One line: the exception it ends with, classified like a traceback's."""

    def __init__(self, ctx, line, match):
        super().__init__(ctx, line, match)
        self.tail = tail_of(line)

    def finalize(self):
        if self.tail is None:
            return []
        exc_type, msg = self.tail
        return [EventSpec(type="bad_node", symptom="PYTHON_EXCEPTION_TAIL", fields={"exc_type": exc_type, "exc_msg": msg})]


@lru_cache(maxsize=4096)
def tail_of(line: str):
    """(type, message cut to 500 characters) a trigger line reports as a tail, or None.
    Remembered (a pure function of the line): every rank of a job prints the same
    exception, and a long log repeats it on thousands of lines."""
    exc = tail_exception(line)
    if exc is None:
        return None
    kind = classify(*exc)
    if kind is None or kind[1] not in ("PYTHON_EXCEPTION", "PYTHON_IMPORT_ERROR"):
        return None
    return exc[0], exc[1][:500]


TRACEBACK_RULES = ("PythonTraceback", "RichTraceback")


@filter_def(name="DropTailInsideTraceback", author=AUTHOR, priority=FilterPriority.EARLY + 20)
def drop_tail_inside_traceback(context):
    """A tail line whose exception a whole traceback of the same node (and source) already
    reported, within that traceback's reach (400 lines after its header), is that
    traceback's last line: the tail event is discarded, the traceback's kept."""
    stream = context.event_stream
    tracebacks = [e for e in stream.query() if e.rule in TRACEBACK_RULES]
    if not tracebacks:
        return
    for tail in stream.query(symptom="PYTHON_EXCEPTION_TAIL"):
        for tb in tracebacks:
            if tb.node != tail.node or tb.source != tail.source:
                continue
            chain = set(str(tb.fields.get("chain", "")).split(" <- ")) | {tb.fields.get("exc_type"),
                                                                      tb.fields.get("final_exc_type")}
            if tail.fields.get("exc_type") in chain and 0 <= tail.line_num - tb.line_num <= 400:
                stream.discard([tail], rule="DropTailInsideTraceback",
                               reason=f"the traceback at line {tb.line_num} reports it")
                break
