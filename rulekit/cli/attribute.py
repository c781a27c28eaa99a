"""`rulekit attribute JOB_DIR...`: the on-call engineer's command.

Loads the corpus once and attributes each job directory through one
`rulekit.engine.jobrun.attribute_dir`: one directory here, in this process;
several on an executor (`--executor local`, a process pool, or `dask`, see
docs/batch.md), with a progress bar on a terminal.  Renders readable text by
default (each result headed by its directory when there are several); `--format
json` is always a list of results in argument order (one job or a glob of many:
the same shape), `--format jsonl` one result object a line, each as soon as it and
the jobs before it are done (docs/output.md).  Exit 0 when
every job was attributed (whatever the outcome); 2 on bad usage, an invalid
corpus, or when the one job given cannot be read; 1 when some of several jobs
failed (their errors on stderr, the other results printed), or when every job was
attributed but some evidence could not be read (an error note such as RK509).
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any, Optional

from typing import TYPE_CHECKING

import typer

from rulekit.cli.app import app
from rulekit.cli.batch import EXECUTOR_HELP, JOBS_HELP, SCHEDULER_HELP, TIMEOUT_HELP, check_executor, echo_failure, run_batch
from rulekit.cli._common import bundled_option, check_paths_exist, choose_or_exit, load_engine_or_exit
from rulekit.cli.status import ExitStatus
from rulekit.executors import CorpusSpec, Job
from rulekit.executors.base import run_job

if TYPE_CHECKING:
    from rich.console import Console  # rich is imported only to render text (not for --format json)

PROGRESS_MIN_BYTES = 32 << 20


class _BytesBar:
    """attribute_dir's progress for one big job on a terminal: a bytes bar, started on `begin`."""

    def __init__(self, label: str) -> None:
        self.label, self.bar, self.task = label, None, None

    def begin(self, total: int) -> None:
        if total >= PROGRESS_MIN_BYTES and sys.stderr.isatty():
            from rich.console import Console
            from rich.progress import BarColumn, DownloadColumn, Progress, TimeRemainingColumn, TransferSpeedColumn

            self.bar = Progress("[progress.description]{task.description}", BarColumn(), DownloadColumn(),
                                TransferSpeedColumn(), TimeRemainingColumn(), console=Console(stderr=True))
            self.bar.start()
            self.task = self.bar.add_task(f"extracting {self.label}", total=total)

    def __call__(self, n: int) -> None:
        if self.bar is not None:
            self.bar.advance(self.task, n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()


@app.command()
def attribute(
    job_dirs: list[Path] = typer.Argument(..., help="Job directories (job.toml, applog/, syslog/, observations.jsonl)."),
    rules: Optional[list[Path]] = typer.Option(None, "--rules", "-r", help="Rule folder(s) on top of the bundled rules "
                                               "(default: the project file's `rules`)."),
    bundled: Optional[bool] = bundled_option(),
    fmt: str = typer.Option("text", "--format", "-f", help="text, json (a list of results) or jsonl (one a line)"),
    jobs: int = typer.Option(0, "--jobs", "-j", help=JOBS_HELP),
    explain: bool = typer.Option(False, "--trace", help="Include the phase-by-phase trace (json) / print it (text)."),
    executor: str = typer.Option("local", "--executor", "-e", help=EXECUTOR_HELP),
    scheduler: Optional[str] = typer.Option(None, "--scheduler", help=SCHEDULER_HELP),
    timeout: float = typer.Option(0, "--timeout", help=TIMEOUT_HELP),
) -> None:
    """Attribute job directories: outcome, root cause, bad nodes and the evidence trail."""
    if fmt not in ("text", "json", "jsonl"):
        typer.echo(f"error: unknown format {fmt!r}; use text, json or jsonl", err=True)
        raise typer.Exit(ExitStatus.USAGE)
    check_executor(executor, scheduler)
    if len(job_dirs) == 1 and not job_dirs[0].is_dir():
        typer.echo(f"error: {job_dirs[0]}: not a job directory (no such folder)", err=True)
        raise typer.Exit(ExitStatus.USAGE)
    check_paths_exist(rules)
    choice = choose_or_exit(rules, bundled)
    engine = load_engine_or_exit(choice.load_paths).engine
    batch = [Job.of(d) for d in job_dirs]
    shown = {job: str(d) for job, d in zip(batch, job_dirs)}
    printer = _InOrder(batch, shown, fmt, explain)
    if len(batch) == 1 and executor == "local":
        bar = _BytesBar(job_dirs[0].name)
        here = engine.with_options(max_scan_workers=jobs) if jobs else engine  # -j N: N processes in all
        try:
            outcome = run_job(here, batch[0], explain, timeout or None, progress=bar)
        finally:
            bar.close()
        if not outcome.ok:
            echo_failure(outcome, shown[batch[0]])
        outcomes = {batch[0]: outcome}
    else:  # results are printed in argument order as they come in, rendered by the workers (json)
        outcomes = run_batch(executor, CorpusSpec.of(choice.load_paths), batch, shown, engine=engine, scheduler=scheduler,
                             workers=jobs or None, timeout=timeout or None, with_trace=explain,
                             render=RENDERERS.get(fmt), on_outcome=printer.add)
    printer.finish(outcomes)
    ordered = [outcomes[job] for job in batch]
    results = [o.as_dict() for o in ordered]
    failed = sum(1 for o in ordered if not o.ok)
    if failed:
        raise typer.Exit(ExitStatus.USAGE if len(batch) == 1 else ExitStatus.FINDINGS)
    if any(n.get("severity") == "error" for r in results for n in (r.get("notes") or [])):
        raise typer.Exit(ExitStatus.FINDINGS)  # attributed, but some evidence could not be read (RK509, RK507)


def json_text(result: dict[str, Any]) -> str:
    """One result as `--format json` prints it (run by the pool's workers: see `_InOrder`)."""
    return json.dumps(result, indent=2, default=str)


def jsonl_text(result: dict[str, Any]) -> str:
    """One result as a line of `--format jsonl` (compact: no newline inside)."""
    return json.dumps(result, separators=(",", ":"), default=str)


RENDERERS = {"json": json_text, "jsonl": jsonl_text}


class _InOrder:
    """Prints the results of a batch in argument order, each as soon as it and every job
    before it are in (`add`, called as outcomes arrive), the rest at `finish`.  The
    bytes are those of printing the whole list at the end: for json, one result alone
    is a list of one, several a list, each item `json_text` (the workers' rendering,
    `JobOutcome.text`, when there is one) indented one level, as `json.dumps(list,
    indent=2)` writes it; for jsonl, one compact object a line; for text, each result headed by its
    directory when there are several, and a failure only on stderr (reported there
    once, as it finished).  Interrupted midway, the output stops after the last
    complete result."""

    def __init__(self, batch: list[Job], shown: dict[Job, str], fmt: str, with_trace: bool) -> None:
        self.batch, self.shown, self.fmt, self.with_trace = batch, shown, fmt, with_trace
        self.got: dict[Job, Any] = {}
        self.next = 0
        self.printed = 0
        self.console: Any = None

    def add(self, outcome: Any) -> None:
        self.got.setdefault(outcome.job, outcome)
        while self.next < len(self.batch) and self.batch[self.next] in self.got:
            self._print(self.batch[self.next], self.got[self.batch[self.next]])
            self.next += 1

    def finish(self, outcomes: dict[Job, Any]) -> None:
        for o in outcomes.values():
            self.add(o)
        if self.fmt == "json":
            sys.stdout.write("\n]\n")
            sys.stdout.flush()

    def _print(self, job: Job, o: Any) -> None:
        if self.fmt in RENDERERS:
            text = o.text if o.ok and o.text is not None else RENDERERS[self.fmt](o.as_dict())
            if self.fmt == "jsonl":
                sys.stdout.write(text + "\n")
            else:
                sys.stdout.write(("[\n  " if self.next == 0 else ",\n  ") + text.replace("\n", "\n  "))
            sys.stdout.flush()
        elif o.ok:  # a failure was reported once, on stderr
            if self.console is None:
                self.console = text_console()
            if self.printed:
                self.console.print()
            render_text(self.console, o.result, self.with_trace, self.shown[job] if len(self.batch) > 1 else None)
            self.printed += 1


def text_console() -> Any:
    """Where `render_text` prints: rich's Console on a terminal (colours, styles); when
    rich itself would find no terminal (a pipe, a file, `TTY_COMPATIBLE=0`), the
    same bytes through `PlainConsole`, without importing rich.console."""
    if _rich_sees_a_terminal(sys.stdout):
        from rich.console import Console

        return Console(highlight=False, soft_wrap=True)
    return PlainConsole()


def _rich_sees_a_terminal(file: Any) -> bool:
    """`rich.console.Console.is_terminal` for a Console made with no arguments (rich 13-15):
    TTY_COMPATIBLE, then FORCE_COLOR, then the file's isatty()."""
    import os

    tty_compatible = os.environ.get("TTY_COMPATIBLE", "")
    if tty_compatible in ("0", "1"):
        return tty_compatible == "1"
    force_color = os.environ.get("FORCE_COLOR")
    if force_color is not None:
        return force_color != ""
    isatty = getattr(file, "isatty", None)
    try:
        return bool(isatty()) if isatty is not None else False
    except ValueError:
        return False


class PlainConsole:
    """What `Console(highlight=False, soft_wrap=True).print(markup)` writes to a file that
    is not a terminal: no styles, no wrapping or cropping.  The markup's plain text is
    `rulekit.cli.plainmarkup`'s (rich's markup rules, without importing rich's text
    machinery; tabs go through rich's own `rich.markup.render` and are expanded as rich's
    Text.wrap expands them), so the bytes are the same (`tests/test_cli_text_render.py`
    compares the two) without importing rich.console, rich.markup or rich.text (~35 ms).
    Writes to the current `sys.stdout` at each call, as the Console does."""

    def print(self, markup: str = "") -> None:
        from rulekit.cli.plainmarkup import plain_lines

        sys.stdout.write("\n".join(plain_lines(markup)) + "\n")


_OUTCOME_STYLE = {"hardware": "bold red", "network": "bold magenta", "application": "bold yellow",
                  "infrastructure": "bold cyan", "cancelled": "bold blue", "timeout": "bold blue",
                  "success": "bold green", "unknown": "bold white"}


def render_text(console: Console, r: dict[str, Any], with_trace: bool = False, job_dir: str | None = None) -> None:
    """One result as text; `job_dir` (several jobs) names the folder in the heading."""
    from rulekit.cli.plainmarkup import escape  # rich.markup.escape, without importing rich.text

    if "error" in r:
        console.print(f"[bold red]{escape(r.get('job_dir', '?'))}: {escape(r['error'])}[/]")
        return
    style = _OUTCOME_STYLE.get(r["outcome"], "bold")
    amb = "  [yellow](ambiguous)[/]" if r.get("ambiguous") else ""
    conf = r.get("confidence")
    conf_txt = f"  confidence {conf}" if conf and conf != "high" else ""
    where = f" ({escape(job_dir)})" if job_dir else ""
    console.print(f"Job [bold]{escape(str(r['job_id']))}[/]{where}: [{style}]{r['outcome'].upper()}[/] / "
                  f"{escape(r['sub_domain'])}{amb}{conf_txt}")
    root = r.get("root_cause")
    if root:
        on = f" on [bold]{escape(str(root['node']))}[/]" if root.get("node") else " (job-level)"
        console.print(f"Root cause: [bold]{escape(root['symptom'])}[/]{on}"
                      f"  (rule {escape(str(root['rule']))})")
        for ev in root.get("evidence", [])[:1]:
            console.print(f"  {escape(_where(ev))}  {escape(_clip(ev.get('datum') or '', 160))}")
    else:
        console.print("Root cause: none (no bad-node symptom remained)")
    if r.get("tied_symptoms"):
        console.print(f"Tied: {escape(', '.join(r['tied_symptoms']))}")
    if r.get("alternatives"):
        console.print("Alternatives: " + escape(", ".join(f"{a['outcome']}/{a['sub_domain']} ({a['symptom']})"
                                                          for a in r["alternatives"])))
    if r["bad_nodes"]:
        console.print("Bad nodes:")
        for b in r["bad_nodes"]:
            what = f"{b.get('action', 'inspect')}, {b.get('confidence', 'certain')}"
            console.print(f"  [red]{escape(b['node'])}[/]  {escape(what)}  {escape(', '.join(b['symptoms']))}")
    else:
        console.print("Bad nodes: none")
    if r.get("affected_nodes"):
        console.print("Affected nodes (not at fault):")
        for b in r["affected_nodes"]:
            console.print(f"  {escape(b['node'])}  {escape(', '.join(b['symptoms']))}")
    if r["interesting_nodes"]:
        console.print("Interesting nodes:")
        for b in r["interesting_nodes"]:
            console.print(f"  {escape(b['node'])}  {escape(', '.join(b['symptoms']))}")
    if r.get("collectors"):
        console.print("Collected: " + escape(", ".join(f"{k}" for k in r["collectors"])))
    ev = r.get("evidence", [])
    if ev:
        console.print(f"Evidence ({len(ev)}{' shown, ' + str(r['evidence_omitted']) + ' more' if r.get('evidence_omitted') else ''}):")
        shown = ev[:25]
        sym_w = min(48, max([len(str(e.get("symptom") or "-")) for e in shown] + [10]))
        node_w = min(40, max([len(str(e.get("node") or "(job)")) for e in shown] + [6]))
        for e in shown:
            kind = {"bad": "bad ", "bad_peers": "peer"}.get(e["event_type"].rsplit(".", 1)[-1], "int ")
            sym = str(e.get("symptom") or "-")
            node = str(e.get("node") or "(job)")
            console.print(f"  {kind} {escape(sym.ljust(sym_w))} {escape(node.ljust(node_w))} "
                          f"{escape(_where(e))}  [dim]{escape(str(e.get('rule') or ''))}[/]")
        if len(ev) > 25:
            console.print(f"  ... {len(ev) - 25} more (use --format json)")
    for note in r.get("notes", []):
        sp = note.get("span") or {}
        file = str(sp.get("file") or "")
        where = "" if not file or file in note["message"] else (
            f"{file}:{sp.get('line')}: " if os.path.isfile(file) else f"{file}: ")  # a folder has no line
        if note.get("severity") == "error":
            console.print(f"[bold red]error {note['code']}[/]: {escape(where + note['message'])}")
        else:
            console.print(f"[dim]note {note['code']}: {escape(where + note['message'])}[/]")
    for err in r.get("rule_errors", []):
        console.print(f"[yellow]rule error[/] {escape(err['rule'])}: {escape(err['error'])} ({escape(err['where'])})")
    if with_trace and r.get("trace"):
        console.print("Trace:")
        for t in r["trace"]:
            console.print(f"  {t['phase']:<20} {escape(t['rule']):<28} {t['action']:<15} "
                          f"{escape(str(t['symptom']))} {escape(str(t['node'] or ''))}  [dim]{escape(t['reason'])}[/]")


def _where(ev: dict[str, Any]) -> str:
    """`source:line` of an evidence item; job-level evidence (scheduler state, the job
    record) has no line, and no source when it comes from the job record itself."""
    src, line = ev.get("source"), ev.get("line_num")
    if src and line is not None:
        return f"{src}:{line}"
    return str(src) if src else "(job record)"


def _clip(s: str, n: int) -> str:
    return s if len(s) <= n else s[: n - 1] + "…"
