"""Slurm hostlist syntax -> node names: `gpu[01-03,07],login1,rack[1-2]-n[1-2]`.
Zero padding is kept (`[08-10]` -> 08 09 10); several bracket groups in one
name expand as a product.  Raises ValueError on malformed input.  Pure."""
from __future__ import annotations

import itertools
import re


def _split_top(text: str) -> list[str]:
    out, depth, cur = [], 0, []
    for ch in text:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
            if depth < 0:
                raise ValueError(f"unbalanced ']' in hostlist {text!r}")
        if ch == "," and depth == 0:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    if depth:
        raise ValueError(f"unbalanced '[' in hostlist {text!r}")
    out.append("".join(cur))
    return [x.strip() for x in out if x.strip()]


def _range(spec: str, text: str) -> list[str]:
    vals: list[str] = []
    for part in spec.split(","):
        m = re.fullmatch(r"(\d+)(?:-(\d+))?", part.strip())
        if not m:
            raise ValueError(f"bad range {part!r} in hostlist {text!r}")
        lo, hi = m.group(1), m.group(2) or m.group(1)
        if int(hi) < int(lo):
            raise ValueError(f"descending range {part!r} in hostlist {text!r}")
        width = len(lo) if lo.startswith("0") else 0
        vals += [str(i).zfill(width) for i in range(int(lo), int(hi) + 1)]
    return vals


def expand(text: str | None) -> list[str]:
    if not text or text.strip() in ("None assigned", "(null)", "None"):
        return []
    out: list[str] = []
    for item in _split_top(text):
        pieces = re.split(r"\[([^\]]*)\]", item)
        choices = [[p] if i % 2 == 0 else _range(p, text) for i, p in enumerate(pieces)]
        out += ["".join(c) for c in itertools.product(*choices)]
    return out
