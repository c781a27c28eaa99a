"""A job's log open in the editor: the error lines no rule of the corpus explains (RK640),
and the draft of a rule for one of them ("Draft a rule from this line").

Which documents: a file in or under a folder holding a `job.toml` (a job directory,
docs/architecture.md; its `job.toml`, `observations.jsonl`, `expected.json` and `fr/`
dumps are not logs), and any document the editor calls `log` (languageId).  The
source is the job directory's: `syslog/<node>.log` is the node's syslog, anything else
an application log (a `scheduler` or `syslog` folder in the path of a loose log says so).

Which lines: exactly those `rulekit mine` lists (`rulekit.analysis.mine`
`unexplained_in_observations`: the generic fallback keeps them, no other rule reads
them), clustered with its `Miner` so each message names the template the line reads as
and the component the error-line vocabulary gives it.  Bounded: the first `max_bytes`
of the text are read, at most `cap` lines get a diagnostic, and one RK641 says when
either bound was hit.

The draft: `rulekit.analysis.draft` (`make_drafts` then `validate` against the corpus's
rule folders as saved: check, the draft's inline tests with the line as its positive,
the overlap lint); a draft refused only for an overlap is still offered, its comment
naming the other rule and the witness line.  Pure but for reading `job.toml` and the
validation's temporary folder; no LSP types.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from rulekit.analysis.mine import Miner, Unexplained, unexplained_in_observations
from rulekit.diagnostics import Diagnostic, Span
from rulekit.inputs.jobdir import APPLOG_SUFFIXES
from rulekit.inputs.observation import Observation
from rulekit_lsp.features import Edit

MAX_UP = 6  # folders looked through, upward from a log, for the job.toml of its job directory
NOT_LOGS = {"job.toml", "observations.jsonl", "expected.json", "README.md", "generate.py"}
DRAFTS_FILE = "drafts.toml"


def job_dir_of(path: str) -> Path | None:
    """The nearest folder above `path` (at most MAX_UP levels) holding a job.toml."""
    p = Path(path).parent
    for _ in range(MAX_UP):
        if (p / "job.toml").is_file():
            return p
        if p.parent == p:
            break
        p = p.parent
    return None


def is_job_log(path: str, language_id: str | None) -> bool:
    """Does the editor's document get unexplained-line diagnostics?"""
    if language_id == "log":
        return True
    name = os.path.basename(path)
    if name in NOT_LOGS or Path(path).suffix not in APPLOG_SUFFIXES:
        return False
    jd = job_dir_of(path)
    return jd is not None and "fr" not in Path(path).relative_to(jd).parts[:-1]


@dataclass(frozen=True)
class LogPlace:
    """Where a log sits: its job (id, nodes), source, node and label (path in the job directory)."""

    job_id: str
    nodes: tuple[str, ...]
    source: str
    node: str | None
    label: str
    job: Any = None  # the JobInfo attribution would use


def place_of(path: str) -> LogPlace:
    from rulekit.diagnostics import RulekitError
    from rulekit.inputs.jobdir import read_job_toml
    from rulekit.inputs.jobinfo import JobInfo

    p = Path(path)
    jd = job_dir_of(path)
    rel = p.relative_to(jd).parts if jd is not None else p.parts[-2:]
    source, node = "applog", None
    if jd is not None and len(rel) == 2 and rel[0] == "syslog":
        source, node = "syslog", p.stem
    elif jd is None and ("syslog" in rel[:-1] or "scheduler" in rel[:-1]):
        source = "syslog" if "syslog" in rel[:-1] else "scheduler"
    job = None
    if jd is not None:
        syslog = jd / "syslog"
        nodes = sorted(q.stem for q in syslog.iterdir() if q.suffix in APPLOG_SUFFIXES) if syslog.is_dir() else []
        try:
            job = read_job_toml(jd / "job.toml", jd.name, nodes)
        except (RulekitError, OSError):  # a broken job.toml has its own diagnostics (`rulekit attribute`)
            job = None
    if job is None:
        job = JobInfo(id=(jd or p.parent).name or "log")
    return LogPlace(job.id, tuple(job.nodes), source, node, "/".join(rel), job)


@dataclass
class LogReading:
    """What one reading of a log found: diagnostics and, per line, the unexplained line."""

    diagnostics: list[Diagnostic] = field(default_factory=list)
    lines: dict[int, Unexplained] = field(default_factory=dict)
    total: int = 0  # unexplained lines found (before the cap)


