"""The job directory reader (README, "The job directory"): job.toml, applog/*.log, syslog/<node>.log,
fr/<prefix><rank> (flight-recorder dumps), observations.jsonl -> a JobInfo, the observations to
ingest, and notes.

Missing pieces are fine; unknown files are noted (RK504), never fatal; bad
records are reported (RK503) and skipped; refused flight-recorder dumps are RK507.
Files are not read here beyond job.toml, observations.jsonl and fr/ (dumps are
validated and packed here): logs are streamed by extraction.
"""
from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass, field
from datetime import date, datetime, time, timezone
from pathlib import Path
from typing import Any, Callable

from rulekit.diagnostics import Diagnostic, RulekitError, Severity, Span
from rulekit.inputs.jobinfo import (
    SLURM_STATES,
    ExecutionCancellation,
    JobInfo,
    JobInfoBuilder,
    JobInfoError,
    SchedulerFailure,
)
from rulekit.inputs.flight_recorder import (FRDumpError, dump_observation, observation_from_record, rank_from_name,
                                            read_dump_file)
from rulekit.inputs.observation import Observation
from rulekit.rules.toml_frontend import toml_error_span

APPLOG_SUFFIXES = {".log", ".out", ".err", ".txt"}
KNOWN_TOP = {"job.toml", "applog", "syslog", "fr", "observations.jsonl", "expected.json", "README.md", "generate.py"}
JOB_KEYS = {"id", "state", "nodes", "start", "end", "failed_node", "exit_code", "tasks_per_node", "ranks"}


@dataclass
class JobDir:
    path: Path
    job: JobInfo
    observations: list[Observation]
    notes: list[Diagnostic] = field(default_factory=list)

    def total_bytes(self) -> int:
        return sum(o.size() for o in self.observations)


def _bad(path: Path, msg: str, span: Span | None = None, code: str = "RK502") -> RulekitError:
    return RulekitError(Diagnostic(code, msg, span or Span(str(path), 1, 1)))


def _dt(v: Any, what: str, path: Path) -> datetime | None:
    if v is None:
        return None
    if isinstance(v, datetime):
        return v
    if isinstance(v, date):
        return datetime.combine(v, time(), tzinfo=timezone.utc)
    if isinstance(v, str):
        try:
            return datetime.fromisoformat(v.replace("Z", "+00:00"))
        except ValueError:
            raise _bad(path, f"`{what}` is not an RFC 3339 timestamp: {v!r}") from None
    raise _bad(path, f"`{what}` must be a timestamp")


def read_job_toml(path: Path, default_id: str, syslog_nodes: list[str]) -> JobInfo:
    try:
        return _read_job_toml(path, default_id, syslog_nodes)
    except JobInfoError as e:  # the builder's checks: point at job.toml
        raise RulekitError([d if d.span else d.with_span(Span(str(path), 1, 1)) for d in e.diagnostics]) from None


