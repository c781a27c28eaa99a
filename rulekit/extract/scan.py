"""Line-aligned chunking of log bytes and the scanner interface extraction uses.

A scanner takes a chunk of bytes that ends at a line boundary and returns every
(line_start, line_end, pattern_index, captures) hit, with the semantics of the
naive loop: for each line (split on b"\\n", one trailing b"\\r" removed, decoded
as UTF-8 with replacement), for each pattern, `pattern.search(line)`.
`make_scanner` picks the fast acceleration structure (rulekit.extract.accel); the
`NaiveScanner` here is the reference it is tested against.  A very long line costs
about its own bytes once more at most: it is read into one buffer, read through views
(`line_text`, `span_isascii`, `span_is_utf8`), and rules read at most its first
`RULE_TEXT_BYTES` as text (`rule_text`).  No file I/O beyond reading the stream it is
given.
"""
from __future__ import annotations

import io
from typing import Any, BinaryIO, Iterator, Protocol, Sequence

from rulekit.extract.regex import compile_pattern
from rulekit.extract.spans import LINE_STEP, LONG_LINE

CHUNK_SIZE = 4 << 20

Hit = tuple[int, int, int, dict]  # (line_start, line_end (excl. newline), pattern index, groupdict)


class Scanner(Protocol):
    def scan(self, chunk: bytes) -> list[Hit]: ...


RULE_TEXT_BYTES = 1 << 20  # of a line, what rules read as its text (`rule_text`)


def iter_chunks(stream: BinaryIO, size: int = CHUNK_SIZE) -> Iterator[bytes]:
    """Yield chunks that each end with b"\\n" (the last one may not).  A block that
    stops inside a line is completed with the rest of that line (however long), so
    no line is ever split.  A line running more than `LINE_STEP` past the block is
    read in steps into one growing buffer that becomes the chunk without a copy: a
    chunk holding a line of n bytes costs about n bytes, not the 2-3 n of joining
    pieces."""
    while True:
        block = stream.read(size)
        if not block:
            return
        if not block.endswith(b"\n"):
            rest = stream.readline(LINE_STEP)
            if rest.endswith(b"\n") or len(rest) < LINE_STEP:
                if rest:
                    block += rest
            else:
                block = _rest_of_long_line(stream, block, rest)
        yield block


def _rest_of_long_line(stream: BinaryIO, block: bytes, rest: bytes) -> bytes:
    """`block + rest +` the rest of the line, read `LINE_STEP` at a time into a BytesIO
    (it grows by reallocation, in place for a large buffer, and `getvalue` hands its
    bytes over without a copy)."""
    buf = io.BytesIO()
    buf.write(block)
    del block
    buf.write(rest)
    while not rest.endswith(b"\n"):
        rest = stream.readline(LINE_STEP)
        if not rest:
            break
        buf.write(rest)
    del rest
    return buf.getvalue()


def decode_line(raw: bytes) -> str:
    if raw.endswith(b"\r"):
        raw = raw[:-1]
    return raw.decode("utf-8", "replace")


def line_text(chunk: bytes, start: int, end: int) -> str:
    """`decode_line(chunk[start:end])`, a long line decoded from a view of the chunk
    (its bytes are not copied first)."""
    if end > start and chunk[end - 1] == 13:
        end -= 1
    if end - start < LONG_LINE:
        return chunk[start:end].decode("utf-8", "replace")
    return str(memoryview(chunk)[start:end], "utf-8", "replace")


def rule_text(chunk: bytes, start: int, end: int) -> str:
    """The text of the line `chunk[start:end]` that rules and line facts read: `line_text`
    of its first `RULE_TEXT_BYTES` bytes (a longer line is cut: its text would cost one to
    four times its bytes again; the patterns are matched against the whole line, so its
    hits and captures are kept).  The caller records a cut (`rule_text_cut`)."""
    if end - start > RULE_TEXT_BYTES:
        end = start + RULE_TEXT_BYTES
    return line_text(chunk, start, end)


def rule_text_cut(start: int, end: int) -> bool:
    """Whether `rule_text` cuts the line `[start:end]`."""
    return end - start > RULE_TEXT_BYTES




def iter_lines(chunk: bytes) -> Iterator[tuple[int, int]]:
    """(start, end) offsets of each line of a chunk, end excluding the newline."""
    pos = 0
    n = len(chunk)
    while pos < n:
        nl = chunk.find(b"\n", pos)
        if nl < 0:
            yield pos, n
            return
        yield pos, nl
        pos = nl + 1


class NaiveScanner:
    """Every pattern on every line: slow, obviously right; the differential reference."""

    def __init__(self, patterns: Sequence[str]):
        self.patterns = [compile_pattern(p) for p in patterns]

    def scan(self, chunk: bytes) -> list[Hit]:
        hits: list[Hit] = []
        for start, end in iter_lines(chunk):
            line = decode_line(chunk[start:end])
            for i, rx in enumerate(self.patterns):
                m = rx.search(line)
                if m is not None:
                    hits.append((start, end, i, m.groupdict()))
        return hits


def make_scanner(patterns: Sequence[str], sample: bytes | None = None, backend: str | None = None,
                 **accel: Any) -> Scanner:
    """The scanner extraction uses: the acceleration structure (rulekit.extract.accel).

    `backend` (default: the RULEKIT_SCANNER environment variable, else "auto")
    forces an implementation for tests and benchmarks: "naive", "re2",
    "hyperscan" or "auto" (Hyperscan when installed, else pyre2 + Aho-Corasick).
    `accel` goes to the Accelerator (`cache_dir`: the engine options' cache folder)."""
    from rulekit.extract.accel import Accelerator, forced_backend

    choice = (backend or forced_backend()).lower()
    if choice == "naive":
        return NaiveScanner(patterns)
    return Accelerator(patterns, sample=sample, backend=choice, **accel)
