"""The typer application object every CLI command module registers on, the
options every command shares (`--version`, `--plugin-timeout`, `--traceback`),
and the edge between a user's error and a bug: an exception no command turned
into an exit status is reported as one line, "internal error (a bug)", with
`ExitStatus.INTERNAL`; the traceback only under `--traceback`.

Commands load lazily in the console script: `COMMAND_MODULES` names the module
that registers each command, and after `app.on_demand()` (what `rulekit.cli.main`
does) the root group imports a command's module only when that command is looked
up (`rulekit attribute` never imports the LSP, lint, the HTTP service or the
dashboard); listing the commands (`--help`, a typo) imports them all, in this
order, so help reads as before.  Anyone else who reads the app (typer's
`get_command(app)`, `CliRunner().invoke(app, ...)`) finds every command, as
before the lazy loading.  Must not import a command module at import time."""
import errno
import importlib
import os
import traceback as _tb
from typing import Any, Optional

import typer
import typer.main
from typer.core import TyperGroup
from typer.exceptions import TyperException

from rulekit.cli import helpfmt
from rulekit.cli.status import ExitStatus

helpfmt.install()

# exceptions that are typer's own way of ending a command (usage errors, Exit, Abort): not bugs
_PASS = (typer.Exit, typer.Abort, TyperException)


# command name -> the module of rulekit.cli that registers it; the order of `rulekit --help`
COMMAND_MODULES = {
    "attribute": "attribute", "serve": "serve", "check": "check", "explain": "explain", "test": "test",
    "lint": "lint", "fmt": "fmt", "convert": "convert", "lsp": "lsp", "schema": "schema", "diff": "diff",
    "dashboard": "blueprint", "blueprint": "blueprint", "fleet": "fleet", "rules": "rules", "mine": "mine",
}
_ORDER = list(dict.fromkeys(COMMAND_MODULES.values()))
# commands that have closed what they opened (files, pools, sessions) when they return:
# the console script may end them without the interpreter's teardown (`rulekit.cli.main`);
# not the servers (serve, lsp), nor the Blueprint's (threads, a dashboard, Dask)
FAST_EXIT = frozenset({"attribute", "check", "explain", "test", "lint", "fmt", "convert", "schema", "diff"})


def load_commands(names: Any = None) -> None:
    """Import the modules that register `names` (default: every command), in help order."""
    wanted = set(COMMAND_MODULES.values()) if names is None else {COMMAND_MODULES[n] for n in names}
    for mod in _ORDER:
        if mod in wanted:
            importlib.import_module(f"rulekit.cli.{mod}")


def _rank(module: str) -> int:
    mod = module.rsplit(".", 1)[-1]
    return _ORDER.index(mod) if mod in _ORDER else len(_ORDER)


class _App(typer.Typer):
    """The root application.  Its command and group lists fill themselves (every command
    module, in help order) the first time anything reads them, unless `on_demand()`
    was called first: then the root group loads commands as they are looked up."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._lazy, self._filled, self._filling = False, False, 0
        self.ran: str | None = None  # the command the root group resolved (None before one runs)
        super().__init__(*args, **kwargs)

    # a module registering its command appends to the lists: that is not a read
    def command(self, *args: Any, **kwargs: Any) -> Any:
        register = super().command(*args, **kwargs)

        def decorator(f: Any) -> Any:
            self._filling += 1
            try:
                return register(f)
            finally:
                self._filling -= 1
        return decorator

    def add_typer(self, *args: Any, **kwargs: Any) -> None:
        self._filling += 1
        try:
            super().add_typer(*args, **kwargs)
        finally:
            self._filling -= 1

    def on_demand(self) -> None:
        """Load commands only when they are looked up (the console script)."""
        self._lazy = True

    def _fill(self) -> None:
        if self._lazy or self._filled or self._filling:
            return
        self._filling += 1
        try:
            load_commands()
            _sort(self)
            self._filled = True
        finally:
            self._filling -= 1

    @property  # type: ignore[override]
    def registered_commands(self) -> list:
        self._fill()
        return self._commands

    @registered_commands.setter
    def registered_commands(self, value: list) -> None:
        self._commands = value

    @property  # type: ignore[override]
    def registered_groups(self) -> list:
        self._fill()
        return self._groups

    @registered_groups.setter
    def registered_groups(self, value: list) -> None:
        self._groups = value


def _sort(typer_app: Any) -> None:
    # a module imported directly (`import rulekit.cli.check`) registered out of turn: help order
    typer_app._commands.sort(key=lambda c: _rank(getattr(c.callback, "__module__", "")))


class _Group(TyperGroup):
    """The root group: loads commands on demand (see the module docstring), runs the
    command and turns an unexpected exception into one line."""

    def _refresh(self, names: Any = None) -> None:
        load_commands(names)
        _sort(app)
        fresh = typer.main.get_command(app)
        self.commands = dict(fresh.commands)  # type: ignore[attr-defined]

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        if cmd_name not in self.commands:
            self._refresh([cmd_name] if cmd_name in COMMAND_MODULES else None)
        return super().get_command(ctx, cmd_name)

    def list_commands(self, ctx: Any) -> list[str]:
        if any(n not in self.commands for n in COMMAND_MODULES):
            self._refresh()
        return super().list_commands(ctx)

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        name, cmd, rest = super().resolve_command(ctx, args)
        app.ran = cmd.name if cmd is not None else name
        return name, cmd, rest

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


app = _App(cls=_Group, no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
                  context_settings={"help_option_names": ["-h", "--help"]},
                  help="rulekit: rules for failure attribution of distributed GPU jobs.")


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        from rulekit.config import DISTRIBUTION

        try:
            v = version(DISTRIBUTION)
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
