"""`rulekit rules stats` and `rulekit rules backtest`: rules judged by production.

`stats` reads a result store (`rulekit.blueprint.rulestats`): per rule, the attempts
it fired in, how often it made the root cause, and the operators' judgements of those
verdicts.  `backtest` re-attributes the stored attempts with a changed corpus through
the Blueprint config that found them (`rulekit.blueprint.backtest`) and prints the
verdicts that would move and the nodes that would enter or leave `bad_nodes` (without
the config: from the lines the store kept of each attempt).  Exit 0;
backtest exits 1 when a verdict moves; 2 on bad input.  Renders only.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

import typer

from rulekit.cli.app import app
from rulekit.cli.status import ExitStatus, fail

rules_app = typer.Typer(no_args_is_help=True, add_completion=False,
                        help="Rules judged by production: stats and backtests over a result store.")
app.add_typer(rules_app, name="rules")


def _open(db: Path):
    from rulekit.blueprint.store import StoreError, open_ro

    try:
        return open_ro(db)
    except StoreError as e:
        fail(str(e))


def _window(since: Optional[str], until: Optional[str]) -> tuple[float | None, float | None]:
    from rulekit.blueprint.model import parse_time

    try:
        return (parse_time(since).timestamp() if since else None, parse_time(until).timestamp() if until else None)
    except ValueError as e:
        fail(f"--since/--until: {e}")
    raise AssertionError


def load_blueprint_config(configs: Path):
    """The Blueprint config folder, or exit 2 with its located errors."""
    from rulekit.blueprint.config import load_config
    from rulekit.cli.render import print_diagnostics
    from rulekit.diagnostics import RulekitError

    try:
        return load_config(configs)
    except RulekitError as e:
        print_diagnostics(e.diagnostics, {}, err=True)
        raise typer.Exit(ExitStatus.USAGE)


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.0f}%"


def render_stats(stats: dict[str, Any]) -> str:
    rows = stats["rules"]
    lines = [f"{stats['attempts']} attempt(s) in the window; {len(rows)} rule(s) fired"]
    if not rows:
        return lines[0]
    w = max(len("RULE"), *(len(r["rule"]) for r in rows))
    lines.append(f"{'RULE':<{w}}  FIRED  ROOT  CONFIRMED  WRONG  PRECISION")
    for r in rows:
        lines.append(f"{r['rule']:<{w}}  {r['fired']:>5}  {r['root']:>4}  {r['confirmed']:>9}  {r['wrong']:>5}  "
                     f"{_pct(r['precision']):>9}")
    return "\n".join(lines)


@rules_app.command("stats")
def stats_cmd(
    db: Path = typer.Option(..., "--db", help="SQLite store written by `rulekit blueprint run --output sqlite:PATH`."),
    since: Optional[str] = typer.Option(None, "--since", help="Attempts ending at/after T (RFC 3339, epoch, or 7d)."),
    until: Optional[str] = typer.Option(None, "--until", help="Attempts ending at/before T."),
    rule: Optional[str] = typer.Option(None, "--rule", help="Only this rule."),
    fmt: str = typer.Option("text", "--format", "-f", help="text or json."),
) -> None:
    """Per rule: attempts it fired in, times it was the root cause, operator feedback."""
    from rulekit.blueprint.rulestats import rule_stats

    if fmt not in ("text", "json"):
        fail(f"unknown format {fmt!r}; use one of text, json")
    lo, hi = _window(since, until)
    con = _open(db)
    try:
        stats = rule_stats(con, lo, hi, rule)
    finally:
        con.close()
    typer.echo(json.dumps(stats, indent=2) if fmt == "json" else render_stats(stats))


def render_backtest(rep: dict[str, Any]) -> str:
    lines = [f"{rep['attempts']} stored attempt(s), {rep['rerun']} re-attributed: {len(rep['changed'])} verdict(s) "
             f"would change, {rep['unchanged']} unchanged, {len(rep['not_rerun'])} not re-run"]
    for c in rep["changed"]:
        b, a = c["before"], c["after"]
        lines.append(f"  {c['key']}: {b['outcome']}/{b['root_symptom'] or '-'} -> {a['outcome']}/"
                     f"{a['root_symptom'] or '-'}" + (f"  +bad {','.join(c['nodes_entering'])}" if c['nodes_entering']
                                                      else "") +
                     (f"  -bad {','.join(c['nodes_leaving'])}" if c["nodes_leaving"] else ""))
    if rep["nodes_entering"]:
        lines.append("this change would have drained these nodes:")
        lines += [f"  {n}: {len(k)} attempt(s) ({', '.join(k)})" for n, k in rep["nodes_entering"].items()]
    if rep["nodes_leaving"]:
        lines.append("these nodes would no longer have been drained:")
        lines += [f"  {n}: {len(k)} attempt(s) ({', '.join(k)})" for n, k in rep["nodes_leaving"].items()]
    for m in rep["not_rerun"]:
        lines.append(f"  not re-run: {m['key'] or '-'}: {m['why']}")
    return "\n".join(lines)


@rules_app.command("backtest")
def backtest_cmd(
    db: Path = typer.Option(..., "--db", help="The result store whose verdicts are the baseline."),
    rules: list[Path] = typer.Option(..., "--rules", help="The changed corpus (rule files or folders); repeatable."),
    configs: Optional[Path] = typer.Option(None, "--configs", help="The Blueprint config that found the stored "
                                           "attempts (collect their logs again; default: the lines the store kept)."),
    since: Optional[str] = typer.Option(None, "--since", help="Attempts ending at/after T."),
    until: Optional[str] = typer.Option(None, "--until", help="Attempts ending at/before T."),
    fmt: str = typer.Option("text", "--format", "-f", help="text or json."),
) -> None:
    """Re-attribute the stored attempts with a changed corpus: the verdicts and bad nodes that would change."""
    from rulekit.blueprint.backtest import backtest, stored_verdicts
    from rulekit.blueprint.model import Window
    from rulekit.cli._common import check_paths_exist, load_engine_or_exit

    if fmt not in ("text", "json"):
        fail(f"unknown format {fmt!r}; use one of text, json")
    check_paths_exist(rules)
    lo, hi = _window(since, until)
    cfg = load_blueprint_config(configs) if configs is not None else None
    engine = load_engine_or_exit(rules, what="the changed rules").engine
    from datetime import datetime, timezone

    window = Window(datetime.fromtimestamp(lo, timezone.utc) if lo is not None else None,
                    datetime.fromtimestamp(hi, timezone.utc) if hi is not None else None)
    con = _open(db)
    try:
        rep = backtest(cfg, engine, stored_verdicts(con, lo, hi), window, con=con)
    finally:
        con.close()
    typer.echo(json.dumps(rep, indent=2) if fmt == "json" else render_backtest(rep))
    if rep["changed"]:
        raise typer.Exit(ExitStatus.FINDINGS)
