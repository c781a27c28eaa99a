"""`rulekit attribute JOB_DIR...`: the on-call engineer's command.

Loads the corpus once, attributes each job directory (in a process pool when
there are several), and renders the result: readable text by default, the JSON
contract with `--format json`.  Exit 0 when attribution ran (whatever the
outcome), 2 with a clear message on bad input or an invalid corpus.
"""
from __future__ import annotations

import json
import multiprocessing
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any, Optional

import typer
from rich.console import Console
from rich.markup import escape

from rulekit.cli.app import app
from rulekit.cli.render import print_diagnostics
from rulekit.diagnostics import RulekitError, Severity
from rulekit.rules.loader import load_corpus

PROGRESS_MIN_BYTES = 32 << 20


def _load(rules: list[Path] | None):
    res = load_corpus(rules or None)
    if res.engine is None:
        print_diagnostics([d for d in res.diagnostics if d.severity is Severity.ERROR], res.texts, err=True)
        raise typer.Exit(2)
    return res.engine


_worker_engine = None


def _init_worker(rules: list[str] | None) -> None:
    global _worker_engine
    _worker_engine = load_corpus([Path(r) for r in rules] if rules else None).engine


def _attribute_pool(engine, rules: list[Path] | None, job_dirs: list[Path], workers: int) -> list[dict[str, Any]]:
    """Attribute many job directories in worker processes.  Where processes fork, the
    corpus and its acceleration structure are built once, here, and inherited;
    elsewhere each worker loads the corpus once."""
    global _worker_engine
    try:
        ctx = multiprocessing.get_context("fork")
    except ValueError:
        ctx = None
    if ctx is not None:
        for source, fmt in (("applog", "text"), ("syslog", "text"), ("scheduler", "slurm")):
            engine.scan_plan(source, fmt)  # build the shared scanner before forking
        _worker_engine = engine
        pool = ProcessPoolExecutor(max_workers=workers, mp_context=ctx)
    else:
        pool = ProcessPoolExecutor(max_workers=workers, initializer=_init_worker,
                                   initargs=([str(r) for r in rules] if rules else None,))
    with pool:
        return list(pool.map(_attribute_one, [str(d) for d in job_dirs]))


def _attribute_one(job_dir: str) -> dict[str, Any]:
    from rulekit.engine.jobrun import attribute_dir

    try:
        return attribute_dir(_worker_engine, job_dir)
    except RulekitError as e:
        return {"job_dir": job_dir, "error": str(e)}


@app.command()
def attribute(
    job_dirs: list[Path] = typer.Argument(..., help="Job directories (job.toml, applog/, syslog/, observations.jsonl)."),
    rules: Optional[list[Path]] = typer.Option(None, "--rules", "-r", help="Rule folder(s); default: the bundled rules."),
    fmt: str = typer.Option("text", "--format", "-f", help="text or json"),
    jobs: int = typer.Option(0, "--jobs", "-j", help="Worker processes for many job directories (0: one per core)."),
    explain: bool = typer.Option(False, "--trace", help="Include the phase-by-phase trace (json) / print it (text)."),
) -> None:
    """Attribute job directories: outcome, root cause, bad nodes and the evidence trail."""
    if fmt not in ("text", "json"):
        typer.echo(f"error: unknown format {fmt!r}; use text or json", err=True)
        raise typer.Exit(2)
    for d in job_dirs:
        if not d.is_dir():
            typer.echo(f"error: {d}: not a job directory (no such folder)", err=True)
            raise typer.Exit(2)
    results: list[dict[str, Any]] = []
    workers = jobs or os.cpu_count() or 1
    engine = _load(rules)
    if len(job_dirs) > 1 and workers > 1:
        results = _attribute_pool(engine, rules, job_dirs, min(workers, len(job_dirs)))
    else:
        for d in job_dirs:
            results.append(_attribute_in_process(engine, d, explain))
    failed = [r for r in results if "error" in r]
    if fmt == "json":
        out = results[0] if len(results) == 1 else results
        typer.echo(json.dumps(out, indent=2, default=str))
    else:
        console = Console(highlight=False, soft_wrap=True)
        for i, r in enumerate(results):
            if i:
                console.print()
            render_text(console, r, explain)
    if failed:
        raise typer.Exit(2)


