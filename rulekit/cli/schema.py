"""`rulekit schema [--kind rules|tests]`: print the JSON Schema of TOML rule files
(or of `*.test.toml` job-test files), generated from the rule model; `--write`
refreshes the copies shipped in the package (`rulekit/data/*.schema.json`).
Exit 0; 2 on a usage error.
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from rulekit.cli._common import write_output
from rulekit.cli.app import app
from rulekit.cli.status import ExitStatus
from rulekit.rules import schema as schema_mod


@app.command("schema")
def schema(
    kind: str = typer.Option("rules", "--kind", "-k", help="rules (TOML rule files) or tests (*.test.toml)"),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write the schema to FILE instead of stdout."),
    write: bool = typer.Option(False, "--write", help="Rewrite the schema files shipped in the package."),
) -> None:
    """Print the JSON Schema for TOML rule files (for taplo / Even Better TOML)."""
    if write:
        for p in schema_mod.write_shipped():
            typer.echo(f"wrote {p}")
        return
    if kind not in schema_mod.SHIPPED:
        typer.echo(f"error: unknown schema kind {kind!r}; use rules or tests", err=True)
        raise typer.Exit(ExitStatus.USAGE)
    write_output(schema_mod.dumps(kind).rstrip("\n"), output)
