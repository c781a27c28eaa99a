"""The job directory reader (README, "The job directory"): job.toml, applog/*.log, syslog/<node>.log,
fr/<prefix><rank> (flight-recorder dumps), observations.jsonl -> a JobInfo, the observations to
ingest, and notes.

Missing pieces are fine; unknown files are noted (RK504), never fatal; bad
records are reported (RK503) and skipped; refused flight-recorder dumps are RK507.
Every entry is inspected without blocking (`rulekit.inputs.entries`): an
unreadable log is an RK509 error and is left out (the job is still attributed),
folders named like logs, FIFOs and symlink loops are skipped and binary logs
ingested, each with an RK510 note.  Files are not read here beyond job.toml,
observations.jsonl, fr/ (dumps are validated and made columns here) and the first
bytes of each log: logs are streamed by extraction.  What only some jobs need is
imported when they do: pydantic (a metric record, a job record the plain reader
declines) and the TOML locator (an error in job.toml).
"""
from __future__ import annotations

import json
import os
import re
import tomllib
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from rulekit.rules.records import dataclass
from rulekit.diagnostics import Diagnostic, RulekitError, Severity, Span
from rulekit.inputs.bounded import TooManyValues, json_loads, lines_capped
from rulekit.inputs.entries import check_record_file, inspect_entry
from rulekit.inputs.flight_recorder import MAX_JSON_VALUES, FRDump, FRDumpError, observation_from_record, rank_from_name
from rulekit.inputs.fr_bulk import read_dump_files
from rulekit.inputs.jobinfo import JobInfo
from rulekit.inputs.jobrecord import JobRecordError, parse_job_record
from rulekit.inputs.metrics import MetricSeries
from rulekit.inputs.observation import Observation

if TYPE_CHECKING:
    from rulekit.rules.toml_frontend import Locator

APPLOG_SUFFIXES = {".log", ".out", ".err", ".txt"}
MAX_RECORD_BYTES = 64 << 20  # one line of observations.jsonl (the Service's default body limit) (RK511)
MAX_RECORD_VALUES = MAX_JSON_VALUES  # JSON values of one record, counted before it is parsed (RK511)
KNOWN_TOP = {"job.toml", "applog", "syslog", "fr", "observations.jsonl", "expected.json", "README.md", "generate.py"}
_RANK_MSG = re.compile(r"^rank '?([^ ']+)'? ")
SCHEDULER_TABLES = ("allocation_failure", "execution_cancellation")


@dataclass
class JobDir:
    path: Path
    job: JobInfo
    observations: list[Observation | FRDump]  # flight-recorder dumps are carried as data, not lines
    notes: list[Diagnostic] = field(default_factory=list)
    metrics: list[MetricSeries] = field(default_factory=list)  # observations.jsonl's `"kind": "metric"` records

    def total_bytes(self) -> int:
        return sum(o.size() for o in self.observations)


def _bad(path: Path, msg: str, span: Span | None = None, code: str = "RK502") -> RulekitError:
    return RulekitError(Diagnostic(code, msg, span or Span(str(path), 1, 1)))


def read_job_toml(path: Path, default_id: str, syslog_nodes: list[str]) -> JobInfo:
    """job.toml -> JobInfo through the one job-record schema (`rulekit.inputs.jobrecord`).

    `[job]` holds the record's keys; `[allocation_failure]` and
    `[execution_cancellation]` are top-level tables.  Every problem is reported
    once, at its key's line and column."""
    data: dict[str, Any] = {}
    text = ""
    problem = check_record_file(path, "job.toml")
    if problem is not None:
        raise RulekitError(problem)
    if path.exists():
        try:
            text = path.read_bytes().decode("utf-8", "replace")
        except OSError as e:
            raise _bad(path, f"cannot read `job.toml`: {e.strerror or e}", code="RK509") from None
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:
            from rulekit.rules.toml_frontend import toml_error_span

            raise _bad(path, f"job.toml is not valid TOML: {e}", toml_error_span(e, text, str(path))) from None
    job = data.get("job", {})
    if not isinstance(job, dict):
        loc = _locator(text, path)
        raise _bad(path, "`job` must be a table: write `[job]`", loc.key(loc.top(), "job"))
    record: dict[str, Any] = dict(job)
    record.setdefault("id", default_id)
    record.setdefault("nodes", syslog_nodes)
    for table in SCHEDULER_TABLES:
        if table in data:
            if table in job:
                raise _bad(path, f"`{table}` is given twice (in [job] and as [{table}])",
                           _span_of(_locator(text, path), (table,), in_job=False))
            record[table] = data[table]
    try:
        return parse_job_record(record)
    except JobRecordError as e:
        loc = _locator(text, path)
        diags = []
        for where, msg in e.problems:
            m = _RANK_MSG.match(msg)
            if where == ("ranks",) and m:  # a rank's problem: point at that rank's key
                where = ("ranks", m.group(1))
            in_job = not where or where[0] not in SCHEDULER_TABLES or where[0] in job
            diags.append(Diagnostic("RK502", f"`{_dotted(where[:1] if m else where)}`: {msg}" if where else msg,
                                    _span_of(loc, where, in_job=in_job)))
        raise RulekitError(diags) from None