def unexplained(engine: Any, path: str, text: str, cap: int, max_bytes: int,
                stop: Callable[[], bool] | None = None) -> LogReading | None:
    """The RK640 (and RK641) diagnostics of one log's text; None when `stop` ended the reading."""
    place = place_of(path)
    data = text.encode("utf-8", "surrogateescape")
    cut = len(data) > max_bytes
    if cut:
        data = data[:max_bytes]
        data = data[:data.rfind(b"\n") + 1] or data
    obs = Observation(source=place.source, node=place.node, label=place.label, data=data)
    got = unexplained_in_observations(engine, place.job, [obs], stop)
    if got is None:
        return None
    lines_of = text.split("\n")
    out = LogReading()
    miner = Miner()
    nodes = [*place.nodes, *([place.node] if place.node else [])]
    members: list[tuple[Unexplained, int]] = []
    got = [u for u in got if u.file == place.label]  # not the job record's own scheduler line
    out.total = len(got)
    for u in got:
        if u.line_num is None or u.line_num in out.lines:
            continue
        t = miner.add(u, nodes)
        out.lines[u.line_num] = u
        members.append((u, t.id if t is not None else -1))
    templates = {t.id: t.template for t in miner.templates()}
    for u, cid in members[:cap]:
        ln = u.line_num or 1
        line = lines_of[ln - 1] if 0 < ln <= len(lines_of) else u.text
        comp = f"`{u.component}`" if u.component else "no component"
        msg = f"unexplained error line ({comp}" + (f", {u.cue}" if u.cue else "") + \
            f"): no rule reads it; it reads as `{templates.get(cid, u.text)[:160]}`"
        out.diagnostics.append(Diagnostic("RK640", msg, Span(path, ln, 1, ln, len(line.rstrip('\r')) + 1), data={
            "line": u.text, "line_num": ln, "source": u.source or place.source, "node": u.node, "job": place.job_id,
            "file": place.label, "component": u.component, "cue": u.cue}))
    notes = []
    if len(members) > cap:
        notes.append(f"{cap} of {len(members)} unexplained error lines shown (`unexplainedMax`); "
                     "`rulekit mine` on the job directory lists them all, by template")
    if cut:
        notes.append(f"only the first {max_bytes >> 20} MiB of this log were read (`logMaxMiB`)")
    if notes:
        out.diagnostics.insert(0, Diagnostic("RK641", "; ".join(notes), Span(path, 1, 1, 1, 1)))
    return out


# ---- drafts ---------------------------------------------------------------------------------

@dataclass
class DraftResult:
    text: str | None  # the TOML to insert (None: no draft passed)
    rule: str = ""
    problems: list[str] = field(default_factory=list)
    overlaps: list[dict[str, Any]] = field(default_factory=list)


def unexplained_of(data: dict[str, Any]) -> Unexplained | None:
    """The unexplained line an RK640 diagnostic's data carries (None: not one of ours)."""
    if not isinstance(data, dict) or not isinstance(data.get("line"), str) or not data["line"].strip():
        return None
    ln = data.get("line_num")
    return Unexplained(str(data.get("job") or "log"), data.get("node") if isinstance(data.get("node"), str) else None,
                       data.get("file") if isinstance(data.get("file"), str) else None,
                       ln if isinstance(ln, int) else None, data["line"],
                       data.get("component") if isinstance(data.get("component"), str) else None,
                       data.get("cue") if isinstance(data.get("cue"), str) else None,
                       data.get("source") if isinstance(data.get("source"), str) else None)


def draft_for(u: Unexplained, engine: Any, rule_paths: Sequence[str]) -> DraftResult:
    """A checked draft of a rule for one unexplained line (its only positive test)."""
    from rulekit.analysis.draft import make_drafts, validate

    miner = Miner()
    miner.add(u, [u.node] if u.node else [])
    taken_rules = {r.name for r in (*engine.extractors, *engine.accumulators)}
    taken_symptoms = set(engine.registry.names()) | set(engine.registry.aliases())
    drafts = make_drafts(miner.templates(), taken_rules, taken_symptoms)
    if not drafts:
        return DraftResult(None, problems=["the line holds no literal word a pattern could match on"])
    try:
        accepted, rejected = validate(drafts, list(rule_paths))
    except ValueError as e:  # the saved corpus itself does not load
        return DraftResult(None, problems=[str(e)])
    if accepted:
        d = accepted[0]
        return DraftResult(d.text, d.rule)
    d = rejected[0]
    if d.overlaps and all(p.startswith("overlap:") for p in d.problems):
        head = "".join(f"# OVERLAPS `{o['rule']}` ({o['code']}): both match {o['witness']!r}; keep one, or make "
                       f"them disjoint\n" for o in d.overlaps)
        return DraftResult(head + d.text, d.rule, list(d.problems), list(d.overlaps))
    return DraftResult(None, d.rule, list(d.problems))


def target_files(folders: Sequence[str], files: Sequence[str]) -> list[str]:
    """The corpus's own TOML rule files a draft can be appended to, in order."""
    return sorted(p for p in files if p.endswith(".toml") and not p.endswith(".test.toml")
                  and os.path.dirname(p) in folders)


def new_drafts_file(folders: Sequence[str]) -> str:
    """A file name for a new drafts file in the corpus's first folder (not taken yet)."""
    base = Path(folders[0])
    p, i = base / DRAFTS_FILE, 2
    while p.exists():
        p, i = base / f"drafts-{i}.toml", i + 1
    return str(p)


HEADER = ("# Draft rules from unexplained log lines (the language server's \"Draft a rule from this line\"):\n"
          "# confirm every line marked CONFIRM; `rulekit check`, `rulekit test` and the overlap lint passed on each.\n")


def append_edit(path: str, current: str | None, draft: str) -> Edit:
    """An insertion at the end of `path` (whose text is `current`; None: a new file)."""
    if current is None:
        return Edit(Span(path, 1, 1, 1, 1), HEADER + "\n" + draft)
    lines = current.split("\n")
    end = Span(path, len(lines), len(lines[-1]) + 1, len(lines), len(lines[-1]) + 1)
    if not current.strip():
        return Edit(end, HEADER + "\n" + draft)
    return Edit(end, ("" if current.endswith("\n") else "\n") + "\n" + draft)
