"""The typer application object every CLI command module registers on, and the
options every command shares (`--version`, `--plugin-timeout`)."""
import os
from typing import Optional

import typer

from rulekit.cli import helpfmt

helpfmt.install()
app = typer.Typer(no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
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
        raise typer.Exit(0)


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", "-V", callback=_version, is_eager=True,
                                 help="Print the version and exit."),
    plugin_timeout: Optional[float] = typer.Option(
        None, "--plugin-timeout", metavar="SECONDS", envvar="RULEKIT_PLUGIN_TIMEOUT", show_envvar=True,
        help="Time limit for importing each Python rule plugin (default 10)."),
) -> None:
    """rulekit: rules for failure attribution of distributed GPU jobs."""
    if plugin_timeout is not None:
        if plugin_timeout <= 0:
            typer.echo("error: --plugin-timeout must be a positive number of seconds", err=True)
            raise typer.Exit(2)
        os.environ["RULEKIT_PLUGIN_TIMEOUT"] = str(plugin_timeout)  # read by the loader, inherited by workers
