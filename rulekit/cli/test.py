"""`rulekit test [PATHS]`: run every inline test line, every `*.test.toml` case and
every example job with an `expected.json`; never stops at the first failure.

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
from rulekit.analysis.testrun import default_example_paths, describe, run_tests
from rulekit.cli._common import check_format, check_paths_exist, load_engine_or_exit, write_output
from rulekit.cli.app import app
from rulekit.cli.formats import display_path, junit, relativize
from rulekit.cli.render import format_summary, format_text, print_diagnostics
from rulekit.cli.status import ExitStatus
from rulekit.rules.loader import bundled_rules_path


@app.command("test")
def test_cmd(
    paths: Optional[list[Path]] = typer.Argument(None, help="Rule folders or files (default: the bundled rules)."),
    examples: Optional[list[Path]] = typer.Option(None, "--examples", "-e",
                                                  help="Example job folders (default: examples/ beside the rules folder's parent)."),
    fmt: str = typer.Option("text", "--format", "-f", help="text or json"),
    junit_xml: Optional[Path] = typer.Option(None, "--junit-xml", help="Also write JUnit XML to FILE."),
    pattern: Optional[str] = typer.Option(None, "-k", help="Only cases whose kind, name, rule or file contains PATTERN."),
    update: bool = typer.Option(False, "--update", help="Accept the current results as the new expectations."),
    with_coverage: bool = typer.Option(False, "--coverage", help="Also report what the tests do not cover."),
    config: Optional[Path] = typer.Option(None, "--config", help="Settings TOML overriding analysis/defaults.toml."),
    watch: bool = typer.Option(False, "--watch", "-w", help="Run again whenever a rule file or example changes."),
) -> None:
    """Run the corpus's tests: inline lines, job-level cases and example jobs."""
    check_format(fmt, ("text", "json"))
    check_paths_exist(paths)
    check_paths_exist(examples)
    if watch:
        from rulekit.cli.watch import watch_loop

        roots = list(paths or [bundled_rules_path()])
        roots += list(examples) if examples is not None else default_example_paths(roots)
        watch_loop(roots, lambda: test_cmd(paths, examples, fmt, junit_xml, pattern, update, with_coverage, config,
                                           False), what="rules and examples")
    settings, bad = load_settings(config)
    if bad:
        print_diagnostics(bad, err=True)
        raise typer.Exit(ExitStatus.USAGE)
    res = load_engine_or_exit(paths)
    ex_paths = list(examples) if examples is not None else default_example_paths(paths or [bundled_rules_path()])
    run = run_tests(res.engine, ex_paths, pattern)
    cov = coverage_diags(res.engine, run.results, settings["coverage"]) if with_coverage else []
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
            out.append(f"{'ERROR' if r.error else 'FAILED'} {where}  {what}")
            out += ["  " + x for x in describe(r)]
            out.append("")
        if cov:
            out.append("Coverage" + (f" (of the cases selected by -k {pattern!r} only)" if pattern else "") + ":")
            out.append(format_text(relativize(cov)))
            out.append(format_summary(cov))
            out.append("")
        sel = f" (selected by -k {pattern!r})" if pattern else ""
        out.append(f"{len(run.results)} test cases{sel}: {counts['passed']} passed, {counts['failed']} failed, "
                   f"{counts['error']} errors")
        typer.echo("\n".join(out))
    if update and run.failed:
        from rulekit.analysis.update import update_expectations

        rep = update_expectations(run.failed)
        for f, n in sorted(rep.updated.items()):
            typer.echo(f"updated {n} case(s) in {display_path(f)}", err=True)
        for s in rep.skipped:
            typer.echo(f"not updated: {s}", err=True)
    failed = counts["failed"] + counts["error"]
    raise typer.Exit(ExitStatus.FINDINGS if (failed and not update) or counts["error"] else ExitStatus.OK)


def _rel(r):
    from dataclasses import replace

    if r.span is None:
        return r
    return replace(r, span=replace(r.span, file=display_path(r.span.file)))
