"""Bounded reads of untrusted bytes: decompression with an output cap, files read
up to a cap, and a compressed file as a stream.

- `inflate(data, max_out)`: zlib / gzip / raw deflate data decompressed in one
  loop of `zlib.decompressobj().decompress(chunk, max_length)`, so no more than
  `max_out` bytes (plus one 64 KiB step) are ever held; beyond the cap it
  raises `LimitExceeded` (a zip bomb costs its cap, not its ratio).
- `read_capped(f, max_bytes)`: a file object read whole up to the cap.
- `lines_capped(f, max_line)`: the lines of a file object, one held at a time,
  each at most `max_line` bytes (a longer one is skipped, not read into memory).
- `json_loads(data, max_values)`: JSON parsed only after an upper bound of the
  number of values it holds (its `[`, `{`, `,` and `:` bytes) is within the cap:
  `[[],[],...]` makes a 56-byte list of every 3 bytes, so a byte cap alone does
  not bound the memory of the parsed result.
- `GzipStream`: a `.gz` file as an object an `Observation` opens for reading
  (streaming: constant memory, decompressed again at each open), cut at
  `max_bytes`; `measure()` makes one pass to learn whether it is valid and
  within the cap, so the caller records a fault before anything reads it.

Each caller passes its limit from its settings; hitting one is the caller's
recorded fault.  No interpretation of the bytes.
"""
from __future__ import annotations

import gzip
import io
import json
import zlib
from pathlib import Path
from typing import BinaryIO

STEP = 64 * 1024  # bytes decompressed (or read) at a time
GZIP = zlib.MAX_WBITS | 16
ZLIB = zlib.MAX_WBITS
AUTO = zlib.MAX_WBITS | 32  # zlib or gzip header


class LimitExceeded(ValueError):
    """Untrusted input went past a size limit; `limit` is the limit in bytes."""

    def __init__(self, what: str, limit: int):
        self.what, self.limit = what, limit
        super().__init__(f"{what} is larger than the limit of {limit} bytes")


def inflate(data: bytes, max_out: int, wbits: int = AUTO, what: str = "the decompressed data") -> bytes:
    """`data` decompressed (every concatenated gzip member too), at most `max_out` bytes;
    LimitExceeded beyond, zlib.error / EOFError when corrupt or cut off."""
    out = bytearray()
    d = zlib.decompressobj(wbits)
    pending = data
    while True:
        chunk = d.decompress(pending, STEP)
        out += chunk
        if len(out) > max_out:
            raise LimitExceeded(what, max_out)
        pending = d.unconsumed_tail
        if d.eof:
            rest = d.unused_data
            if rest and wbits & 16 and rest.lstrip(b"\0"):  # another gzip member
                d, pending = zlib.decompressobj(wbits), rest
                continue
            return bytes(out)
        if not pending and not chunk:
            raise EOFError("compressed data ended before the end-of-stream marker")


def read_capped(f: BinaryIO, max_bytes: int, what: str = "the file") -> bytes:
    """All of `f` when it holds at most `max_bytes`; LimitExceeded otherwise (having
    read no more than the cap plus one step)."""
    buf = bytearray()
    while True:
        chunk = f.read(min(STEP, max_bytes + 1 - len(buf)))
        if not chunk:
            return bytes(buf)
        buf += chunk
        if len(buf) > max_bytes:
            raise LimitExceeded(what, max_bytes)


def lines_capped(f: BinaryIO, max_line: int):
    """(line number, the line's bytes, or None when longer than `max_line`), one line
    held at a time; the part of an over-long line past the cap is read and dropped."""
    n = 0
    while True:
        raw = f.readline(max_line + 1)
        if not raw:
            return
        n += 1
        if len(raw) > max_line and not raw.endswith(b"\n"):
            while True:  # drop the rest of the line
                rest = f.readline(STEP)
                if not rest or rest.endswith(b"\n"):
                    break
            yield n, None
            continue
        yield n, raw


def json_value_bound(data: bytes | str) -> int:
    """An upper bound on the number of JSON values `data` holds (containers, keys and
    values): one per `[`, `{`, `,` and `:`, plus one."""
    if isinstance(data, str):
        return data.count(",") + data.count("[") + data.count("{") + data.count(":") + 1
    return data.count(b",") + data.count(b"[") + data.count(b"{") + data.count(b":") + 1


class TooManyValues(LimitExceeded):
    pass


def json_loads(data: bytes | str, max_values: int, what: str = "the JSON") -> object:
    """`json.loads(data)` when `data` holds at most `max_values` values (TooManyValues
    otherwise, before anything is parsed); json.JSONDecodeError / RecursionError as json."""
    n = json_value_bound(data)
    if n > max_values:
        e = TooManyValues(what, max_values)
        e.args = (f"{what} holds up to {n} values, more than the limit of {max_values}",)
        raise e
    return json.loads(data)


class _Capped(io.RawIOBase):
    """A readable stream of at most `limit` bytes of `inner`."""

    def __init__(self, inner: BinaryIO, limit: int):
        self.inner, self.left = inner, limit

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:  # type: ignore[override]
        if self.left <= 0:
            return 0
        n = min(len(b), self.left)
        data = self.inner.read(n)
        b[:len(data)] = data
        self.left -= len(data)
        return len(data)

    def close(self) -> None:
        try:
            self.inner.close()
        finally:
            super().close()


class GzipStream:
    """A `.gz` file read as a stream of its decompressed bytes, cut at `max_bytes`."""

    def __init__(self, path: Path, max_bytes: int):
        self.path, self.max_bytes = Path(path), max_bytes
        self.size_out: int | None = None  # decompressed bytes (up to the cap), once measured

    def open(self) -> BinaryIO:
        return io.BufferedReader(_Capped(gzip.open(self.path, "rb"), self.max_bytes), STEP)

    def measure(self) -> tuple[int, bool]:
        """(decompressed bytes up to the cap, whether there was more): one streaming pass.
        Raises OSError / EOFError / zlib.error for a file that is not valid gzip."""
        n = 0
        with gzip.open(self.path, "rb") as f:
            while n <= self.max_bytes:
                chunk = f.read(STEP)
                if not chunk:
                    self.size_out = n
                    return n, False
                n += len(chunk)
        self.size_out = self.max_bytes
        return self.max_bytes, True

    def size(self) -> int:
        return self.size_out if self.size_out is not None else self.max_bytes
