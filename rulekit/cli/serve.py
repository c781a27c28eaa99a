"""`rulekit serve`: the Attribution Service on uvicorn (see docs/service.md).

The corpus: the `--rules` folders on top of the bundled rules (`--no-bundled`: alone),
or the project file's (`rulekit.rules.project`), the same the CLI loads; the workers
load exactly those paths.  Start-up as the article says: load the catalog, run its inline tests (lines,
metric series) and job tests, and refuse to start (exit 2) when one fails,
unless --allow-failing-tests.  Then bind the port (a busy or impossible port is
a one-line error and exit 2, never a traceback) and serve: one process with
--workers 1, else uvicorn's supervisor and N spawned workers, each loading the
corpus once.  SIGINT/SIGTERM shut down gracefully (in-flight requests finish,
up to --graceful-timeout seconds); the default state folder (the spool of open
jobs) is removed on the way out, signal or not.  The bearer token, if any, comes
from RULEKIT_SERVICE_TOKEN.  Prints the listening URL on stderr.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import tempfile
from pathlib import Path
from typing import Optional

import typer

from rulekit.cli._common import bundled_option, check_paths_exist, choose_or_exit
from rulekit.cli.app import app
from rulekit.cli.listen import bind_or_exit, url_host
from rulekit.cli.status import ExitStatus


@app.command()
def serve(
    host: str = typer.Option("127.0.0.1", help="Address to listen on (loopback by default; see docs/service.md "
                                                "before exposing it)."),
    port: int = typer.Option(8000, min=0, max=65535, help="Port to listen on (0: any free port)."),
    workers: int = typer.Option(1, min=1, max=64, help="Worker processes (each loads the corpus once)."),
    rules: Optional[list[Path]] = typer.Option(None, "--rules", "-r", help="Rule folder(s) on top of the bundled rules "
                                               "(default: the project file's `rules`)."),
    bundled: Optional[bool] = bundled_option(),
    allow_failing_tests: bool = typer.Option(False, "--allow-failing-tests",
                                             help="Serve even if a start-up test fails (health says degraded)."),
    max_body_mb: float = typer.Option(64.0, min=0.001, max=4096, help="Largest request body (MiB); larger: 413."),
    header_timeout: float = typer.Option(10.0, min=0.1, help="Seconds a client has to send complete headers."),
    body_timeout: float = typer.Option(30.0, min=0.1, help="Seconds between two chunks of a request body (408)."),
    body_deadline: float = typer.Option(120.0, min=0.1, help="Seconds a whole request body may take to arrive (408)."),
    request_timeout: float = typer.Option(300.0, min=0.1, help="Seconds one request's work (attribution) may take; "
                                          "beyond, a JSON 503 and the work is abandoned."),
    job_ttl: float = typer.Option(900.0, min=1.0, help="Seconds an open job may stay idle before it is retired."),
    max_jobs: int = typer.Option(1000, min=1, help="Open jobs at most (POST /v1/jobs answers 429 beyond)."),
    graceful_timeout: int = typer.Option(30, min=0, help="Seconds in-flight requests get at shutdown."),
    state_dir: Optional[Path] = typer.Option(None, help="Folder for open jobs (default: a fresh temporary one)."),
    access_log: bool = typer.Option(True, "--access-log/--no-access-log", help="Log every request."),
    http: str = typer.Option("auto", help="HTTP/1.1 parser: httptools (C, the default when installed: `auto`) "
                             "or h11 (pure Python)."),
) -> None:
    """Serve attribution over HTTP (FastAPI on uvicorn): POST /v1/attribute, the /v1/jobs cycle, /v1/health."""
    from rulekit.cli.render import print_diagnostics
    from rulekit.diagnostics import Severity
    from rulekit.service.settings import ServiceSettings, token_from_env
    from rulekit.service.startup import CorpusError, load_service_corpus, self_test

    from rulekit.service.limits import http_protocol

    try:
        http_protocol(http, header_timeout)
    except ValueError as e:
        typer.echo(f"error: --{e}", err=True)
        raise typer.Exit(ExitStatus.USAGE)
    check_paths_exist(rules)
    choice = choose_or_exit(rules, bundled)
    try:
        engine, digest, load = load_service_corpus(choice.load_paths)
    except CorpusError as e:
        print_diagnostics([d for d in e.load.diagnostics if d.severity is Severity.ERROR], e.load.texts, err=True)
        typer.echo("error: the rules do not load; not starting", err=True)
        raise typer.Exit(ExitStatus.USAGE)
    summary = self_test(engine)
    if not summary["ok"]:
        for f in summary["failures"]:
            typer.echo(f"start-up test failed: {f['where']}: {f['kind']} test `{f['name']}`: {f['why']}", err=True)
        if not allow_failing_tests:
            typer.echo(f"error: {summary['failed']} of {summary['total']} start-up tests fail; not starting "
                       "(fix the rules, or pass --allow-failing-tests to serve anyway)", err=True)
            raise typer.Exit(ExitStatus.USAGE)
        typer.echo(f"warning: serving with {summary['failed']} failing start-up tests (--allow-failing-tests)", err=True)

    sock = bind_or_exit(host, port)
    own_state = state_dir is None
    state = Path(tempfile.mkdtemp(prefix="rulekit-jobs-")) if own_state else state_dir
    assert state is not None
    state.mkdir(parents=True, exist_ok=True)
    settings = ServiceSettings(host=host, port=sock.getsockname()[1], workers=workers,
                               rules=[str(Path(p).resolve()) for p in choice.load_paths],
                               max_body_bytes=int(max_body_mb * (1 << 20)), header_timeout_s=header_timeout,
                               body_timeout_s=body_timeout, body_deadline_s=body_deadline,
                               request_timeout_s=request_timeout, job_ttl_s=job_ttl, max_open_jobs=max_jobs,
                               state_dir=str(state), allow_failing_tests=allow_failing_tests,
                               access_log=access_log, graceful_shutdown_s=graceful_timeout, http=http)
    token = token_from_env()
    typer.echo(f"rulekit serving {len(engine.rules)} rules (corpus {digest[:12]}, {summary['passed']}/"
               f"{summary['total']} start-up tests pass) on http://{url_host(host)}:{settings.port} with "
               f"{workers} worker{'s' if workers > 1 else ''}{', bearer token required' if token else ''}", err=True)
    def remove_state() -> None:
        if own_state:
            shutil.rmtree(state, ignore_errors=True)

    # uvicorn re-raises SIGTERM/SIGINT once it has drained, with the handlers it found: these
    # remove the spool of open jobs (untrusted lines) first, then die of the signal as uvicorn meant
    def on_signal(signum: int, frame: object) -> None:
        remove_state()
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        _run(engine, settings, sock, digest, summary, token)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        sock.close()
        remove_state()


def _run(engine, settings, sock: socket.socket, digest: str, summary: dict, token: str | None) -> None:
    import uvicorn

    from rulekit.service.limits import http_protocol
    from rulekit.service.settings import SETTINGS_ENV
    from rulekit.service.worker import SELF_TEST_ENV

    common = dict(http=http_protocol(settings.http, settings.header_timeout_s), lifespan="on", access_log=settings.access_log,
                  timeout_keep_alive=settings.keep_alive_s, timeout_graceful_shutdown=settings.graceful_shutdown_s,
                  limit_concurrency=settings.max_concurrency, backlog=settings.backlog, proxy_headers=False,
                  server_header=False, log_level="info")
    if settings.workers == 1:
        from rulekit.service.app import create_app

        for source, fmt in (("applog", "text"), ("syslog", "text"), ("scheduler", "slurm")):
            engine.scan_plan(source, fmt)
        asgi = create_app(engine, settings, corpus_hash=digest, self_test=summary, token=token)
        uvicorn.Server(uvicorn.Config(asgi, **common)).run(sockets=[sock])
        return
    from uvicorn.supervisors import Multiprocess

    from rulekit.service.metrics import MULTIPROC_ENV

    # the workers' Prometheus values go to files in one folder; /metrics sums them
    prom = Path(settings.state_dir) / "prometheus"
    shutil.rmtree(prom, ignore_errors=True)
    prom.mkdir(parents=True)
    os.environ[MULTIPROC_ENV] = str(prom)
    os.environ[SETTINGS_ENV] = settings.to_env()
    os.environ[SELF_TEST_ENV] = json.dumps({"corpus_hash": digest, "summary": summary})
    config = uvicorn.Config("rulekit.service.worker:create_worker_app", factory=True, workers=settings.workers,
                            **common)
    del engine  # each worker loads its own
    Multiprocess(config, sockets=[sock]).run()
