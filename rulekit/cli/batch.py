"""Running a batch of job attempts from the command line: the `--executor`,
`--scheduler`, `-j` and `--timeout` options every batch command shares
(`attribute`, `blueprint run`), a job-count progress bar on a TTY, and each
failed job's error echoed to stderr once, as it finishes.

Only renders and wires: the work is `rulekit.executors`.  Must not attribute
anything itself.
"""
from __future__ import annotations

import re

import sys
from typing import TYPE_CHECKING, Any, Callable, Iterable

import typer

from rulekit.cli.status import ExitStatus

from rulekit.executors import EXECUTORS, CorpusSpec, ExecutorError, JobOutcome, Task, make_executor
from rulekit.extract.parallel import usable_cores

EXECUTOR_HELP = "Where jobs run: local (process pool) or dask (Dask distributed; see docs/batch.md)."
SCHEDULER_HELP = "Dask scheduler address (tcp://host:8786); without it, --executor dask starts a local cluster."
JOBS_HELP = ("Processes in all (local: jobs at once, and the scan workers of a large log; dask: local "
             "workers); 0: one per core.  -j 1 keeps to one core.")
if TYPE_CHECKING:
    from rich.console import Console  # imported where a bar or a failure is printed

TIMEOUT_HELP = "Seconds one job may take before it is recorded as failed (0: no limit)."


def check_executor(name: str, scheduler: str | None) -> None:
    if name not in EXECUTORS:
        typer.echo(f"error: unknown executor {name!r}; use one of {', '.join(EXECUTORS)}", err=True)
        raise typer.Exit(ExitStatus.USAGE)
    if scheduler and name != "dask":
        typer.echo("error: --scheduler needs --executor dask", err=True)
        raise typer.Exit(ExitStatus.USAGE)


_LOCATED = re.compile(r"^\S[^\n]*?:\d+:\d+: (?:error|warning|info|hint) RK\d{3} ")


def echo_failure(outcome: JobOutcome, shown: str, console: Console | None = None) -> None:
    """One line on stderr: the job as the user named it, and its located error."""
    msg = (outcome.error or "").replace(outcome.job.label, shown)
    if _LOCATED.match(msg):  # diagnostics already say `file:line:col: error CODE`: not a second "error:"
        line = msg
    else:
        line = f"error: {msg}" if msg.startswith(shown) else f"error: {shown}: {msg}"
    if console is not None:
        from rich.markup import escape

        console.print(f"[red]{escape(line)}[/]")
    else:
        typer.echo(line, err=True)


def run_batch(executor: str, corpus: CorpusSpec, jobs: list[Task], shown: dict[Task, str], *, engine: Any = None,
              scheduler: str | None = None, workers: int | None = None, timeout: float | None = None,
              with_trace: bool = False, render: Callable[[dict[str, Any]], str] | None = None,
              on_outcome: Callable[[JobOutcome], None] | None = None) -> dict[Task, JobOutcome]:
    """Run `jobs` on the named executor; every outcome, by job.  Failures are echoed to
    stderr as they arrive; a progress bar counts jobs when stderr is a terminal.
    `render` is the executor's (each result rendered where it ran); `on_outcome(o)` is
    called as each arrives (a caller printing results while the others run), except
    under the progress bar (stderr a terminal), where output would cut through it."""
    outcomes: dict[Task, JobOutcome] = {}
    cores = workers  # -j N: what the batch may keep busy in all (None: every usable core)
    workers = min(workers or usable_cores(), max(1, len(set(jobs))))  # no idle local workers
    try:
        ex = make_executor(executor, corpus, engine=engine, address=scheduler, workers=workers, timeout=timeout,
                           cores=cores)
    except ExecutorError as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(ExitStatus.USAGE)
    with ex:
        stream = ex.map(jobs, with_trace=with_trace, render=render)
        if sys.stderr.isatty():
            _with_bar(stream, len(set(jobs)), shown, outcomes)  # results are printed after the bar
        else:
            for o in stream:
                outcomes[o.job] = o
                if not o.ok:
                    echo_failure(o, shown.get(o.job, o.job.label))
                if on_outcome is not None:
                    on_outcome(o)
    return outcomes


def _with_bar(stream: Iterable[JobOutcome], total: int, shown: dict[Task, str], outcomes: dict[Task, JobOutcome]) -> None:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn, TimeRemainingColumn

    console = Console(stderr=True)
    with Progress("[progress.description]{task.description}", BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), TimeRemainingColumn(), console=console, transient=True) as bar:
        task = bar.add_task("attributing", total=total)
        failed = 0
        for o in stream:
            outcomes[o.job] = o
            if not o.ok:
                failed += 1
                echo_failure(o, shown.get(o.job, o.job.label), bar.console)
                bar.update(task, description=f"attributing ([red]{failed} failed[/])")
            bar.advance(task)
