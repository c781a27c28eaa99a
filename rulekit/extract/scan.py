"""Line-aligned chunking of log bytes and the scanner interface extraction uses.

A scanner takes a chunk of bytes that ends at a line boundary and returns every
(line_start, line_end, pattern_index, captures) hit, with the semantics of the
naive loop: for each line (split on b"\\n", one trailing b"\\r" removed, decoded
as UTF-8 with replacement), for each pattern, `pattern.search(line)`.
`make_scanner` picks the fast acceleration structure (rulekit.extract.accel); the
`NaiveScanner` here is the reference it is tested against.  No file I/O beyond
reading the stream it is given.
"""
from __future__ import annotations

from typing import Any, BinaryIO, Iterator, Protocol, Sequence

from rulekit.extract.regex import compile_pattern

CHUNK_SIZE = 4 << 20

Hit = tuple[int, int, int, dict]  # (line_start, line_end (excl. newline), pattern index, groupdict)


class Scanner(Protocol):
    def scan(self, chunk: bytes) -> list[Hit]: ...


def iter_chunks(stream: BinaryIO, size: int = CHUNK_SIZE) -> Iterator[bytes]:
    """Yield chunks that each end with b"\\n" (the last one may not).  A block that
    stops inside a line is completed with the rest of that line (however long), so
    no line is ever split and each chunk is copied at most once."""
    while True:
        block = stream.read(size)
        if not block:
            return
        if not block.endswith(b"\n"):
            rest = stream.readline()
            if rest:
                block += rest
        yield block


def decode_line(raw: bytes) -> str:
    if raw.endswith(b"\r"):
        raw = raw[:-1]
    return raw.decode("utf-8", "replace")


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
