"""Python traceback parsing shared by the traceback and elastic accumulators.

Pure helpers over single lines: strip the rank prefixes a launcher adds, tell an
exception line from a frame line, classify an exception into a symptom.  Must not
touch events or the job; no I/O.
"""
from __future__ import annotations

import re

# `[rank3]: `, `[default3]:`, `3: ` (srun -l), Ray's `(RayWorker pid=4242, ip=10.0.0.2) `,
# optionally after whitespace
RANK_PREFIX = re.compile(r"^\s{0,8}(?:\[(?:rank|default)\d+\]:\s?|\d+: |\([\w.:-]+(?: pid=\d+)?(?:, ip=[\d.]+)?\) )")
TRACEBACK = "Traceback (most recent call last):"
CHAIN_SEPARATORS = (
    "The above exception was the direct cause of the following exception:",
    "During handling of the above exception, another exception occurred:",
)
# `pkg.mod.SomeError: message` / `KeyboardInterrupt` / `AssertionError`
EXC_LINE = re.compile(
    r"^(?P<type>(?:[A-Za-z_]\w*\.)*(?:[A-Za-z_]\w*(?:Error|Exception|Interrupt|Exit|Failure|Timeout|Warning|Iteration)|Exception)"
    r"|(?:[A-Za-z_]\w*\.)+[A-Z]\w*)(?::\s?(?P<msg>.*))?$")


ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def strip_prefix(line: str) -> str:
    """The line without ANSI colour codes, a launcher rank prefix and trailing newline/CR."""
    return cut_rank_prefix(strip_ansi(line)).rstrip("\r\n")


def cut_rank_prefix(text: str) -> str:
    """`text` without a launcher rank prefix (`cut(RANK_PREFIX, text)`), the pattern tried
    only where it can match: on a text starting with whitespace, `[`, `(` or a digit."""
    c = text[:1]
    if c and (c in "[(" or c.isdecimal() or c.isspace()):
        return cut(RANK_PREFIX, text)
    return text


def strip_ansi(line: str) -> str:
    """The line without ANSI colour codes (looked for only where there is an escape)."""
    return ANSI.sub("", line) if "\x1b" in line else line


def cut(prefix: re.Pattern, text: str) -> str:
    """`prefix.sub("", text, count=1)` for a pattern anchored with `^`: its one possible
    match is at the start, so only that position is tried (`sub` tries them all)."""
    m = prefix.match(text)
    return text[m.end():] if m is not None else text


def exception_of(text: str) -> tuple[str, str] | None:
    """(type, message) when `text` (prefix stripped) is a final exception line."""
    if not text or text[0].isspace():
        return None
    m = EXC_LINE.match(text)
    if not m:
        return None
    return m.group("type"), (m.group("msg") or "").strip()


_DISTRIBUTED = re.compile(r"DistBackendError|DistNetworkError|DistStoreError|DistError|\bNCCL\b|ProcessGroupNCCL|"
                          r"ncclRemoteError|ncclSystemError|Watchdog caught|collective operation timeout|[Gg]loo|c10d|"
                          r"Connection reset by peer|Broken pipe|Socket Timeout|monitoredBarrier|store based barrier")
_CUDA = re.compile(r"CUDA error|CUDA out of memory|OutOfMemoryError|AcceleratorError|CUBLAS_STATUS|CUDNN_STATUS|"
                   r"cudaError|device-side assert")
# every match of `_CUDA` / `_DISTRIBUTED` holds one of these: a text without any is not
# searched (an alternation of words is tried at every position: ~30,000 instructions a line)
_CUDA_WORDS = ("CUDA", "OutOfMemoryError", "AcceleratorError", "CUBLAS_STATUS", "CUDNN_STATUS", "cudaError",
               "device-side assert")
_DISTRIBUTED_WORDS = ("Dist", "NCCL", "nccl", "Watchdog caught", "collective operation timeout", "loo", "c10d",
                      "Connection reset by peer", "Broken pipe", "Socket Timeout", "monitoredBarrier",
                      "store based barrier")
_INTERRUPT = re.compile(r"(?:^|\.)(?:KeyboardInterrupt|SystemExit|SignalException)$")
_IMPORT = re.compile(r"(?:^|\.)(?:ModuleNotFoundError|ImportError)$")


def classify(exc_type: str, msg: str) -> tuple[str, str] | None:
    """(emit type, symptom) for the nearest-cause exception, or None to emit nothing.

    Launcher wrappers (ChildFailedError, CalledProcessError) and injected faults have their own rules;
    CUDA errors are already events of the CUDA text rules (kept here as interesting
    evidence); distributed errors are victims; interrupts mean the job was stopped."""
    short = exc_type.rsplit(".", 1)[-1]
    if short in ("ChildFailedError", "InjectedException", "CalledProcessError", "ProcessExitedException",
                 "ProcessRaisedException"):
        return None
    if _INTERRUPT.search(exc_type):
        return "interesting_node", "PYTHON_INTERRUPTED"
    both = f"{exc_type}\n{msg}"  # (no word holds a newline: one look at both)
    if _mentions(_CUDA_WORDS, both) and (_CUDA.search(exc_type) or _CUDA.search(msg)):
        return "bad_node", "PYTHON_CUDA_ERROR"
    if _mentions(_DISTRIBUTED_WORDS, both) and (_DISTRIBUTED.search(exc_type) or _DISTRIBUTED.search(msg)):
        return "bad_node", "PYTHON_DISTRIBUTED_ERROR"
    if _IMPORT.search(exc_type):
        return "bad_node", "PYTHON_IMPORT_ERROR"
    return "bad_node", "PYTHON_EXCEPTION"


def _mentions(words: tuple[str, ...], text: str) -> bool:
    """Whether `text` holds one of `words` (what every match of the pattern they guard holds)."""
    for w in words:
        if w in text:
            return True
    return False
