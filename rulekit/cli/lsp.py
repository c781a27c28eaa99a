"""`rulekit lsp`: start the language server (stdio by default, or `--tcp HOST:PORT`).

Imports the server package lazily, so the rest of the CLI never loads pygls."""
from __future__ import annotations

import typer

from rulekit.cli.app import app
from rulekit.cli.status import ExitStatus


@app.command("lsp")
def lsp(tcp: str = typer.Option(None, "--tcp", metavar="HOST:PORT",
                                help="listen on TCP instead of stdio, e.g. 127.0.0.1:2087")) -> None:
    """Run the rulekit language server (diagnostics, hover, navigation, tests in the editor)."""
    from rulekit_lsp.server import server, start_stdio

    if tcp:
        host, sep, port = tcp.rpartition(":")
        if not sep or not port.isdigit():
            typer.echo(f"error: --tcp expects HOST:PORT, got {tcp!r}", err=True)
            raise typer.Exit(ExitStatus.USAGE)
        try:
            server.start_tcp(host or "127.0.0.1", int(port))
        except OSError as e:  # a busy port: one line and exit 2, as `serve` and `dashboard`
            from rulekit.cli.listen import cannot_listen

            cannot_listen(host or "127.0.0.1", int(port), e)
    else:
        start_stdio()
