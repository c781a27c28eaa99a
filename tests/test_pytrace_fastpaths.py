"""The bundled Python-exception helpers' shortcuts read what their plain forms read:
`pytrace.cut` (an anchored prefix tried only at the start) is `sub(count=1)`,
`cut_rank_prefix` (the rank prefix tried only on a text that may start one),
`classify` (its CUDA and distributed patterns searched only when a word they need
is there) and `python_tail.tail_exception` (prefix patterns cut from the start,
the compose and progress-bar ones tried only when their `|` / `/s]` is there)
give what the plain versions below give.

Data: generated lines (hypothesis) built from the prefixes, exception names and
messages the rules' own inline tests and REFERENCE.md show.
"""
from __future__ import annotations

import re
import sys

from hypothesis import given, settings, strategies as st

from rulekit.rules.loader import load_corpus

load_corpus(None)  # imports the bundled rule modules
_TAIL = next(m for k, m in sys.modules.items() if k.endswith(".python_tail"))
_PYTRACE = next(m for k, m in sys.modules.items() if k.endswith(".common.pytrace"))


def plain_classify(exc_type: str, msg: str):
    p = _PYTRACE
    short = exc_type.rsplit(".", 1)[-1]
    if short in ("ChildFailedError", "InjectedException", "CalledProcessError", "ProcessExitedException",
                 "ProcessRaisedException"):
        return None
    if p._INTERRUPT.search(exc_type):
        return "interesting_node", "PYTHON_INTERRUPTED"
    if p._CUDA.search(exc_type) or p._CUDA.search(msg):
        return "bad_node", "PYTHON_CUDA_ERROR"
    if p._DISTRIBUTED.search(exc_type) or p._DISTRIBUTED.search(msg):
        return "bad_node", "PYTHON_DISTRIBUTED_ERROR"
    if p._IMPORT.search(exc_type):
        return "bad_node", "PYTHON_IMPORT_ERROR"
    return "bad_node", "PYTHON_EXCEPTION"


def plain_tail_exception(line: str):
    t, p = _TAIL, _PYTRACE
    text = p.ANSI.sub("", line).rstrip("\r\n")
    for _ in range(4):
        before = text
        text = p.RANK_PREFIX.sub("", text, count=1)
        text = t._COMPOSE.sub("", text, count=1)
        text = t._LOGGER.sub("", text, count=1)
        text = t._BAR.sub("", text, count=1)
        if text == before:
            break
    exc = p.exception_of(text)
    if exc is None or not exc[1]:
        return None
    short = exc[0].rsplit(".", 1)[-1]
    if not re.search(r"(?:Error|Exception)$", short) or t._C_RESULT.match(short):
        return None
    return exc


_PREFIX = st.sampled_from(["", "15: ", "[rank3]: ", "15: [rank15]: ", "[default0]:", "vllm-1  | ", "svc | ",
                           "ERROR 11-18 18:07:28 engine.py:366] ", "[2026-01-01T00:00:00Z] INFO 01-01 00:00:00 a.py:1] ",
                           " 45%|████▌     | 1400/3100 [29:58<36:15,  1.28s/it]", "10/10 [00:01<00:00, 9.1it/s]",
                           "x 3.2 examples/s]", "\x1b[31m", "(RayWorker pid=4242, ip=10.0.0.2) ", "  ", "\t"])
_TYPE = st.sampled_from(["RuntimeError", "ValueError", "torch.distributed.DistBackendError", "AssertionError",
                         "KeyboardInterrupt", "ModuleNotFoundError", "ImportError", "ncclUnhandledCudaError",
                         "cudaErrorLaunchFailure", "torch.OutOfMemoryError", "ChildFailedError", "MyException",
                         "pkg.SomeFailure", "Exception", "UserWarning", "GlooError", "c10d.Error", "SystemExit"])
_MSG = st.sampled_from(["", "bad value", "CUDA error: an illegal memory access was encountered",
                        "NCCL error in: ProcessGroupNCCL.cpp:1970", "Connection reset by peer", "Broken pipe",
                        "Socket Timeout", "[Gg]loo", "gloo", "Watchdog caught collective operation timeout",
                        "NCCLX", "xNCCL", " NCCL ", "device-side assert triggered", "CUBLAS_STATUS_EXECUTION_FAILED",
                        "No space left on device (28)", "DistStoreError", "c10d", "loop", "\x1b[0m", "a | b",
                        "1/s] tail", "s/it] x"])
_LINE = st.builds(lambda a, b, t, m, e: f"{a}{b}{t}: {m}{e}", _PREFIX, _PREFIX, _TYPE, _MSG,
                  st.sampled_from(["", "\n", "\r\n", " "]))


@settings(max_examples=2000, deadline=None)
@given(_TYPE, _MSG, _MSG)
def test_classify_agrees_with_the_plain_version(exc_type, a, b):
    msg = a + b
    assert _PYTRACE.classify(exc_type, msg) == plain_classify(exc_type, msg)
    assert _PYTRACE.classify(msg.replace(" ", "") or "X", exc_type) == plain_classify(msg.replace(" ", "") or "X",
                                                                                     exc_type)


@settings(max_examples=2000, deadline=None)
@given(st.one_of(_LINE, st.builds(lambda p, m: p + m, _PREFIX, _MSG)))
def test_tail_exception_agrees_with_the_plain_version(line):
    assert _TAIL.tail_exception(line) == plain_tail_exception(line)


@given(st.sampled_from([_PYTRACE.RANK_PREFIX, _TAIL._COMPOSE, _TAIL._LOGGER, _TAIL._BAR]),
       st.builds(lambda a, b: a + b, _PREFIX, _PREFIX))
def test_cut_is_sub_once(rx, text):
    assert _PYTRACE.cut(rx, text) == rx.sub("", text, count=1)


_HEAD = st.sampled_from(["", " ", "\u2003", "\u00a0", "\t" * 9, "\u0663", "٣: ", "7", "(", "[", "x", "I", "W", "é"])


@settings(max_examples=1000, deadline=None)
@given(st.builds(lambda h, a, b: h + a + b, _HEAD, _PREFIX, st.one_of(_PREFIX, st.text(max_size=12))))
def test_prefix_prechecks_try_the_pattern_wherever_it_can_match(text):
    """`cut_rank_prefix` and tail_exception's `_LOGGER_FIRST` skip a text only where the
    anchored pattern cannot match it (Unicode digits and spaces included)."""
    assert _PYTRACE.cut_rank_prefix(text) == _PYTRACE.RANK_PREFIX.sub("", text, count=1)
    if text[:1] not in _TAIL._LOGGER_FIRST:
        assert _TAIL._LOGGER.match(text) is None
