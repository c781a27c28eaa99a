"""Helpers the commands share: argument checks, loading the corpus, writing output.
Usage errors exit `ExitStatus.USAGE` with one line on stderr; nothing here
analyses anything."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import typer

from rulekit.cli.status import ExitStatus, fail


def check_format(fmt: str, allowed: Sequence[str] | None = None) -> None:
    """Exit with a usage error unless `fmt` is one of `allowed` (default: `formats.FORMATS`)."""
    if allowed is None:
        from rulekit.cli.formats import FORMATS

        allowed = FORMATS
    if fmt not in allowed:
        fail(f"unknown format {fmt!r}; use one of {', '.join(allowed)}")


def check_paths_exist(paths: Sequence[Path] | None) -> None:
    for p in paths or ():
        if not p.exists():
            fail(f"{p}: no such file or folder")


BUNDLED_HELP = ("Load the bundled rules under the named ones (the default); --no-bundled: only the named ones. "
                "Default from rulekit.toml / [tool.rulekit] `bundled`.")


def bundled_option() -> Any:
    """`--bundled/--no-bundled`: None when not given (the project file decides)."""
    return typer.Option(None, "--bundled/--no-bundled", help=BUNDLED_HELP, show_default=False)


def choose_or_exit(paths: Sequence[Path | str] | None, bundled: bool | None) -> Any:
    """The corpus to load (`rulekit.rules.project.choose_corpus`: the bundled rules, the
    named paths or the project file's): a bad project file prints its RK008 problems, and
    `--no-bundled` without rules one line; both exit `ExitStatus.USAGE`."""
    from rulekit.cli.render import print_diagnostics
    from rulekit.diagnostics import RulekitError
    from rulekit.rules.project import NoRules, choose_corpus

    try:
        return choose_corpus(list(paths) if paths else None, bundled=bundled)
    except RulekitError as e:
        print_diagnostics(e.diagnostics, err=True)
        raise typer.Exit(ExitStatus.USAGE)
    except NoRules as e:
        fail(str(e))


def load_engine_or_exit(paths: Sequence[Path | str] | None, *, what: str | None = None, hint: str | None = None) -> Any:
    """Load a corpus (default: the bundled rules) with the engine options of the
    environment; the `LoadResult`, whose `engine` is built.  A corpus that does not
    load prints its errors (with caret excerpts) and exits `ExitStatus.USAGE`;
    `what` names the corpus in a heading line ("the rules of BASE"), `hint` is a
    last line ("run `rulekit check` first")."""
    from rulekit.cli.render import print_diagnostics
    from rulekit.diagnostics import Severity
    from rulekit.config import EngineOptions
    from rulekit.rules.loader import load_corpus

    res = load_corpus(list(paths) if paths else None, options=EngineOptions.from_env())
    if res.engine is None:
        if what:
            typer.echo(f"error: {what} do not load:", err=True)
        print_diagnostics([d for d in res.diagnostics if d.severity is Severity.ERROR], res.texts, err=True)
        if hint:
            typer.echo(f"error: {hint}", err=True)
        raise typer.Exit(ExitStatus.USAGE)
    return res


def write_output(text: str, output: Path | None) -> None:
    if output is None:
        if text:
            typer.echo(text)
        return
    try:
        output.write_text(text + "\n", encoding="utf-8")
    except OSError as e:
        fail(f"cannot write {output}: {e.strerror}")


def fleet_policy_or_exit(configs: Path | None) -> Any:
    """The fleet policy of a Blueprint config folder's `[fleet]` section (the defaults when
    `configs` is None); a bad config prints its located errors and exits `ExitStatus.USAGE`."""
    from rulekit.blueprint.fleet_policy import FleetPolicy

    if configs is None:
        return FleetPolicy.defaults()
    from rulekit.blueprint.config import load_config
    from rulekit.cli.render import print_diagnostics
    from rulekit.diagnostics import RulekitError

    try:
        return load_config(configs, need_context=False).fleet
    except RulekitError as e:
        print_diagnostics(e.diagnostics, {}, err=True)
        raise typer.Exit(ExitStatus.USAGE)
