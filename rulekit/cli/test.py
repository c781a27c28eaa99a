"""`rulekit test [PATHS]`: run every inline test line, every `*.test.toml` case and
every example job with an `expected.json`; never stops at the first failure.
A corpus with errors still runs every test its errors do not affect (the other
rules' inline tests); the rest is reported as not run, with why, and the exit
status is 2.

Each failure names the test case's file:line and shows expected (-) vs actual (+).
`--format json`, `--junit-xml FILE`, `-k PATTERN`, `--update` (accept the current
results as the new expectations), `--coverage` (rules with no test, rules no test
fires, symptoms no test produces).  Exit 0 when every case passed, 1 when one
failed or could not run, 2 on a usage error or a corpus that does not load.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from rulekit.analysis.coverage import coverage as coverage_diags
from rulekit.analysis.settings import load_settings
from rulekit.analysis.testrun import describe, run_unaffected
from rulekit.cli._common import bundled_option, check_format, check_paths_exist, choose_or_exit, write_output
from rulekit.cli.app import app
from rulekit.cli.formats import display_path, junit, relativize
from rulekit.cli.render import format_summary, format_text, print_diagnostics
from rulekit.cli.status import ExitStatus
from rulekit.diagnostics import Severity
from rulekit.rules.project import example_paths


@app.command("test")
def test_cmd(
    paths: Optional[list[Path]] = typer.Argument(None, help="Rule folders or files (default: the project file's "
                                                            "`rules`, else the bundled rules)."),
    examples: Optional[list[Path]] = typer.Option(None, "--examples", "-e",
                                                  help="Example job folders (default: the project file's `examples`, "
                                                       "else examples/ beside the rules folder's parent)."),
    fmt: str = typer.Option("text", "--format", "-f", help="text or json"),
    junit_xml: Optional[Path] = typer.Option(None, "--junit-xml", help="Also write JUnit XML to FILE."),
    pattern: Optional[str] = typer.Option(None, "-k", help="Only cases whose kind, name, rule or file contains PATTERN."),
    update: bool = typer.Option(False, "--update", help="Accept the current results as the new expectations."),
    with_coverage: bool = typer.Option(False, "--coverage", help="Also report what the tests do not cover."),
    config: Optional[Path] = typer.Option(None, "--config", help="Settings TOML overriding analysis/defaults.toml."),
    watch: bool = typer.Option(False, "--watch", "-w", help="Run again whenever a rule file or example changes."),
    bundled: Optional[bool] = bundled_option(),
) -> None:
    """Run the corpus's tests: inline lines, job-level cases and example jobs."""
    check_format(fmt, ("text", "json"))
    check_paths_exist(paths)
    check_paths_exist(examples)
    choice = choose_or_exit(paths, bundled)
    ex_paths = example_paths(choice, examples)
    if watch:
        from rulekit.cli.watch import watch_loop

        watch_loop([*choice.report_paths, *ex_paths],
                   lambda: test_cmd(paths, examples, fmt, junit_xml, pattern, update, with_coverage, config, False,
                                    bundled), what="rules and examples")
    settings, bad = load_settings(config, choice.project)
    if bad:
        print_diagnostics(bad, err=True)
        raise typer.Exit(ExitStatus.USAGE)
    run = run_unaffected(choice, ex_paths, pattern)
    res = run.load
    if res.engine is None:  # the load's errors first (stderr), then every test they do not affect
        print_diagnostics([d for d in res.diagnostics if d.severity is Severity.ERROR], res.texts, err=True)
        typer.echo(f"error: the corpus does not load; running the tests its errors do not affect "
                   f"(left out: {', '.join(display_path(b) for b in run.broken) or 'everything'})", err=True)
    cov = coverage_diags(res.engine, run.results, settings["coverage"]) if with_coverage and res.engine else []
    counts = run.counts()
    if junit_xml is not None:
        details = {i: "\n".join(describe(r)) for i, r in enumerate(run.results) if not r.passed}
        shown = [_rel(r) for r in run.results]
        write_output(junit(shown, details=details), junit_xml)
    if fmt == "json":
        doc = {"tool": "rulekit test", "summary": counts,
               "results": [dict(_rel(r).to_dict(), details=describe(r)) for r in run.results],
               "coverage": [d.to_dict() for d in relativize(cov)], "selected_by": pattern}
        typer.echo(json.dumps(doc, indent=2, default=str))
    else:
        out: list[str] = []
        for r in run.results:
            if r.passed:
                continue
            s = r.span
            where = f"{display_path(s.file)}:{s.line}:{s.col}" if s else "?"
            what = f"{r.kind} test `{r.name}`" + (f" (rule {r.rule})" if r.rule else "")
            out.append(f"{_HEAD[r.status]} {where}  {what}")
            out += ["  " + x for x in describe(r)]
            out.append("")
        if cov:
            out.append("Coverage" + (f" (of the cases selected by -k {pattern!r} only)" if pattern else "") + ":")
            out.append(format_text(relativize(cov)))
            out.append(format_summary(cov))
            out.append("")
        sel = f" (selected by -k {pattern!r})" if pattern else ""
        out.append(f"{len(run.results)} test cases{sel}: {counts['passed']} passed, {counts['failed']} failed, "
                   f"{counts['error']} errors" + (f", {counts['skipped']} not run" if counts["skipped"] else ""))
        typer.echo("\n".join(out))
    if update and run.failed:
        from rulekit.analysis.update import update_expectations

        rep = update_expectations(run.failed)
        for f, n in sorted(rep.updated.items()):
            typer.echo(f"updated {n} case(s) in {display_path(f)}", err=True)
        for s in rep.skipped:
            typer.echo(f"not updated: {s}", err=True)
    failed = counts["failed"] + counts["error"]
    if res.engine is None:
        raise typer.Exit(ExitStatus.USAGE)  # the corpus does not load: bad input, whatever the tests said
    raise typer.Exit(ExitStatus.FINDINGS if (failed and not update) or counts["error"] else ExitStatus.OK)


_HEAD = {"failed": "FAILED", "error": "ERROR", "skipped": "NOT RUN"}


def _rel(r):
    from dataclasses import replace

    if r.span is None:
        return r
    return replace(r, span=replace(r.span, file=display_path(r.span.file)))
