"""The `rulekit` command line: a thin layer that renders what the core returns.

Each command lives in its own module and registers itself on `app`; the modules
are imported when their command is looked up (`rulekit.cli.app.COMMAND_MODULES`)
when `main()` runs, so starting one command does not import the others; the app
read any other way (`get_command(app)`, `CliRunner().invoke(app)`) has them all.
Must not import a command module at import time."""
from rulekit.cli.app import app, load_commands

__all__ = ["app", "load_commands", "main"]


def main() -> None:
    app.on_demand()
    app()
