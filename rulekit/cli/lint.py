"""`rulekit lint [PATHS]`: the corpus regex lint (see `rulekit.analysis.lint`).

Overlapping and shadowed extractors (with a witness line), patterns the
prefilter cannot narrow or only weakly, patterns too broad or too slow on a
benign log sample (`--sample FILE`, default the packaged one), symptoms never
emitted, and (unless `--no-tests`) rules with no test and rules no test fires.
Formats as for `rulekit check`.  Exit 0 clean (notes allowed), 1 findings,
2 usage or I/O error or a corpus that does not load.  The exact overlap searches
(most of a first lint's time) are kept in the lint memo on disk, shared with the
language server (`rulekit.analysis.lint.load_memo` / `save_memo`): a re-lint after
an edit searches only the patterns that changed.
"""
from __future__ import annotations

import functools

from pathlib import Path
from typing import Optional

import typer

from rulekit.analysis.lint import lint_corpus, load_memo, save_memo
from rulekit.analysis.settings import load_settings
from rulekit.analysis.testrun import run_tests
from rulekit.cli._common import (bundled_option, check_format, check_paths_exist, choose_or_exit, load_engine_or_exit,
                                 write_output)
from rulekit.cli.app import app
from rulekit.cli.render import exit_code, print_diagnostics, render_diagnostics
from rulekit.cli.status import ExitStatus
from rulekit.rules.project import example_paths


@app.command()
def lint(
    paths: Optional[list[Path]] = typer.Argument(None, help="Rule folders or files (default: the project file's "
                                                            "`rules`, else the bundled rules)."),
    fmt: str = typer.Option("text", "--format", "-f", help="text, json, sarif or github"),
    sample: Optional[Path] = typer.Option(None, "--sample", help="Benign log sample (default: the packaged one)."),
    config: Optional[Path] = typer.Option(None, "--config", help="Settings TOML overriding analysis/defaults.toml."),
    no_tests: bool = typer.Option(False, "--no-tests", help="Skip running the tests (no RK402/RK403)."),
    no_cost: bool = typer.Option(False, "--no-cost", help="Skip timing the patterns (no RK308; reproducible output)."),
    examples: Optional[list[Path]] = typer.Option(None, "--examples", "-e", help="Example job folders for the coverage run."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write the report to FILE instead of stdout."),
    bundled: Optional[bool] = bundled_option(),
) -> None:
    """Lint a corpus's regexes: overlap, shadowing, prefilter keys, breadth, cost, coverage."""
    check_format(fmt)
    check_paths_exist(paths)
    choice = choose_or_exit(paths, bundled)
    settings, bad = load_settings(config, choice.project)
    if bad:
        print_diagnostics(bad, err=True)
        raise typer.Exit(ExitStatus.USAGE)
    data = None
    if sample is not None:
        try:
            data = sample.read_bytes()
        except OSError as e:
            typer.echo(f"error: cannot read sample {sample}: {e.strerror}", err=True)
            raise typer.Exit(ExitStatus.USAGE)
    res = load_engine_or_exit(choice.load_paths, hint="the corpus does not load; run `rulekit check` first")
    # the bundled rules under a user's own are context, not linted (asked per rule and finding: memoized per file)
    focus = functools.lru_cache(maxsize=None)(choice.owns) if choice.own else None
    results = None
    if not no_tests:
        results = run_tests(res.engine, example_paths(choice, examples), only=focus).results
    load_memo()  # what earlier lints found of these patterns (the language server's too): only new ones are searched
    diags = lint_corpus(res, data, settings, results, cost=not no_cost, focus=focus)
    save_memo()
    write_output(render_diagnostics(diags, fmt, res.texts, tool="lint"), output)
    raise typer.Exit(exit_code(diags))
