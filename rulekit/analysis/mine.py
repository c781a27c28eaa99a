"""`mine`: the error lines no specific rule explains, clustered into templates and ranked.

A line is *unexplained* exactly when the engine's generic fallback keeps it: the
fallback accumulators (`AccumulatorRule.fallback`, the bundled `ErrorLine`, which asks
`rulekit.extract.errorline.reads_as_error`) hit it and no other rule reads it
(`rulekit.engine.explained`): the same notion attribution uses, not a second one.
From job directories the lines come from extraction (every such line, whatever the
verdict; the engine's repeat and group caps raised to MINE_REPEAT_CAP lines per rule, symptom,
node and component, since mining counts lines); from a result store they are the stored
evidence rows of a fallback rule (`rulekit.blueprint.rulestats.unexplained_in_store`:
only those kept in a verdict, under the store's caps: the store holds no whole logs).

The lines are masked (numbers, hex, PCI addresses, IPs, the job's node names: each
mask a named variable) and clustered with Drain (drain3, a fixed-depth parse tree:
one pass, memory bounded by the templates and a few examples per template, not by the
lines), then ranked by how many jobs, then nodes, then lines show each template.
Pure: reads job directories and rows it is given; writes nothing.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

from rulekit.engine.explained import explained_fallbacks
from rulekit.engine.session import Session
from rulekit.inputs.jobdir import read_job_dir

MAX_EXAMPLES = 5  # example lines kept per template (distinct masked forms first)
MAX_LINE = 2000  # characters of a line kept (errorline reads no more)
# events kept per (rule, symptom, node, captures), and per (rule, symptom, node) whatever the
# captures, while mining: the engine's repeat and group caps (32, 256) keep evidence small for a
# verdict, but mining counts lines, so it keeps more (bounded)
MINE_REPEAT_CAP = 5000

# message prefixes dropped before clustering: launcher rank tags, timestamps, syslog headers
_PREFIXES = [re.compile(p) for p in (
    r"^\s*(?:\[(?:rank|default)\d+\]:\s?|\d+: |\[\d+,\d+\]<std(?:out|err)>:\s?)",
    r"^\s*\[?\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?\]?\s*",
    r"^\s*[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \S+ ",
    r"^\s*kernel: (?:\[\s*\d+\.\d+\] )?",
)]
# masks, in order: (name, pattern in the line, RE2 pattern of the variable in a draft)
MASKS: tuple[tuple[str, str, str], ...] = (
    ("PCI", r"\b[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]\b", r"[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]"),
    ("IP", r"\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b", r"\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?"),
    ("HEX", r"\b0x[0-9a-fA-F]+\b", r"0x[0-9a-fA-F]+"),
    ("NUM", r"(?<![\w.])-?\d+(?:\.\d+)?(?![\w])", r"-?\d+(?:\.\d+)?"),
)
_MASK_RES = [(n, re.compile(p)) for n, p, _ in MASKS]
VAR_RE2 = {n: r for n, _, r in MASKS} | {"NODE": r"[\w.-]+"}
_MASK_TOKEN = re.compile(r"<(PCI|IP|HEX|NUM|NODE)>")


class _Stopped(Exception):
    """Raised from the extraction's progress callback to end a superseded reading."""


@dataclass(frozen=True)
class Unexplained:
    """One unexplained error line and where it comes from."""

    job: str
    node: str | None
    file: str | None
    line_num: int | None
    text: str
    component: str | None = None
    cue: str | None = None
    source: str | None = None


def fallback_rules(engine: Any) -> frozenset[str]:
    return frozenset(a.name for a in engine.accumulators if getattr(a, "fallback", False))


def unexplained_in_job(engine: Any, job_dir: str | Path, _nodes: list[str] | None = None) -> list[Unexplained]:
    """The unexplained error lines of one job directory (extraction only, no attribution);
    `_nodes`, when given, receives the job's allocated nodes."""
    jd = read_job_dir(job_dir)
    if _nodes is not None:
        _nodes.extend(jd.job.nodes)
    return unexplained_in_observations(engine, jd.job, jd.observations)


