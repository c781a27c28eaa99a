"""Local log files: globs per node and rank under a per-job root, rotated `.gz` read too.

    [[logs]]
    type = "local"
    root = "evidence/{job_id}"         # relative to the config file; {job_id} {attempt} {job_name} {user}
    [[logs.files]]
    source = "syslog"                  # the observation source extractors filter on
    glob = "syslog/{node}.log*"        # {node}: one glob per allocated node, lines belong to that node
    [[logs.files]]
    source = "applog"
    glob = "applog/rank-{rank}.log"    # {rank}: any rank; the node comes from the attempt's rank map
Rotated files (`x.log.2.gz`, `x.log.1`, `x.log`) are read oldest first.  An
unreadable or corrupt file is a note, not a failure of the whole collector.
Reads files; interprets no line.
"""
from __future__ import annotations

import gzip
import re
import zlib
from pathlib import Path
from typing import Any

from rulekit.blueprint.connectors.base import LogConnector
from rulekit.blueprint.model import Attempt, ConnectorError, render
from rulekit.inputs.observation import Observation

_ROT = re.compile(r"\.(\d+)(?:\.gz)?$|[-.](\d{8})(?:\.gz)?$")


def rotation_key(p: Path) -> tuple:
    """Oldest first: the highest rotation number, then dated files by date, the live file last."""
    m = _ROT.search(p.name)
    if m and m.group(1):
        return (0, -int(m.group(1)), p.name)
    if m and m.group(2):
        return (0, -10 ** 9 + int(m.group(2)), p.name)
    if p.name.endswith(".gz"):
        return (0, 0, p.name)
    return (1, 0, p.name)


def _rank_of(job: Attempt, rank: int) -> str | None:
    if rank in job.ranks:
        return job.ranks[rank]
    if job.tasks_per_node and job.nodes and 0 <= rank // job.tasks_per_node < len(job.nodes):
        return job.nodes[rank // job.tasks_per_node]
    if len(job.nodes) == 1:
        return job.nodes[0]
    return None


class LocalLogs(LogConnector):
    TYPE = "local"
    KEYS = {"type", "name", "root", "files"}
    FILE_KEYS = {"source", "glob", "format"}

    def __init__(self, root: str, base: Path, files: list[dict[str, str]]):
        self.root, self.base, self.files = root, base, files
        self.notes: list[str] = []

    @classmethod
    def from_config(cls, sec: Any) -> "LocalLogs":
        root = sec.get("root", str, ".")
        files = []
        for s in sec.subs("files", required=True):
            src = s.get("source", str, None, required=True)
            g = s.get("glob", str, None, required=True)
            fmt = s.get("format", str, "text")
            s.check_unknown(cls.FILE_KEYS)
            if g and (g.startswith("/") or ".." in Path(g).parts):
                s.error("`glob` is relative to `root` and stays inside it", "glob")
            if src and g:
                files.append({"source": src, "glob": g, "format": fmt})
        return cls(root, sec.base, files)

    def collect(self, attempt: Attempt) -> list[Observation]:
        root = self.base / render(self.root, attempt)
        if not root.is_dir():
            raise ConnectorError(f"log folder {root} does not exist")
        out: list[Observation] = []
        seen: set[Path] = set()
        for spec in self.files:
            targets = [(render(spec["glob"], attempt, n), n) for n in attempt.nodes] if "{node}" in spec["glob"] \
                else [(render(spec["glob"], attempt), None)]
            for pattern, node in targets:
                rank_rx = None
                if "{rank}" in pattern:
                    rank_rx = re.compile("^" + re.escape(pattern).replace(re.escape("{rank}"), r"(\d+)")
                                         .replace(r"\*", "[^/]*").replace(r"\?", "[^/]") + "$")
                    pattern = pattern.replace("{rank}", "*")
                for p in sorted(root.glob(pattern), key=rotation_key):
                    if not p.is_file() or p in seen:
                        continue
                    seen.add(p)
                    rel = str(p.relative_to(root))
                    obs_node = node
                    if rank_rx is not None and obs_node is None:
                        m = rank_rx.match(rel)
                        if m:
                            obs_node = _rank_of(attempt, int(m.group(1)))
                    o = self._read(p, rel, spec, obs_node)
                    if o is not None:
                        out.append(o)
        return out

    def _read(self, p: Path, rel: str, spec: dict[str, str], node: str | None) -> Observation | None:
        if p.suffix == ".gz":
            try:
                data = gzip.decompress(p.read_bytes())
            except (OSError, EOFError, zlib.error) as e:
                self.notes.append(f"{rel}: not a readable gzip file ({e}); skipped")
                return None
            return Observation(source=spec["source"], format=spec["format"], node=node, label=rel, data=data)
        try:
            with open(p, "rb"):
                pass
        except OSError as e:
            self.notes.append(f"{rel}: {e.strerror}; skipped")
            return None
        return Observation(source=spec["source"], format=spec["format"], node=node, label=rel, path=p)
