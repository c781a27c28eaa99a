"""The raw lines around each piece of evidence, taken from the observations the
Blueprint collected for an attempt and stored with its result, so the dashboard
shows a line in its context from what the store holds (it never opens a log, and
never a path a request names).

Bounded: `BEFORE` / `AFTER` lines around each evidence line, each cut at
`MAX_LINE_CHARS`, at most `MAX_WINDOWS` windows per result; an observation is read
in chunks up to its last wanted line only, and never past `MAX_BYTES` of it.  An
observation that cannot be read again (gone since) gives no window: the evidence
row then has no context link.  Knows nothing of HTTP or HTML.
"""
from __future__ import annotations

from typing import Any, Iterable

from rulekit.inputs.observation import Observation

BEFORE = 3
AFTER = 3
MAX_LINE_CHARS = 2000
MAX_WINDOWS = 400
MAX_BYTES = 1 << 30


def evidence_context(verdict: dict[str, Any] | None, observations: Iterable[Observation]) -> list[dict[str, Any]]:
    """`[{"source", "line_num", "first", "lines"}]`: for each distinct (source, line) of the
    verdict's evidence (root cause first), the lines `first`.. around it, in file order."""
    if not verdict:
        return []
    wanted: dict[str, set[int]] = {}
    for e in [*((verdict.get("root_cause") or {}).get("evidence") or []), *(verdict.get("evidence") or [])]:
        src, n = e.get("source"), e.get("line_num")
        if isinstance(src, str) and isinstance(n, int) and n > 0:
            got = wanted.setdefault(src, set())
            if sum(len(v) for v in wanted.values()) < MAX_WINDOWS or n in got:
                got.add(n)
    by_name: dict[str, list[Observation]] = {}
    for o in observations:
        by_name.setdefault(o.name, []).append(o)
    out: list[dict[str, Any]] = []
    for src, numbers in wanted.items():
        obs = by_name.get(src) or []
        if len(obs) != 1:  # unknown, or two observations under one name: which line is meant is not known
            continue
        try:
            lines = _read_around(obs[0], sorted(numbers))
        except (OSError, ValueError):
            continue
        for n in sorted(numbers):
            first = max(obs[0].first_line, n - BEFORE)
            window = [lines.get(i) for i in range(first, n + AFTER + 1)]
            if window[n - first] is None:
                continue  # the line is not in the observation (any more)
            while window and window[-1] is None:
                window.pop()
            out.append({"source": src, "line_num": n, "first": first, "lines": [w or "" for w in window]})
    return out


def _read_around(o: Observation, numbers: list[int]) -> dict[int, str]:
    """Line number -> text for every line within BEFORE / AFTER of `numbers`."""
    keep: set[int] = set()
    for n in numbers:
        keep.update(range(n - BEFORE, n + AFTER + 1))
    last = max(keep)
    got: dict[int, str] = {}
    line_no = o.first_line
    read = 0
    carry = b""
    for chunk in o.chunks():
        read += len(chunk)
        buf = carry + chunk
        start = 0
        while True:
            nl = buf.find(b"\n", start)
            if nl < 0:
                break
            if line_no in keep:
                got[line_no] = _text(buf[start:nl])
            line_no += 1
            start = nl + 1
            if line_no > last:
                return got
        carry = buf[start:]
        if len(carry) > MAX_LINE_CHARS * 4 and line_no not in keep:
            carry = b""  # a very long line nobody wants: do not hold it
        if read > MAX_BYTES:
            return got
    if carry and line_no in keep:
        got[line_no] = _text(carry)
    return got


def _text(raw: bytes) -> str:
    s = raw.rstrip(b"\r").decode("utf-8", "replace")
    return s if len(s) <= MAX_LINE_CHARS else s[:MAX_LINE_CHARS] + " …"