def unexplained_in_observations(engine: Any, job: Any, observations: Sequence[Any],
                                stop: Any = None) -> list[Unexplained] | None:
    """The unexplained error lines of some observations of one job (`JobInfo`): a job
    directory's, or one log the editor holds (`rulekit_lsp`).  `stop`, when given, is
    asked after each chunk extracted; when it returns true the reading ends and None
    is returned (a superseded request: no partial answer)."""
    engine = engine.with_options(repeat_cap=max(engine.options.repeat_cap, MINE_REPEAT_CAP),
                                 group_cap=max(engine.options.group_cap, MINE_REPEAT_CAP))
    fb = fallback_rules(engine)
    if not fb:
        return []

    def progress(_n: int) -> None:
        if stop():
            raise _Stopped

    with Session(engine, job) as s:
        try:
            s.ingest_batch(observations, progress if stop is not None else None)
        except _Stopped:
            return None  # type: ignore[return-value]
        events = s.manager.stream(s.context_id).all()
    gone = {e.id for e, _ in explained_fallbacks(events, fb)}
    out = []
    for e in events:
        if e.rule in fb and e.id not in gone and e.datum:
            out.append(Unexplained(job.id, e.node, e.label or e.source, e.line_num, e.datum[:MAX_LINE],
                                   e.fields.get("component"), e.fields.get("cue"), e.source))
    return out


def message_of(line: str) -> str:
    """The line without its rank tag, timestamp and syslog header (what a rule should match)."""
    text = line.rstrip("\r\n")
    for _ in range(3):
        before = text
        for p in _PREFIXES:
            text = p.sub("", text, count=1)
        if text == before:
            break
    return text.strip()


def mask(message: str, nodes: Sequence[str] = ()) -> str:
    """The message with its variables replaced by `<NAME>` tokens (node names first)."""
    out = message
    for n in sorted({n for n in nodes if n and len(n) > 2}, key=len, reverse=True):
        out = re.sub(r"(?<![A-Za-z0-9_])" + re.escape(n) + r"(?![\w-])", "<NODE>", out)
    for name, p in _MASK_RES:
        out = p.sub(f"<{name}>", out)
    return out


@dataclass
class Template:
    """A cluster: its Drain template over masked messages, counts and examples."""

    id: int
    template: str = ""
    lines: int = 0
    jobs: set[str] = field(default_factory=set)
    nodes: set[str] = field(default_factory=set)
    components: dict[str, int] = field(default_factory=dict)
    examples: list[Unexplained] = field(default_factory=list)
    variants: dict[str, Unexplained] = field(default_factory=dict)  # masked message -> first line of it

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "template": self.template, "lines": self.lines, "jobs": len(self.jobs),
                "nodes": len(self.nodes), "job_ids": sorted(self.jobs)[:20], "node_names": sorted(self.nodes)[:20],
                "component": self.component,
                "examples": [{"job": e.job, "node": e.node, "file": e.file, "line_num": e.line_num, "text": e.text}
                             for e in self.examples]}

    @property
    def component(self) -> str | None:
        return max(self.components, key=lambda c: (self.components[c], c)) if self.components else None


