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
Rotated files (`x.log.2.gz`, `x.log.1`, `x.log`) are read oldest first; a
`.gz` is decompressed as a stream, at most `max_decompressed_bytes` of it
(default 256 MiB; beyond, the rest is left out and recorded as a fault).  An
unreadable or corrupt file is a note, not a failure of the whole collector.
Every name from the attempt (node, job id, user, job name) is checked before
it becomes a path, and every file found must resolve inside the job's log
folder (`rulekit.blueprint.names`): a name or a symlink that would leave it is
refused and recorded as a fault, the other files are still read.
Reads files; interprets no line.
"""
from __future__ import annotations

import re
import zlib
from pathlib import Path
from typing import Any

from rulekit.blueprint import limits
from rulekit.blueprint.connectors.base import LogConnector
from rulekit.blueprint.limits import MAX_DECOMPRESSED
from rulekit.blueprint.model import Attempt, ConnectorError
from rulekit.blueprint.names import UnsafeName, glob_pattern, inside, path_under
from rulekit.inputs.bounded import GzipStream
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
    KEYS = {"type", "name", "root", "files", "max_decompressed_bytes"}
    FILE_KEYS = {"source", "glob", "format"}

    def __init__(self, root: str, base: Path, files: list[dict[str, str]], max_decompressed: int = MAX_DECOMPRESSED):
        self.root, self.base, self.files, self.max_decompressed = root, base, files, max_decompressed
        self.notes: list[str] = []
        self.faults: list[str] = []

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
        return cls(root, sec.base, files, sec.size("max_decompressed_bytes", MAX_DECOMPRESSED))

    def collect(self, attempt: Attempt) -> list[Observation]:
        root = path_under(self.base, self.root, attempt)  # UnsafeName: the connector fails, recorded
        if not root.is_dir():
            raise ConnectorError(f"log folder {root} does not exist")
        out: list[Observation] = []
        seen: set[Path] = set()
        for spec in self.files:
            nodes = list(attempt.nodes) if "{node}" in spec["glob"] else [None]
            for node in nodes:
                try:
                    pattern = glob_pattern(spec["glob"], attempt, node)
                except UnsafeName as e:
                    self.faults.append(f"{spec['source']} `{spec['glob']}`: {e}")
                    continue
                rank_rx = None
                if "{rank}" in pattern:
                    rank_rx = _rank_regex(pattern)
                    pattern = pattern.replace("{rank}", "*")
                deadline = limits.current()
                for p in sorted(root.glob(pattern), key=rotation_key):
                    if deadline is not None and deadline.expired():
                        self.faults.append(f"{deadline.what} of {deadline.seconds:g} s passed while listing "
                                           f"{spec['glob']}; later files not read")
                        return out
                    if p in seen or not p.is_file():
                        continue
                    seen.add(p)
                    rel = str(p.relative_to(root))
                    if not inside(p, root):
                        self.faults.append(f"{rel}: refused, it resolves outside the log folder {root}")
                        continue
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
            stream = GzipStream(p, self.max_decompressed)
            try:
                _size, more = stream.measure()  # one streaming pass: valid, and within the cap?
            except (OSError, EOFError, zlib.error) as e:
                self.notes.append(f"{rel}: not a readable gzip file ({e}); skipped")
                return None
            if more:
                self.faults.append(f"{rel}: decompresses to more than {self.max_decompressed} bytes "
                                   "(`max_decompressed_bytes`); the rest was not read")
            return Observation(source=spec["source"], format=spec["format"], node=node, label=rel, stream=stream)
        try:
            with open(p, "rb"):
                pass
        except OSError as e:
            self.notes.append(f"{rel}: {e.strerror}; skipped")
            return None
        return Observation(source=spec["source"], format=spec["format"], node=node, label=rel, path=p)


def _rank_regex(pattern: str) -> re.Pattern:
    """The expanded glob (values escaped as `[x]`) as a regex with the rank captured."""
    rx = "".join(_GLOB_RX.get(part, re.escape(part)) if not part.startswith("[") else re.escape(part[1:-1])
                 for part in _GLOB_TOKENS.findall(pattern))
    return re.compile("^" + rx + "$")


_GLOB_TOKENS = re.compile(r"\{rank\}|\[[^\]]+\]|\*|\?|[^*?\[{]+|.")
_GLOB_RX = {"{rank}": r"(\d+)", "*": "[^/]*", "?": "[^/]"}
