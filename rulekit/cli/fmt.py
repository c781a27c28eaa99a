"""`rulekit fmt [PATHS] [--check]`: format `.rule` DSL files and TOML rule files.

A thin layer over `rulekit.rules.dsl.format_dsl` / `format_toml`: reads the files,
writes back the ones that change (or, with `--check`, only lists them and exits
1).  A `.rule` file with syntax errors is reported and left alone.  Exit 2 when a
path cannot be read.
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from rulekit.cli.app import app
from rulekit.cli.render import print_diagnostics
from rulekit.cli.status import ExitStatus
from rulekit.diagnostics import Diagnostic, Span


def _files(paths: list[Path]) -> list[Path]:
    """Files as given; for a folder, its top-level `*.rule` and `*.toml` files (a rules
    folder is flat, like the loader reads it; `pyproject.toml` is not a rule file)."""
    out: list[Path] = []
    for p in paths:
        if p.is_dir():
            out.extend(sorted(f for f in p.iterdir() if f.suffix in (".rule", ".toml") and f.is_file()
                              and not f.name.startswith(".") and f.name != "pyproject.toml"))
        else:
            out.append(p)
    return out


@app.command("fmt")
def fmt_command(
    paths: Optional[list[Path]] = typer.Argument(None, help="Files or folders (default: the current folder)."),
    check: bool = typer.Option(False, "--check", help="Only report files that would change; exit 1 if any."),
) -> None:
    """Format rule files: `.rule` (canonical DSL layout) and `.toml` (through tomlkit); comments are kept."""
    from rulekit.rules.dsl import format_dsl, format_toml, parse_ast

    changed: list[Path] = []
    problems: list[Diagnostic] = []
    texts: dict[str, str] = {}
    for f in _files(paths or [Path(".")]):
        try:
            text = f.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            problems.append(Diagnostic("RK001", f"cannot read `{f}`: {e}", Span(str(f), 1, 1)))
            continue
        if f.suffix == ".rule":
            _, diags = parse_ast(text, str(f))
            if diags:
                texts[str(f)] = text
                problems.extend(diags)
                continue
            new = format_dsl(text, str(f))
        elif f.suffix == ".toml":
            new = format_toml(text)
        else:
            continue
        if new != text:
            changed.append(f)
            if not check:
                f.write_text(new, encoding="utf-8")
    for f in changed:
        typer.echo(f"{'would reformat' if check else 'reformatted'} {f}")
    if problems:
        print_diagnostics(problems, texts, err=True)
    if any(d.code == "RK001" for d in problems):
        raise typer.Exit(ExitStatus.USAGE)
    if problems or (check and changed):
        raise typer.Exit(ExitStatus.FINDINGS)