def _locator(text: str, path: Path) -> Locator:
    """Where job.toml's keys are: only an error needs it."""
    from rulekit.rules.toml_frontend import Locator

    return Locator(text, str(path))


def _dotted(loc: tuple) -> str:
    return ".".join(str(p) for p in loc)


def _span_of(loc: Locator, where: tuple, in_job: bool = True) -> Span:
    """The line:col of a record field in job.toml ([job] key, [job.ranks] entry, scheduler table key)."""
    if not where:
        regions = loc.tables("job")
        return loc.header(regions[0]) if regions else Span(loc.path, 1, 1)
    head = str(where[0])
    if not in_job:
        regions = loc.tables(head)
        if not regions:
            return loc.key(loc.top(), head)
        return loc.key(regions[0], str(where[1])) if len(where) > 1 else loc.header(regions[0])
    if head == "ranks":
        sub = loc.tables("job.ranks")
        if sub:
            return loc.key(sub[0], str(where[1])) if len(where) > 1 else loc.header(sub[0])
    if head in SCHEDULER_TABLES:
        sub = loc.tables(f"job.{head}")
        if sub:
            return loc.key(sub[0], str(where[1])) if len(where) > 1 else loc.header(sub[0])
    regions = loc.tables("job")
    return loc.key(regions[0] if regions else loc.top(), head)


