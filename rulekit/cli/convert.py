"""`rulekit convert FILE --to dsl|toml [-o OUT]`: TOML rule files <-> the DSL.

A thin layer over `rulekit.rules.dsl.toml_to_dsl` / `dsl_to_toml`: prints the result
(or writes OUT).  Input with errors is reported as diagnostics, exit 1; an
unreadable file exits 2.
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from rulekit.cli.app import app
from rulekit.cli.render import print_diagnostics
from rulekit.cli.status import ExitStatus
from rulekit.diagnostics import RulekitError


@app.command("convert")
def convert_command(
    file: Path = typer.Argument(..., help="A TOML rule file (*.toml, *.test.toml) or a DSL file (*.rule)."),
    to: str = typer.Option(..., "--to", help="Target format: dsl or toml."),
    out: Optional[Path] = typer.Option(None, "-o", "--output", help="Write here instead of standard output."),
) -> None:
    """Convert a TOML rule file to the DSL, or a DSL file to TOML (filters, refiners and collectors stay DSL-only)."""
    from rulekit.rules.dsl import dsl_to_toml, toml_to_dsl

    target = to.lower()
    if target not in ("dsl", "toml"):
        typer.echo(f"error: --to must be dsl or toml, not {to!r}", err=True)
        raise typer.Exit(ExitStatus.USAGE)
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        typer.echo(f"error: cannot read {file}: {e}", err=True)
        raise typer.Exit(ExitStatus.USAGE)
    try:
        result = toml_to_dsl(text, str(file)) if target == "dsl" else dsl_to_toml(text, str(file))
    except RulekitError as e:
        print_diagnostics(e.diagnostics, {str(file): text}, err=True)
        raise typer.Exit(ExitStatus.FINDINGS)
    if out is None:
        typer.echo(result, nl=False)
    else:
        out.write_text(result, encoding="utf-8")
