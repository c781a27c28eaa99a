"""Very long lines, read in steps: the sizes that make a line "long" and the checks of
a span of a chunk that never copy it whole.  Shared by the chunk reader (`scan`) and the
acceleration structure (`accel`); knows nothing of rules or patterns.
"""
from __future__ import annotations

import codecs

LONG_LINE = 1 << 16  # a line at least this long is read through a view of its chunk, never copied whole
LINE_STEP = 1 << 20  # how much of a line longer than its chunk is read at a time


def span_is_utf8(buf: bytes, start: int, end: int) -> bool:
    """Whether `buf[start:end]` is valid UTF-8, decoded `LINE_STEP` bytes at a time."""
    dec = codecs.getincrementaldecoder("utf-8")("strict")
    try:
        for b in range(start, end, LINE_STEP):
            dec.decode(buf[b:min(end, b + LINE_STEP)])
        dec.decode(b"", final=True)
    except UnicodeDecodeError:
        return False
    return True


def span_isascii(buf: bytes, start: int, end: int) -> bool:
    """`buf[start:end].isascii()`, copying at most `LINE_STEP` bytes at a time."""
    if end - start < LONG_LINE:
        return buf[start:end].isascii()
    for b in range(start, end, LINE_STEP):
        if not buf[b:min(end, b + LINE_STEP)].isascii():
            return False
    return True