def read_job_dir(path: str | Path) -> JobDir:
    """Read a job directory; raises RulekitError (RK501/RK502/RK506) on fatal problems."""
    root = Path(path)
    if not root.is_dir():
        raise RulekitError(Diagnostic("RK501", f"job directory `{root}` does not exist or is not a folder",
                                      Span(str(root), 1, 1)))
    notes: list[Diagnostic] = []
    syslog_dir = root / "syslog"
    syslog_files: list[Path] = []
    if syslog_dir.is_dir():
        for p in _listed(syslog_dir, root, notes):
            use, note = inspect_entry(p, str(p.relative_to(root)), log_like=p.suffix in APPLOG_SUFFIXES)
            if note is not None:
                notes.append(note)
            if use:
                syslog_files.append(p)
    syslog_nodes = [p.stem for p in syslog_files if p.suffix in APPLOG_SUFFIXES]
    job = read_job_toml(root / "job.toml", root.resolve().name, syslog_nodes)
    obs: list[Observation | FRDump] = []
    app_dir = root / "applog"
    if app_dir.is_dir():
        for p in _listed(app_dir, root, notes, recursive=True):
            rel = str(p.relative_to(root))
            use, note = inspect_entry(p, rel, log_like=p.suffix in APPLOG_SUFFIXES)
            if note is not None:
                notes.append(note)
            if not use:
                continue
            if p.suffix in APPLOG_SUFFIXES:
                obs.append(Observation(source="applog", path=p, label=rel))
            else:
                notes.append(Diagnostic("RK504", f"ignored `{rel}` (application logs are applog/*.log)",
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
    metrics: list[MetricSeries] = []
    problem = check_record_file(jsonl, "observations.jsonl")
    if problem is not None:
        notes.append(problem)
    elif jsonl.exists():
        recs, bad = read_observations_jsonl(jsonl, metrics)
        obs.extend(recs)
        notes.extend(bad)
    for p in sorted(root.iterdir()):
        if p.name not in KNOWN_TOP and not p.name.startswith("."):
            notes.append(Diagnostic("RK504", f"ignored `{p.name}` (not part of a job directory)", Span(str(p), 1, 1)))
    jd = JobDir(root, job, obs, notes, metrics)
    if (not obs or jd.total_bytes() == 0) and not metrics:
        notes.append(Diagnostic("RK505", f"`{root}` holds no log lines or observations", Span(str(root), 1, 1)))
    return jd


def _listed(folder: Path, root: Path, notes: list[Diagnostic], recursive: bool = False) -> list[Path]:
    """The entries of `folder` (with `recursive`, every entry below it, symlinked folders
    listed but not entered), sorted.  A folder that cannot be listed is an RK509 and
    gives nothing; the rest of the job is still read."""
    def unreadable(e: OSError) -> None:
        where = Path(e.filename) if e.filename else folder
        try:
            shown = str(where.relative_to(root))
        except ValueError:
            shown = str(where)
        notes.append(Diagnostic("RK509", f"cannot list `{shown}/`: {e.strerror or e}; its logs were not read",
                                Span(str(where), 1, 1)))

    if not recursive:
        try:
            return sorted(folder.iterdir())
        except OSError as e:
            unreadable(e)
            return []
    out: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(folder, onerror=unreadable):
        out += [Path(dirpath) / n for n in dirnames + filenames]
    return sorted(out)


def fr_diagnostic(e: FRDumpError, path: str) -> Diagnostic:
    """RK507 for a refused dump, located by byte offset (pickle) or line:col (JSON)."""
    if e.line is not None:
        span = Span(path, e.line, e.col or 1)
    else:
        span = Span(path, 1, 1)
    data = {"byte": e.offset} if e.offset is not None else {}
    return Diagnostic("RK507", str(e), span, data=data)


def read_fr_dir(root: Path, fr_dir: Path, notes: list[Diagnostic]) -> list[FRDump]:
    """fr/<prefix><rank>[.json]: one flight-recorder dump per rank (PyTorch's
    TORCH_NCCL_DEBUG_INFO_TEMP_FILE names), read all at once (`fr_bulk`, in worker
    processes when there are many); refused dumps are RK507 notes."""
    items = []
    for p in sorted(fr_dir.rglob("*")):
        if not p.is_file() or p.name.startswith("."):
            continue
        label = str(p.relative_to(root))
        if rank_from_name(p.name) is None:
            notes.append(Diagnostic("RK504", f"ignored `{label}` (flight-recorder dumps are fr/<prefix><rank>)",
                                    Span(label, 1, 1)))
            continue
        items.append((p, label))
    out = []
    for (_, label), got in zip(items, read_dump_files(items)):
        if isinstance(got, FRDumpError):
            notes.append(fr_diagnostic(got, label))
            continue
        if got.problems:
            shown = "; ".join(got.problems[:5]) + (f"; and {len(got.problems) - 5} more" if len(got.problems) > 5 else "")
            notes.append(Diagnostic("RK507", f"{label}: {shown}", Span(label, 1, 1), severity=Severity.WARNING))
        out.append(got)
    return out


def read_observations_jsonl(path: Path, metrics: list[MetricSeries] | None = None
                            ) -> tuple[list[Observation | FRDump], list[Diagnostic]]:
    """Normalized Observation records, one JSON object a line:
    {"source": "syslog", "node": "n1", "format": "text", "line": "..."} (or "lines": [...]),
    and metric series {"kind": "metric", "node", "name", "labels", "samples": [[t, v], ...]}
    (appended to `metrics`; without that list they are noted and skipped)."""
    out: list[Observation | FRDump] = []
    diags: list[Diagnostic] = []
    current: Observation | None = None
    with open(path, "rb") as f:
        for n, raw in lines_capped(f, MAX_RECORD_BYTES):
            if raw is None:
                diags.append(Diagnostic("RK511", f"the record is longer than {MAX_RECORD_BYTES} bytes; skipped",
                                        Span(str(path), n, 1)))
                current = None
                continue
            text = raw.decode("utf-8", "replace").strip()
            if not text:
                continue
            try:
                rec = json_loads(text, MAX_RECORD_VALUES, "the record")
            except TooManyValues as e:
                diags.append(Diagnostic("RK511", f"{e}; skipped", Span(str(path), n, 1)))
                current = None
                continue
            except RecursionError:
                diags.append(Diagnostic("RK503", "not a JSON object: nested too deeply", Span(str(path), n, 1)))
                continue
            except json.JSONDecodeError as e:
                diags.append(Diagnostic("RK503", f"not a JSON object: {e.msg}", Span(str(path), n, e.colno, n, e.colno + 1)))
                continue
            if isinstance(rec, dict) and rec.get("kind") == "flight_recorder":
                try:
                    dump = observation_from_record(rec, f"{path.name}:{n}")
                    dump.nbytes = len(raw)
                    out.append(dump)
                except FRDumpError as e:
                    diags.append(Diagnostic("RK507", str(e), Span(str(path), n, 1)))
                current = None
                continue
            if isinstance(rec, dict) and rec.get("kind", "log") != "log":
                diags.extend(_other_kind(rec, path, n, metrics))
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


def _other_kind(rec: dict, path: Path, n: int, metrics: list[MetricSeries] | None) -> list[Diagnostic]:
    """A record of another observation kind (`metric`; `flight_recorder` is read above)."""
    if rec.get("kind") != "metric":
        return [Diagnostic("RK503", f"unknown observation kind {str(rec.get('kind'))[:40]!r}; "
                           "known: log, metric, flight_recorder",
                           Span(str(path), n, 1))]
    from pydantic import ValidationError  # pydantic only for a job with metric records

    from rulekit.inputs.metrics_model import MetricRecord

    try:
        series = MetricRecord.model_validate(rec).to_series()
    except ValidationError as e:
        err = e.errors(include_url=False)[0]
        where = ".".join(str(p) for p in err.get("loc", ()))
        return [Diagnostic("RK503", f"metric record: `{where}`: {err.get('msg')}", Span(str(path), n, 1))]
    if metrics is None:
        return [Diagnostic("RK503", "metric records are not read here", Span(str(path), n, 1))]
    metrics.append(series)
    return []
