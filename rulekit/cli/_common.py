"""Helpers the toolkit commands share: argument checks and writing output.
Usage errors exit 2 with one line on stderr; nothing here analyses anything."""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

import typer

from rulekit.cli.formats import FORMATS


def check_format(fmt: str, allowed: Sequence[str] = FORMATS) -> None:
    if fmt not in allowed:
        typer.echo(f"error: unknown format {fmt!r}; use one of {', '.join(allowed)}", err=True)
        raise typer.Exit(2)


def check_paths_exist(paths: Sequence[Path] | None) -> None:
    for p in paths or ():
        if not p.exists():
            typer.echo(f"error: {p}: no such file or folder", err=True)
            raise typer.Exit(2)


def write_output(text: str, output: Path | None) -> None:
    if output is None:
        if text:
            typer.echo(text)
        return
    try:
        output.write_text(text + "\n", encoding="utf-8")
    except OSError as e:
        typer.echo(f"error: cannot write {output}: {e.strerror}", err=True)
        raise typer.Exit(2)
