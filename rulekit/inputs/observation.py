"""Observations: batches of evidence lines from one source (an application log, a
node's syslog, scheduler records), with the default node and provenance label.

An observation is read as line-aligned byte chunks, whatever it holds (a file
path, bytes, a list of text lines, or a `stream`: an object whose `open()` gives
a binary stream and `size()` its length, such as a bounded `.gz` reader), so
extraction never needs a whole file in memory.  No parsing of the lines themselves.
"""
from __future__ import annotations

import io
from pathlib import Path
from typing import Any, BinaryIO, Iterator, Sequence

from rulekit.rules.records import dataclass
from rulekit.extract.scan import CHUNK_SIZE, iter_chunks


@dataclass
class Observation:
    source: str  # applog | syslog | scheduler | ... (what extractor `source` filters name)
    format: str = "text"
    node: str | None = None  # node every line belongs to (syslog/<node>.log), if known
    label: str | None = None  # provenance: file path or record name
    path: Path | None = None
    data: bytes | None = None
    lines: Sequence[str] | None = None
    t_start: str | None = None
    t_end: str | None = None
    first_line: int = 1  # line number of the first line (for records that continue a file)
    stream: Any = None  # opens a binary stream (`rulekit.inputs.bounded.GzipStream`)

    def open(self) -> BinaryIO:
        if self.stream is not None:
            return self.stream.open()
        if self.path is not None:
            return open(self.path, "rb")
        if self.data is not None:
            return io.BytesIO(self.data)
        text = "\n".join(self.lines or ())
        if text:
            text += "\n"
        return io.BytesIO(text.encode("utf-8", "surrogateescape"))

    def chunks(self, size: int = CHUNK_SIZE) -> Iterator[bytes]:
        with self.open() as f:
            yield from iter_chunks(f, size)

    def size(self) -> int:
        if self.stream is not None:
            return int(self.stream.size())
        if self.path is not None:
            try:
                return self.path.stat().st_size
            except OSError:
                return 0
        if self.data is not None:
            return len(self.data)
        return sum(len(x) + 1 for x in self.lines or ())

    @property
    def name(self) -> str:
        return self.label or (str(self.path) if self.path else self.source)
