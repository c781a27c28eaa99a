"""The typer application object every CLI command module registers on, the
options every command shares (`--version`, `--plugin-timeout`, `--traceback`),
and the edge between a user's error and a bug: an exception no command turned
into an exit status is reported as one line, "internal error (a bug)", with
`ExitStatus.INTERNAL`; the traceback only under `--traceback`."""
import errno
import os
import traceback as _tb
from typing import Any, Optional

import typer
from typer.core import TyperGroup
from typer.exceptions import TyperException

from rulekit.cli import helpfmt
from rulekit.cli.status import ExitStatus

helpfmt.install()

# exceptions that are typer's own way of ending a command (usage errors, Exit, Abort): not bugs
_PASS = (typer.Exit, typer.Abort, TyperException)


class _Group(TyperGroup):
    """The root group: runs the command and turns an unexpected exception into one line."""

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except _PASS:
            raise
        except Exception as e:  # noqa: BLE001 - the one place a bug becomes an exit status
            if isinstance(e, OSError) and e.errno == errno.EPIPE:
                raise  # `rulekit ... | head`: click ends quietly
            if ctx.params.get("traceback"):
                typer.echo("".join(_tb.format_exception(e)).rstrip(), err=True)
                hint = ""
            else:
                hint = " (run with --traceback for the details)"
            msg = str(e).splitlines()[0] if str(e) else ""
            typer.echo(f"rulekit: internal error (a bug): {type(e).__name__}{': ' + msg if msg else ''}{hint}", err=True)
            raise typer.Exit(ExitStatus.INTERNAL) from None


app = typer.Typer(cls=_Group, no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
                  context_settings={"help_option_names": ["-h", "--help"]},
                  help="rulekit: rules for failure attribution of distributed GPU jobs.")


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            v = version("rulekit")
        except PackageNotFoundError:  # run from a source tree that is not installed
            v = "unknown (not installed)"
        typer.echo(f"rulekit {v}")
        raise typer.Exit(ExitStatus.OK)


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", "-V", callback=_version, is_eager=True,
                                 help="Print the version and exit."),
    plugin_timeout: Optional[float] = typer.Option(
        None, "--plugin-timeout", metavar="SECONDS", envvar="RULEKIT_PLUGIN_TIMEOUT", show_envvar=True,
        help="Time limit for importing each Python rule plugin (default 10)."),
    traceback: bool = typer.Option(False, "--traceback", help="On an internal error, print the traceback."),
) -> None:
    """rulekit: rules for failure attribution of distributed GPU jobs."""
    if plugin_timeout is not None:
        if plugin_timeout <= 0:
            typer.echo("error: --plugin-timeout must be a positive number of seconds", err=True)
            raise typer.Exit(ExitStatus.USAGE)
        os.environ["RULEKIT_PLUGIN_TIMEOUT"] = str(plugin_timeout)  # read by the loader, inherited by workers
