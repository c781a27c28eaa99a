"""Fleet components a result blames: nodes, and the HCA ports and switch ports its
evidence names (the article's fabric problems found by correlating port errors
across jobs).

`components(result)` -> rows (kind, name, node, symptom).  kind is `node`
(a bad node), `hca_port` (`node/mlx5_1:1`, `node/mlx5_1`, `node/mlx5@0000:0c:00.0`), `switch_port`
(`node/nvswitch0:28`, an NVSwitch link or port), counted only from a
blamed node's own lines.  Pure functions over the
result dict; no I/O.
"""
from __future__ import annotations

import re
from typing import Any, Iterator, NamedTuple

_HCA = [re.compile(r"\b(mlx5_\d+):(\d+)\b"), re.compile(r"\bhca (mlx5_\d+)\b"),
        re.compile(r"\b(mlx5_\d+)(?:/| port )(\d+)\b"), re.compile(r"\b(mlx5_\d+)\b"),
        re.compile(r"\bmlx5_core ([0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.\d)")]
_SWITCH = [re.compile(r"nvidia-nvswitch(\d+): SXid \([^)]*\): \d+, [^,]*, Link (\d+)"),
           re.compile(r"NVSwitch fatal error \d+ .*?physical id (\d+) port (\d+)"),
           re.compile(r"\bswitch (?:guid )?(0x[0-9a-fA-F]+)[ ,]+port (\d+)", re.I)]


class Component(NamedTuple):
    kind: str
    name: str
    node: str | None
    symptom: str | None


def hca_port(node: str | None, datum: str) -> str | None:
    for rx in _HCA:
        m = rx.search(datum)
        if m:
            port = m.group(2) if rx.groups > 1 else None
            dev = m.group(1) if m.group(1).startswith("mlx5_") else f"mlx5@{m.group(1)}"
            return f"{node or '?'}/{dev}" + (f":{port}" if port else "")
    return None


def switch_port(node: str | None, datum: str) -> str | None:
    for i, rx in enumerate(_SWITCH):
        m = rx.search(datum)
        if m:
            sw = f"nvswitch{m.group(1)}" if i < 2 else f"switch-{m.group(1).lower()}"
            return (f"{node or '?'}/{sw}:{m.group(2)}" if i < 2 else f"{sw}:{m.group(2)}")
    return None


def components(result: dict[str, Any]) -> Iterator[Component]:
    v = result.get("verdict") or {}
    seen: set[Component] = set()
    for b in v.get("bad_nodes") or []:
        for s in b.get("symptoms") or [None]:
            c = Component("node", b["node"], b["node"], s)
            if c not in seen:
                seen.add(c)
                yield c
    bad = {b["node"] for b in v.get("bad_nodes") or []}
    for e in v.get("evidence") or []:
        datum, node = e.get("datum") or "", e.get("node")
        # a port counts when a blamed node's own line names it (not a peer's report about it)
        if node in bad and node in datum and ("mlx5" in datum or "switch" in datum.lower()):
            for kind, name in (("hca_port", hca_port(e.get("node"), datum)),
                               ("switch_port", switch_port(e.get("node"), datum))):
                if name:
                    c = Component(kind, name, e.get("node"), e.get("symptom"))
                    if c not in seen:
                        seen.add(c)
                        yield c
