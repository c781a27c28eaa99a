"""`rulekit blueprint run` and `rulekit dashboard`: the Blueprint's commands.

`blueprint run` loads the config folder (located errors, exit 2), the rules
(embedded engine) unless `--service`, runs the orchestrator and writes to the
outputs; a one-line summary per attempt goes to stderr.  With `--executor dask`
(or `-j N`) each attempt is one task on an executor, collected and attributed
on a worker, and written here.  Exit 0 when every execution-context connector
answered, 1 when one failed or an attempt's task failed (the others' results
are still written), 2 on bad input.  `dashboard` serves the dashboard over a
SQLite store with uvicorn (read-only but for verdict feedback; its bearer token,
if any, from RULEKIT_DASHBOARD_TOKEN).  `feedback` records a judgement of a
verdict; `export-test` turns a judged attempt into a job directory.
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from rulekit.cli.app import app
from rulekit.cli.batch import EXECUTOR_HELP, SCHEDULER_HELP, TIMEOUT_HELP, check_executor
from rulekit.cli.render import print_diagnostics
from rulekit.cli.status import ExitStatus
from rulekit.diagnostics import RulekitError

blueprint_app = typer.Typer(no_args_is_help=True, add_completion=False,
                            help="The Blueprint: discover jobs, collect evidence, attribute, store.")
app.add_typer(blueprint_app, name="blueprint")


@blueprint_app.command("run")
def run_cmd(
    configs: Path = typer.Option(..., "--configs", help="Folder of Blueprint config TOML files (or one file)."),
    service: Optional[str] = typer.Option(None, "--service", help="URL of a running `rulekit serve`; default: embedded engine."),
    output: Optional[list[str]] = typer.Option(None, "--output", "-o", help="stdout (JSON lines) or sqlite:PATH; repeatable."),
    since: Optional[str] = typer.Option(None, "--since", help="Attempts ending at/after T (RFC 3339, epoch, or 24h ago)."),
    until: Optional[str] = typer.Option(None, "--until", help="Attempts ending at/before T."),
    job: Optional[str] = typer.Option(None, "--job", help="Only this job id."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No per-attempt summary on stderr."),
    executor: str = typer.Option("local", "--executor", "-e", help=EXECUTOR_HELP),
    scheduler: Optional[str] = typer.Option(None, "--scheduler", help=SCHEDULER_HELP),
    jobs: Optional[int] = typer.Option(None, "--jobs", "-j", help="Processes for the attempts (local, a large "
                                       "log's scan workers included; or local Dask workers; 0: one per core). "
                                       "Default: local runs them one by one in this process, dask one worker "
                                       "per core; -j 1 keeps to one core."),
    timeout: float = typer.Option(0, "--timeout", help=TIMEOUT_HELP),
    fleet: bool = typer.Option(True, "--fleet/--no-fleet", help="Attribute each attempt with its nodes' history "
                               "in the first sqlite output (the fleet's memory; see docs/blueprint.md)."),
    bundled: Optional[bool] = typer.Option(None, "--bundled/--no-bundled", show_default=False,
                                           help="Load the bundled rules under the config's `rules` (the default); "
                                                "default from the config's [blueprint] `bundled`, then the project file."),
) -> None:
    """Attribute the jobs the configured connectors find and write the results."""
    check_executor(executor, scheduler)
    from rulekit.blueprint.config import load_config
    from rulekit.blueprint.model import Window, parse_time
    from rulekit.blueprint.orchestrator import Attributor, run
    from rulekit.blueprint.outputs import open_output
    from rulekit.blueprint.store import StoreError

    try:
        cfg = load_config(configs)
    except RulekitError as e:
        print_diagnostics(e.diagnostics, {}, err=True)
        raise typer.Exit(ExitStatus.USAGE)
    try:
        window = Window(parse_time(since) if since else None, parse_time(until) if until else None)
    except ValueError as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(ExitStatus.USAGE)
    outs = []
    try:
        for spec in output or ["stdout"]:
            outs.append(open_output(spec))
    except (ValueError, StoreError, OSError) as e:
        typer.echo(f"error: --output: {e}", err=True)
        raise typer.Exit(ExitStatus.USAGE)
    memory = None
    db = next((spec.split(":", 1)[1] for spec in output or [] if spec.startswith("sqlite:")), None)
    if fleet and db:
        from rulekit.blueprint.fleet_memory import FleetMemory

        memory = FleetMemory(db, cfg.fleet)
    in_process = executor == "local" and jobs in (None, 1) and not timeout
    engine = None
    from rulekit.cli._common import choose_or_exit

    # the config's rules (else the project file's) on top of the bundled ones: what the CLI loads
    corpus = choose_or_exit(cfg.rules or None, bundled if bundled is not None else cfg.bundled).load_paths
    if in_process and service:
        attributor = Attributor(service_url=service)
    elif not service:
        from rulekit.cli._common import load_engine_or_exit

        # checked here (located errors, exit 2), also before any worker starts
        engine = load_engine_or_exit(corpus).engine
        if in_process and jobs == 1:
            engine = engine.with_options(max_scan_workers=1)  # -j 1: one core
        attributor = Attributor(engine=engine)

    def summary(r: dict) -> None:
        if quiet:
            return
        v = r.get("verdict") or {}
        bad = ",".join(b["node"] for b in v.get("bad_nodes") or []) or "-"
        failed = [c["collector"] for c in r["coverage"]["collectors"] if c["status"] == "failed"]
        typer.echo(f"{r['key']}: {(v.get('outcome') or 'not attributed').upper()}/{v.get('sub_domain') or '-'} "
                   f"bad={bad}" + (f"  evidence incomplete ({', '.join(failed)} failed)" if failed else ""), err=True)

    try:
        if in_process:
            report = run(cfg, attributor, outs, window, job, on_result=summary, fleet=memory)
        else:
            report = _run_on_executor(cfg, configs, outs, window, job, service, engine, executor, scheduler,
                                      jobs, timeout, summary, memory, corpus)
    finally:
        for o in outs:
            o.close()
    for f in report.context_failures:
        typer.echo(f"error: context connector {f['collector']} ({f['type']}) failed: {f['error']}", err=True)
    if not quiet:
        typer.echo(f"{len(report.results)} attempt(s) attributed", err=True)
    if report.context_failures or report.failed:
        raise typer.Exit(ExitStatus.FINDINGS)


def _run_on_executor(cfg, configs, outs, window, job, service, engine, executor, scheduler, jobs, timeout, summary,
                     memory=None, corpus=None):
    """The attempts as tasks on an executor (one task per attempt; results written here)."""
    from rulekit.blueprint.tasks import run_tasks
    from rulekit.executors import CorpusSpec, ExecutorError, make_executor

    def failed(key: str, error: str) -> None:
        typer.echo(f"error: {key}: {error}", err=True)

    try:
        ex = make_executor(executor, CorpusSpec.of(corpus), engine=engine, address=scheduler,
                           workers=jobs or None, timeout=timeout or None, cores=jobs or None)
    except ExecutorError as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(ExitStatus.USAGE)
    with ex:
        return run_tasks(cfg, configs, ex.map, outs, window, job, service_url=service, on_result=summary,
                         on_error=failed, budget_s=timeout or None, fleet=memory)


@app.command()
def dashboard(
    db: Path = typer.Option(..., "--db", help="SQLite store written by `rulekit blueprint run --output sqlite:PATH`."),
    host: str = typer.Option("127.0.0.1", help="Address to listen on."),
    port: int = typer.Option(8080, min=0, max=65535, help="Port to listen on (0: any free port)."),
    configs: Optional[Path] = typer.Option(None, "--configs", help="Blueprint config folder whose [fleet] section "
                                           "sets the fleet policy of the fleet page and /metrics."),
) -> None:
    """Serve the dashboard and its JSON API over a result store (read-only but for verdict feedback)."""
    from rulekit.blueprint.dashboard.app import create_app
    from rulekit.blueprint.store import StoreError, open_ro
    from rulekit.cli.listen import bind_or_exit, url_host

    try:
        open_ro(db).close()
    except StoreError as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(ExitStatus.USAGE)
    from rulekit.cli._common import fleet_policy_or_exit

    policy = fleet_policy_or_exit(configs)
    sock = bind_or_exit(host, port)  # before printing the URL: a busy port is one line and exit 2
    import uvicorn

    import os

    token = os.environ.get("RULEKIT_DASHBOARD_TOKEN", "").strip() or None  # never from the command line
    typer.echo(f"rulekit dashboard on http://{url_host(host)}:{sock.getsockname()[1]}/ over {db}"
               + ("; feedback needs the bearer token" if token else "; feedback from this host only"), err=True)
    try:
        uvicorn.Server(uvicorn.Config(create_app(db, policy, token), log_level="warning")).run(sockets=[sock])
    finally:
        sock.close()


@blueprint_app.command("feedback")
def feedback_cmd(
    attempt: str = typer.Argument(..., help="The attempt (JOB#N, or a job id: its latest attempt)."),
    db: Path = typer.Option(..., "--db", help="The result store (written by `blueprint run --output sqlite:PATH`)."),
    correct: bool = typer.Option(False, "--correct", help="The stored diagnosis is right."),
    wrong: bool = typer.Option(False, "--wrong", help="The stored diagnosis is wrong (say the right one below)."),
    outcome: Optional[str] = typer.Option(None, "--outcome", help="With --wrong: the right outcome."),
    symptom: Optional[str] = typer.Option(None, "--symptom", help="With --wrong: the right root symptom."),
    node: Optional[list[str]] = typer.Option(None, "--node", help="With --wrong: a node that was bad; repeatable."),
    who: Optional[str] = typer.Option(None, "--who", help="Who judged it (default: $USER)."),
    note: Optional[str] = typer.Option(None, "--note", help="Free text kept with the judgement."),
) -> None:
    """Record an operator's judgement of an attempt's diagnosis (who and when kept)."""
    import getpass
    import json as _json

    from rulekit.blueprint.rulestats import FeedbackError, record_feedback
    from rulekit.blueprint.store import StoreError, open_db

    if correct == wrong:
        typer.echo("error: say --correct or --wrong (one of them)", err=True)
        raise typer.Exit(ExitStatus.USAGE)
    if not db.exists():
        typer.echo(f"error: {db}: no such database", err=True)
        raise typer.Exit(ExitStatus.USAGE)
    import sqlite3

    try:
        con = open_db(db)
    except StoreError as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(ExitStatus.USAGE)
    except sqlite3.DatabaseError as e:
        typer.echo(f"error: {db}: not a rulekit result database ({e})", err=True)
        raise typer.Exit(ExitStatus.USAGE)
    try:
        row = record_feedback(con, attempt, "confirmed" if correct else "wrong", who or getpass.getuser(),
                              outcome=outcome, symptom=symptom, nodes=node or (), note=note)
    except FeedbackError as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(ExitStatus.USAGE)
    finally:
        con.close()
    typer.echo(_json.dumps(row))


@blueprint_app.command("export-test")
def export_test_cmd(
    attempt: str = typer.Argument(..., help="The judged attempt (JOB#N, or a job id: its latest attempt)."),
    db: Path = typer.Option(..., "--db", help="The result store holding the attempt and its feedback."),
    out: Path = typer.Option(..., "--out", "-o", help="The job directory to write (new, or an empty folder)."),
    configs: Optional[Path] = typer.Option(None, "--configs", help="Collect the logs again through this Blueprint "
                                           "config instead of using the lines the store kept."),
) -> None:
    """Turn a judged attempt into a job directory with expected.json: a regression test."""
    import json as _json

    from rulekit.blueprint.exporttest import ExportError, expectation, recollect, write_job_dir
    from rulekit.blueprint.keptlogs import from_context
    from rulekit.blueprint.rulestats import FeedbackError, feedback_of, resolve_key
    from rulekit.blueprint.store import StoreError, get_result, kept_logs, open_ro

    try:
        con = open_ro(db)
    except StoreError as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(ExitStatus.USAGE)
    notes: list[str] = []
    try:
        key = resolve_key(con, attempt)
        judged = feedback_of(con, key)
        if not judged:
            raise ExportError(f"attempt: {key} has no feedback; judge it first "
                              f"(`rulekit blueprint feedback --db {db} '{key}' --correct|--wrong ...`)")
        result = get_result(con, key) or {}
        expected = expectation(result, judged[-1])
        if configs is not None:
            from rulekit.blueprint.config import load_config

            try:
                cfg = load_config(configs)
            except RulekitError as e:
                print_diagnostics(e.diagnostics, {}, err=True)
                raise typer.Exit(ExitStatus.USAGE)
            kept, problems = recollect(cfg, key)
            notes += [f"collecting again: {p}" for p in problems]
        else:
            kept = kept_logs(con, key)
            if kept is None:
                kept = from_context(result)
                notes.append("the store kept no logs of this attempt (written by an older rulekit): only the lines "
                             "around its evidence are exported; give --configs to collect them again")
        notes += write_job_dir(out, result, kept, expected)
    except (FeedbackError, ExportError) as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(ExitStatus.USAGE)
    finally:
        con.close()
    for n in notes:
        typer.echo(f"note: {n}", err=True)
    typer.echo(f"wrote {out} ({judged[-1]['verdict']} by {judged[-1]['who']}): expected.json "
               f"{_json.dumps(expected)}", err=True)
    typer.echo(str(out))
