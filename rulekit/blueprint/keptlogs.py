"""What the result store keeps of an attempt's logs, so its evidence can be rebuilt
without the connectors (`rulekit blueprint export-test`): bounded, in line order,
with the line numbers the verdict cites.

Per attempt, the collected observations are kept whole, in collection order, while
their text stays within `KEEP_BYTES` together; an observation that would pass the
budget keeps only the lines around its evidence (the windows of
`rulekit.blueprint.linecontext`, ±3 lines, that the dashboard shows).  Each kept
observation is a list of runs `[first_line, [lines...]]`, so a sparse one still puts
every line at its number.  Reading stops at the budget (an observation is never read
past `KEEP_BYTES + 1` bytes here).  What an export from a sparse observation can miss:
lines no rule read as evidence (a rule written later may need them), and events a
filter or refiner discarded.  Metric series are kept by the result itself
(`result["metrics"]`, with their samples).  No I/O but reading the observations.
"""
from __future__ import annotations

from typing import Any, Iterable

from rulekit.inputs.observation import Observation

KEEP_BYTES = 1 << 20  # the text of an attempt's observations kept whole, together
MAX_LINE_CHARS = 64 * 1024  # a longer line is cut (marked) in what is kept


def _cut(s: str) -> str:
    return s if len(s) <= MAX_LINE_CHARS else s[:MAX_LINE_CHARS] + " …"


def _read_whole(o: Observation, budget: int) -> list[str] | None:
    """The observation's lines, or None when its text is longer than `budget` bytes."""
    if o.lines is not None:
        lines = [str(x) for x in o.lines]
        return [_cut(x) for x in lines] if sum(len(x.encode()) + 1 for x in lines) <= budget else None
    buf, read = [], 0
    for chunk in o.chunks():
        read += len(chunk)
        if read > budget:
            return None
        buf.append(chunk)
    text = b"".join(buf).decode("utf-8", "replace")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [_cut(x.rstrip("\r")) for x in lines]


def keep(observations: Iterable[Observation], context: list[dict[str, Any]],
         budget: int = KEEP_BYTES) -> list[dict[str, Any]]:
    """`[{"source", "node", "format", "name", "complete", "runs": [[first_line, [lines]]]}]`
    for the observations of one attempt; `context`: the result's `evidence_context`."""
    windows: dict[str, list[dict[str, Any]]] = {}
    for w in context or []:
        windows.setdefault(str(w.get("source")), []).append(w)
    out = []
    left = budget
    for o in observations:
        lines = None
        if left > 0:
            try:
                lines = _read_whole(o, left)
            except (OSError, ValueError):
                lines = None
        if lines is not None:
            left -= sum(len(x.encode()) + 1 for x in lines)
            runs = [[o.first_line, lines]] if lines else []
            complete = True
        else:
            runs = _runs(windows.get(o.name) or [])
            complete = False
        out.append({"source": o.source, "node": o.node, "format": o.format, "name": o.name, "complete": complete,
                    "runs": runs})
    return out


def _runs(ws: list[dict[str, Any]]) -> list[list[Any]]:
    """Merge evidence windows (possibly overlapping) into runs of consecutive lines."""
    got: dict[int, str] = {}
    for w in ws:
        first = w.get("first")
        if not isinstance(first, int):
            continue
        for i, line in enumerate(w.get("lines") or []):
            got.setdefault(first + i, str(line))
    runs: list[list[Any]] = []
    for n in sorted(got):
        if runs and runs[-1][0] + len(runs[-1][1]) == n:
            runs[-1][1].append(got[n])
        else:
            runs.append([n, [got[n]]])
    return runs


def from_context(result: dict[str, Any]) -> list[dict[str, Any]]:
    """For a result stored without kept logs (written before the store kept them): the
    evidence windows it holds, one sparse observation per source."""
    by: dict[str, list[dict[str, Any]]] = {}
    for w in result.get("evidence_context") or []:
        by.setdefault(str(w.get("source")), []).append(w)
    nodes = {e.get("source"): e.get("node") for e in (result.get("verdict") or {}).get("evidence") or []
             if str(e.get("source") or "").startswith("syslog")}
    out = []
    for name, ws in by.items():
        src = name.split("/", 1)[0] if "/" in name else name
        out.append({"source": src, "node": nodes.get(name), "format": "text", "name": name, "complete": False,
                    "runs": _runs(ws)})
    return out