class Miner:
    """Drain over masked messages; feed lines with `add`, read ranked `templates()`."""

    def __init__(self, sim_th: float = 0.5, depth: int = 4, max_clusters: int | None = None):
        from drain3.drain import Drain

        self.drain = Drain(sim_th=sim_th, depth=depth, max_children=100, max_clusters=max_clusters)
        self.by_id: dict[int, Template] = {}
        self.lines = 0

    def add(self, u: Unexplained, nodes: Sequence[str] = ()) -> Template | None:
        """Cluster one line; its template (None for a line with no message)."""
        msg = message_of(u.text)
        if not msg:
            return None
        masked = mask(msg, [*nodes, *([u.node] if u.node else [])])
        cluster, _ = self.drain.add_log_message(masked)
        t = self.by_id.setdefault(cluster.cluster_id, Template(cluster.cluster_id))
        self.lines += 1
        t.lines += 1
        t.jobs.add(u.job)
        if u.node:
            t.nodes.add(u.node)
        if u.component:
            t.components[u.component] = t.components.get(u.component, 0) + 1
        if masked not in t.variants and len(t.variants) < MAX_EXAMPLES:
            t.variants[masked] = u
        if len(t.examples) < MAX_EXAMPLES and (u.job not in {e.job for e in t.examples} or len(t.examples) < 2):
            t.examples.append(u)
        return t

    def templates(self) -> list[Template]:
        out = []
        for c in self.drain.clusters:
            t = self.by_id.get(c.cluster_id)
            if t is None:
                continue
            t.template = c.get_template()
            out.append(t)
        return sorted(out, key=lambda t: (-len(t.jobs), -len(t.nodes), -t.lines, t.template))


def mine_jobs(engine: Any, job_dirs: Iterable[str | Path], miner: Miner | None = None) -> tuple[Miner, list[dict[str, Any]]]:
    """Mine job directories; (the miner, the jobs that could not be read: {"job_dir", "error"})."""
    from rulekit.diagnostics import RulekitError

    miner = miner or Miner()
    failed = []
    for d in job_dirs:
        try:
            job_nodes: list[str] = []
            jd_lines = unexplained_in_job(engine, d, job_nodes)
        except RulekitError as e:
            failed.append({"job_dir": str(d), "error": "; ".join(str(x) for x in e.diagnostics)})
            continue
        except OSError as e:
            failed.append({"job_dir": str(d), "error": str(e)})
            continue
        nodes = sorted({u.node for u in jd_lines if u.node} | set(job_nodes))
        for u in jd_lines:
            miner.add(u, nodes)
    return miner, failed


def report(miner: Miner, limit: int | None = None) -> dict[str, Any]:
    ts = miner.templates()
    return {"lines": miner.lines, "templates": len(ts),
            "ranked": [t.to_dict() for t in (ts if limit is None else ts[:limit])]}


def render_text(rep: dict[str, Any]) -> str:
    out = [f"{rep['lines']} unexplained error line(s) in {rep['templates']} template(s)"]
    for i, t in enumerate(rep["ranked"], 1):
        out.append(f"{i:>3}. [{t['jobs']} job(s), {t['nodes']} node(s), {t['lines']} line(s)"
                   f"{', ' + t['component'] if t['component'] else ''}] {t['template']}")
        for e in t["examples"][:3]:
            where = f"{e['file']}:{e['line_num']}" if e["file"] else "-"
            out.append(f"       {e['job']} {where}: {e['text'][:200]}")
    return "\n".join(out)


def render_markdown(rep: dict[str, Any]) -> str:
    def cell(s: str) -> str:
        return s.replace("|", "\\|").replace("`", "'")

    out = ["# Unexplained error lines", "",
           f"{rep['lines']} unexplained error line(s) in {rep['templates']} template(s), ranked by jobs, then nodes.",
           "", "| # | jobs | nodes | lines | component | template |", "|---|---|---|---|---|---|"]
    for i, t in enumerate(rep["ranked"], 1):
        out.append(f"| {i} | {t['jobs']} | {t['nodes']} | {t['lines']} | {t['component'] or ''} | "
                   f"`{cell(t['template'])}` |")
    for i, t in enumerate(rep["ranked"], 1):
        out += ["", f"## {i}. `{cell(t['template'])}`", ""]
        for e in t["examples"]:
            where = f"{e['file']}:{e['line_num']}" if e["file"] else ""
            out.append(f"- job `{e['job']}` {('`' + where + '`') if where else ''}: `{cell(e['text'][:300])}`")
    return "\n".join(out) + "\n"