def _read_job_toml(path: Path, default_id: str, syslog_nodes: list[str]) -> JobInfo:
    data: dict[str, Any] = {}
    if path.exists():
        text = path.read_bytes().decode("utf-8", "replace")
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:
            raise _bad(path, f"job.toml is not valid TOML: {e}", toml_error_span(e, text, str(path))) from None
    job = data.get("job", {})
    if not isinstance(job, dict):
        raise _bad(path, "`job` must be a table: write `[job]`")
    unknown = set(job) - JOB_KEYS
    if unknown:
        raise _bad(path, f"unknown key(s) in [job]: {', '.join(sorted(unknown))}; known: {', '.join(sorted(JOB_KEYS))}")
    state = job.get("state")
    if state is not None:
        if not isinstance(state, str):
            raise _bad(path, "`state` must be a string such as FAILED")
        base = state.upper().split()[0].rstrip("+")
        if base not in SLURM_STATES:
            raise _bad(path, f"unknown job state {state!r}; expected one of {', '.join(sorted(SLURM_STATES))}")
        state = base
    nodes = job.get("nodes", syslog_nodes)
    if not isinstance(nodes, list) or not all(isinstance(n, str) for n in nodes):
        raise _bad(path, "`nodes` must be a list of node names")
    ranks = job.get("ranks", {})
    if not isinstance(ranks, dict):
        raise _bad(path, "`[job.ranks]` must map rank numbers to node names")
    try:
        ranks = {int(k): v for k, v in ranks.items()}
    except ValueError:
        raise _bad(path, "`[job.ranks]` keys must be rank numbers") from None
    for r, n in ranks.items():
        if n not in nodes:
            raise _bad(path, f"rank {r} is mapped to {n!r}, which is not in `nodes`")
    tpn = job.get("tasks_per_node")
    if tpn is not None and (not isinstance(tpn, int) or isinstance(tpn, bool) or tpn < 1):
        raise _bad(path, "`tasks_per_node` must be a positive integer")
    exit_code = job.get("exit_code")
    b = JobInfoBuilder(str(job.get("id", default_id)), state, tuple(nodes), start=_dt(job.get("start"), "start", path),
                       end=_dt(job.get("end"), "end", path), failed_node=job.get("failed_node"),
                       exit_code=str(exit_code) if exit_code is not None else None, tasks_per_node=tpn, ranks=ranks)
    af = data.get("allocation_failure")
    if isinstance(af, dict):
        b.allocation_failure(SchedulerFailure(
            allocation_id=str(af.get("allocation_id", "")), state=str(af.get("state", "")),
            failed_node=af.get("failed_node"), source=str(af.get("source", "scheduler")),
            time=_dt(af.get("time"), "allocation_failure.time", path)))
    ec = data.get("execution_cancellation")
    if isinstance(ec, dict):
        b.execution_cancellation(ExecutionCancellation(
            record_id=str(ec.get("record_id", "")), cancelled_by=str(ec.get("cancelled_by", "")),
            source_time=_dt(ec.get("source_time"), "execution_cancellation.source_time", path)))
    return b.build()


def read_job_dir(path: str | Path) -> JobDir:
    """Read a job directory; raises RulekitError (RK501/RK502/RK506) on fatal problems."""
    root = Path(path)
    if not root.is_dir():
        raise RulekitError(Diagnostic("RK501", f"job directory `{root}` does not exist or is not a folder",
                                      Span(str(root), 1, 1)))
    notes: list[Diagnostic] = []
    syslog_dir = root / "syslog"
    syslog_files = sorted(p for p in syslog_dir.iterdir() if p.is_file()) if syslog_dir.is_dir() else []
    syslog_nodes = [p.stem for p in syslog_files if p.suffix in APPLOG_SUFFIXES]
    job = read_job_toml(root / "job.toml", root.resolve().name, syslog_nodes)
    obs: list[Observation] = []
    app_dir = root / "applog"
    if app_dir.is_dir():
        for p in sorted(app_dir.rglob("*")):
            if not p.is_file():
                continue
            if p.suffix in APPLOG_SUFFIXES:
                obs.append(Observation(source="applog", path=p, label=str(p.relative_to(root))))
            else:
                notes.append(Diagnostic("RK504", f"ignored `{p.relative_to(root)}` (application logs are applog/*.log)",
                                        Span(str(p), 1, 1)))
    for p in syslog_files:
        if p.suffix in APPLOG_SUFFIXES:
            obs.append(Observation(source="syslog", node=p.stem, path=p, label=str(p.relative_to(root))))
        else:
            notes.append(Diagnostic("RK504", f"ignored `{p.relative_to(root)}` (node logs are syslog/<node>.log)",
                                    Span(str(p), 1, 1)))
    fr_dir = root / "fr"
    if fr_dir.is_dir():
        obs.extend(read_fr_dir(root, fr_dir, notes))
    jsonl = root / "observations.jsonl"
    if jsonl.exists():
        recs, bad = read_observations_jsonl(jsonl)
        obs.extend(recs)
        notes.extend(bad)
    for p in sorted(root.iterdir()):
        if p.name not in KNOWN_TOP and not p.name.startswith("."):
            notes.append(Diagnostic("RK504", f"ignored `{p.name}` (not part of a job directory)", Span(str(p), 1, 1)))
    jd = JobDir(root, job, obs, notes)
    if not obs or jd.total_bytes() == 0:
        notes.append(Diagnostic("RK505", f"`{root}` holds no log lines or observations", Span(str(root), 1, 1)))
    return jd