def _attribute_in_process(engine, job_dir: Path, with_trace: bool) -> dict[str, Any]:
    from rulekit.inputs.jobdir import read_job_dir
    from rulekit.engine.session import Session

    try:
        jd = read_job_dir(job_dir)
    except RulekitError as e:  # rendered once, by render_text / the JSON output
        return {"job_dir": str(job_dir), "error": str(e)}
    total = jd.total_bytes()
    with Session(engine, jd.job) as s:
        if total >= PROGRESS_MIN_BYTES and sys.stderr.isatty():
            from rich.progress import BarColumn, DownloadColumn, Progress, TimeRemainingColumn, TransferSpeedColumn

            with Progress("[progress.description]{task.description}", BarColumn(), DownloadColumn(),
                          TransferSpeedColumn(), TimeRemainingColumn(), console=Console(stderr=True)) as bar:
                task = bar.add_task(f"extracting {job_dir.name}", total=total)
                s.ingest_batch(jd.observations, progress=lambda n: bar.advance(task, n))
        else:
            s.ingest_batch(jd.observations)
        s.ingest_metrics(jd.metrics)
        result = s.attribute(with_trace=with_trace)
    if jd.notes:
        result["notes"] = [d.to_dict() for d in jd.notes]
    return result


_OUTCOME_STYLE = {"hardware": "bold red", "network": "bold magenta", "application": "bold yellow",
                  "infrastructure": "bold cyan", "cancelled": "bold blue", "timeout": "bold blue",
                  "success": "bold green", "unknown": "bold white"}


def render_text(console: Console, r: dict[str, Any], with_trace: bool = False) -> None:
    if "error" in r:
        console.print(f"[bold red]{escape(r.get('job_dir', '?'))}: {escape(r['error'])}[/]")
        return
    style = _OUTCOME_STYLE.get(r["outcome"], "bold")
    amb = "  [yellow](ambiguous)[/]" if r.get("ambiguous") else ""
    console.print(f"Job [bold]{escape(str(r['job_id']))}[/]: [{style}]{r['outcome'].upper()}[/] / {escape(r['sub_domain'])}{amb}")
    root = r.get("root_cause")
    if root:
        console.print(f"Root cause: [bold]{escape(root['symptom'])}[/] on [bold]{escape(str(root['node']))}[/]"
                      f"  (rule {escape(str(root['rule']))})")
        for ev in root.get("evidence", [])[:1]:
            console.print(f"  {escape(str(ev['source']))}:{ev['line_num']}  {escape(_clip(ev['datum'] or '', 160))}")
    else:
        console.print("Root cause: none (no bad-node symptom remained)")
    if r.get("tied_symptoms"):
        console.print(f"Tied: {escape(', '.join(r['tied_symptoms']))}")
    if r["bad_nodes"]:
        console.print("Bad nodes:")
        for b in r["bad_nodes"]:
            console.print(f"  [red]{escape(b['node'])}[/]  {escape(', '.join(b['symptoms']))}")
    else:
        console.print("Bad nodes: none")
    if r["interesting_nodes"]:
        console.print("Interesting nodes:")
        for b in r["interesting_nodes"]:
            console.print(f"  {escape(b['node'])}  {escape(', '.join(b['symptoms']))}")
    if r.get("collectors"):
        console.print("Collected: " + escape(", ".join(f"{k}" for k in r["collectors"])))
    ev = r.get("evidence", [])
    if ev:
        console.print(f"Evidence ({len(ev)}{' shown, ' + str(r['evidence_omitted']) + ' more' if r.get('evidence_omitted') else ''}):")
        for e in ev[:25]:
            kind = "bad " if e["event_type"].endswith(".bad") else "int "
            console.print(f"  {kind} {escape(str(e['symptom'])):<34} {escape(str(e['node'])):<10} "
                          f"{escape(str(e['source']))}:{e['line_num']}  [dim]{escape(str(e['rule']))}[/]")
        if len(ev) > 25:
            console.print(f"  ... {len(ev) - 25} more (use --format json)")
    for note in r.get("notes", []):
        sp = note.get("span") or {}
        where = f"{sp.get('file')}:{sp.get('line')}: " if sp else ""
        console.print(f"[dim]note {note['code']}: {escape(where + note['message'])}[/]")
    for err in r.get("rule_errors", []):
        console.print(f"[yellow]rule error[/] {escape(err['rule'])}: {escape(err['error'])} ({escape(err['where'])})")
    if with_trace and r.get("trace"):
        console.print("Trace:")
        for t in r["trace"]:
            console.print(f"  {t['phase']:<20} {escape(t['rule']):<28} {t['action']:<15} "
                          f"{escape(str(t['symptom']))} {escape(str(t['node'] or ''))}  [dim]{escape(t['reason'])}[/]")


def _clip(s: str, n: int) -> str:
    return s if len(s) <= n else s[: n - 1] + "…"
