"""Blame needs locality: whether a resource error is the node's own.

Two blame classes say "this node, if the resource is its own" (docs/blame.md):

`storage` (a full, read-only or failing filesystem or disk):
1. the same symptom remains on two or more nodes of the job → `environment`;
2. else a known path in the evidence (the event's `path` field, or the first
   absolute path in its line) decides: a node-local path (`/tmp`, `/dev/shm`,
   `/run`, local NVMe, container storage, ...) → `node`; a shared or user path
   (home directories and the caches under them, Lustre/GPFS/NFS mounts) →
   `environment`;
3. else the report must be the node's own: a line of that node's system log
   (kernel, daemons), or a line that names the node (`slurmstepd-node3: ...`) →
   `node`;
4. else (a program's line, no path that says where) → `environment`: a bare
   `No space left on device` is as often a shared filesystem or a quota as the
   node's disk.  The fleet's history, not one job, tells a node that keeps
   filling up.

`service` (a per-node service: prolog/epilog, container hook, GPU driver, fabric
manager, device plugin): `environment` when the same symptom remains on two or
more nodes (a cluster-wide configuration or image), else `node` — `suspected` in a
one-node job, where nothing shows that other nodes would have done better.

Which prefixes are local or shared is data (`rulekit/data/path_locality.toml`).
Pure functions: no I/O but reading that table once, no rule knowledge.
"""
from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Iterable

STORAGE, SERVICE = "storage", "service"
RESOURCE_BLAMES = (STORAGE, SERVICE)
_TABLE = Path(__file__).resolve().parent.parent / "data" / "path_locality.toml"
# an absolute path in a line: after a quote, bracket, `=`, `:` or space; stops at quotes,
# spaces, brackets and a trailing punctuation mark
_PATH = re.compile(r"""(?:^|(?<=[\s'"`(\[=:,]))(/(?:[^\s'"`()\[\]{}<>,;]+))""")
_TRAILING = ".:;,)!"
# sources whose lines are the node's own system (kernel, daemons), not a program's output
SYSTEM_SOURCES = ("syslog", "dmesg", "journal", "kernel")


@dataclass(frozen=True)
class PathTable:
    local: tuple[str, ...]
    shared: tuple[str, ...]

    def classify(self, path: str) -> str | None:
        """`local`, `shared`, or None (not known to be either): the longest matching prefix wins."""
        p = path.rstrip("/") or "/"
        best, kind = -1, None
        for k, prefixes in (("local", self.local), ("shared", self.shared)):
            for pre in prefixes:
                if (p == pre or p.startswith(pre + "/") or pre == "/") and len(pre) > best:
                    best, kind = len(pre), k
        return kind


@lru_cache(maxsize=1)
def default_table() -> PathTable:
    data = tomllib.loads(_TABLE.read_text(encoding="utf-8"))
    return PathTable(tuple(data["local"]["prefixes"]), tuple(data["shared"]["prefixes"]))


def path_in(text: str | None) -> str | None:
    """The first absolute path in a line (without trailing punctuation), or None."""
    if not text:
        return None
    for m in _PATH.finditer(text):
        p = m.group(1).rstrip(_TRAILING)
        if len(p) > 1 and not p.startswith("//"):
            return p
    return None


@dataclass(frozen=True)
class Locality:
    blame: str  # "node" or "environment"
    certain: bool
    reason: str


def resolve(kind: str, node: str, nodes_with_symptom: int, job_nodes: int, fields: dict, datum: str | None,
            source: str | None, table: PathTable | None = None) -> Locality:
    """The blame of one node's `storage` or `service` evidence (see the module's rules)."""
    if nodes_with_symptom >= 2:
        return Locality("environment", True, f"the same error on {nodes_with_symptom} nodes")
    alone = job_nodes <= 1
    if kind == SERVICE:
        return Locality("node", not alone, "a one-node job: nothing to compare with" if alone
                        else "on this node only")
    table = table or default_table()
    given = fields.get("path")
    path = given if isinstance(given, str) and given.startswith("/") else path_in(datum)
    kind_of_path = table.classify(path) if path else None
    if kind_of_path == "local":
        return Locality("node", True, f"{path} is a node-local path")
    if kind_of_path == "shared":
        return Locality("environment", True, f"{path} is a shared or user path")
    if (source or "").split("/")[0] in SYSTEM_SOURCES:
        return Locality("node", True, "the node's own system log")
    if datum and re.search(rf"(?<![\w.]){re.escape(node)}(?![\w-])", datum):
        return Locality("node", not alone, "a report naming the node")
    return Locality("environment", True, "no evidence that the storage is the node's own")


def nodes_per_symptom(pairs: Iterable[tuple[str, str]]) -> dict[str, int]:
    """symptom -> how many distinct nodes it remains on, from (symptom, node) pairs."""
    seen: dict[str, set[str]] = {}
    for symptom, node in pairs:
        seen.setdefault(symptom, set()).add(node)
    return {s: len(n) for s, n in seen.items()}
