"""`rulekit check [PATHS]`: load and validate a corpus and report every problem.

The corpus is the named paths on top of the bundled rules (`--no-bundled`: the
named paths alone), or the project file's (`rulekit.rules.project`).  Renders
`rulekit.analysis.check.check_paths` as text with caret excerpts,
`--format json`, `--format sarif` or `--format github`.  Exit 0 when clean (notes
allowed), 1 when errors or warnings were found, 2 on a usage or I/O error.
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from rulekit.analysis.check import check_paths
from rulekit.cli._common import bundled_option, check_format, check_paths_exist, choose_or_exit, write_output
from rulekit.cli.app import app
from rulekit.cli.render import exit_code, render_diagnostics


@app.command()
def check(
    paths: Optional[list[Path]] = typer.Argument(None, help="Rule folders or files (default: the project file's "
                                                            "`rules`, else the bundled rules)."),
    fmt: str = typer.Option("text", "--format", "-f", help="text, json, sarif or github"),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write the report to FILE instead of stdout."),
    watch: bool = typer.Option(False, "--watch", "-w", help="Check again whenever a rule file changes."),
    bundled: Optional[bool] = bundled_option(),
) -> None:
    """Load and validate a rule corpus; report every problem at once."""
    check_format(fmt)
    check_paths_exist(paths)
    choice = choose_or_exit(paths, bundled)
    if watch:
        from rulekit.cli.watch import watch_loop

        watch_loop(list(choice.report_paths), lambda: check(paths, fmt, output, False, bundled))
    report = check_paths(choice.load_paths)
    write_output(render_diagnostics(report.diagnostics, fmt, report.texts, tool="check"), output)
    raise typer.Exit(exit_code(report.diagnostics))