def fr_diagnostic(e: FRDumpError, path: str) -> Diagnostic:
    """RK507 for a refused dump, located by byte offset (pickle) or line:col (JSON)."""
    if e.line is not None:
        span = Span(path, e.line, e.col or 1)
    else:
        span = Span(path, 1, 1)
    data = {"byte": e.offset} if e.offset is not None else {}
    return Diagnostic("RK507", str(e), span, data=data)


def read_fr_dir(root: Path, fr_dir: Path, notes: list[Diagnostic]) -> list[Observation]:
    """fr/<prefix><rank>[.json]: one flight-recorder dump per rank (PyTorch's
    TORCH_NCCL_DEBUG_INFO_TEMP_FILE names); refused dumps are RK507 notes."""
    out = []
    for p in sorted(fr_dir.rglob("*")):
        if not p.is_file() or p.name.startswith("."):
            continue
        label = str(p.relative_to(root))
        if rank_from_name(p.name) is None:
            notes.append(Diagnostic("RK504", f"ignored `{label}` (flight-recorder dumps are fr/<prefix><rank>)",
                                    Span(label, 1, 1)))
            continue
        try:
            dump = read_dump_file(p, label)
        except FRDumpError as e:
            notes.append(fr_diagnostic(e, label))
            continue
        if dump.problems:
            shown = "; ".join(dump.problems[:5]) + (f"; and {len(dump.problems) - 5} more" if len(dump.problems) > 5 else "")
            notes.append(Diagnostic("RK507", f"{label}: {shown}", Span(label, 1, 1), severity=Severity.WARNING))
        out.append(dump_observation(dump, label))
    return out


def read_observations_jsonl(path: Path) -> tuple[list[Observation], list[Diagnostic]]:
    """Normalized Observation records, one JSON object a line:
    {"source": "syslog", "node": "n1", "format": "text", "line": "..."} (or "lines": [...])."""
    out: list[Observation] = []
    diags: list[Diagnostic] = []
    current: Observation | None = None
    with open(path, "rb") as f:
        for n, raw in enumerate(f, start=1):
            text = raw.decode("utf-8", "replace").strip()
            if not text:
                continue
            try:
                rec = json.loads(text)
            except json.JSONDecodeError as e:
                diags.append(Diagnostic("RK503", f"not a JSON object: {e.msg}", Span(str(path), n, e.colno, n, e.colno + 1)))
                continue
            if isinstance(rec, dict) and rec.get("kind") == "flight_recorder":
                try:
                    out.append(observation_from_record(rec, f"{path.name}:{n}"))
                except FRDumpError as e:
                    diags.append(Diagnostic("RK507", str(e), Span(str(path), n, 1)))
                current = None
                continue
            if not isinstance(rec, dict) or not isinstance(rec.get("source"), str):
                diags.append(Diagnostic("RK503", "an observation record needs a string `source`", Span(str(path), n, 1)))
                continue
            lines = rec.get("lines")
            if lines is None:
                lines = [rec.get("line", rec.get("text", rec.get("message")))]
            if not isinstance(lines, list) or not all(isinstance(x, str) for x in lines):
                diags.append(Diagnostic("RK503", "an observation record needs `line` (a string) or `lines` (strings)",
                                        Span(str(path), n, 1)))
                continue
            key = (rec["source"], rec.get("format", "text"), rec.get("node"))
            if current is None or (current.source, current.format, current.node) != key:
                current = Observation(source=key[0], format=key[1], node=key[2], label=f"observations.jsonl:{n}",
                                      lines=[], first_line=n)
                out.append(current)
            assert isinstance(current.lines, list)
            if rec.get("timestamp") and isinstance(rec["timestamp"], str):
                lines = [f"{rec['timestamp']} {x}" if not x.startswith(rec["timestamp"]) else x for x in lines]
            current.lines.extend(lines)
    return out, diags
