"""`rulekit diff BASE [HEAD]`: attribute a folder of job directories with two rule
revisions and report what moved, so a rule change shows its effect on the golden
corpus.

A revision is a rules folder, or a git ref (`main`, `HEAD~1`, a commit) of the
`--rules` folder, exported with `git archive` into a temporary folder.  HEAD
defaults to the `--rules` folder as it is on disk.  Jobs: `--jobs DIR` (a job
directory or a folder of them; default `examples/` beside the rules folder).
Output: text (default), `--format json`, `--format github` (workflow
annotations).  Exit 0 when every `expected.json` holds with HEAD, 1 when one
is broken, 2 on a usage error or a revision that does not load.

With `--db STORE` the jobs are the attempts a result store holds instead: each is
re-attributed with both revisions (`rulekit.blueprint.backtest`, the one
implementation `rulekit rules backtest` uses), from the lines the store kept or,
with `--configs CFG`, collected again through the Blueprint config; the report
lists the verdicts that move and the nodes that would newly enter or leave
`bad_nodes`, per node (text or json); exit 1 when a verdict moves.
"""
from __future__ import annotations

import io
import json
import subprocess
import tarfile
import tempfile
from pathlib import Path
from typing import Optional

import typer

from rulekit.analysis.diff import LABELS, DiffReport, JobDiff, diff_jobs, find_job_dirs
from rulekit.analysis.testrun import default_example_paths
from rulekit.cli._common import bundled_option, check_format, choose_or_exit, load_engine_or_exit, write_output
from rulekit.cli.app import app
from rulekit.cli.formats import display_path
from rulekit.cli.status import ExitStatus
from rulekit.rules.loader import bundled_rules_path


class RevisionError(Exception):
    pass


def materialize(spec: str, rules: Path, tmp: Path) -> tuple[Path, str]:
    """(folder holding the rules of revision `spec`, a label)."""
    p = Path(spec)
    if p.is_dir():
        return p, display_path(str(p))
    root = _git(rules, "rev-parse", "--show-toplevel").decode().strip()
    rel = Path(rules).resolve().relative_to(Path(root).resolve()).as_posix()
    _git(Path(root), "rev-parse", "--verify", "--quiet", f"{spec}^{{commit}}")
    data = _git(Path(root), "archive", "--format=tar", spec, "--", rel)
    out = tmp / spec.replace("/", "_").replace("~", "_").replace("^", "_")
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(out, filter="data")
    folder = out / rel
    if not folder.is_dir():
        raise RevisionError(f"`{rel}` does not exist at {spec}")
    return folder, f"{spec}:{rel}"


def _git(cwd: Path, *args: str) -> bytes:
    try:
        p = subprocess.run(["git", "-C", str(cwd if cwd.is_dir() else cwd.parent), *args], capture_output=True,
                           timeout=120)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise RevisionError(f"git failed: {e}") from None
    if p.returncode != 0:
        msg = p.stderr.decode("utf-8", "replace").strip() or f"git {args[0]} failed"
        if args[0] == "rev-parse" and "--verify" in args:
            msg = f"`{args[-1][:-9]}` is neither a folder nor a git revision"
        raise RevisionError(msg)
    return p.stdout


def _load(folder: Path, label: str, under: list[str]):
    return load_engine_or_exit([*under, str(folder)], what=f"the rules of {label}").engine


@app.command("diff")
def diff(
    base: str = typer.Argument(..., metavar="BASE", help="Rules folder or git revision to compare from."),
    head: Optional[str] = typer.Argument(None, metavar="[HEAD]",
                                         help="Rules folder or git revision to compare to (default: --rules on disk)."),
    rules: Optional[Path] = typer.Option(None, "--rules", "-r",
                                         help="The rules folder a git revision refers to (default: the project file's "
                                              "first `rules` folder, else the bundled rules)."),
    jobs: Optional[list[Path]] = typer.Option(None, "--jobs", "-J",
                                              help="A job directory or a folder of them (default: examples/ beside the rules)."),
    fmt: str = typer.Option("text", "--format", "-f", help="text, json or github"),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write the report to FILE instead of stdout."),
    bundled: Optional[bool] = bundled_option(),
    db: Optional[Path] = typer.Option(None, "--db", help="A result store: re-attribute its attempts instead of "
                                      "job directories."),
    configs: Optional[Path] = typer.Option(None, "--configs", help="With --db: the Blueprint config that found the "
                                           "attempts (collect their logs again; default: the lines the store kept)."),
    since: Optional[str] = typer.Option(None, "--since", help="With --db: attempts ending at/after T."),
    until: Optional[str] = typer.Option(None, "--until", help="With --db: attempts ending at/before T."),
) -> None:
    """Attribute job directories (or a result store's attempts) with two rule revisions and report what moved."""
    check_format(fmt, ("text", "json") if db is not None else ("text", "json", "github"))
    if db is None and (configs is not None or since or until):
        typer.echo("error: --configs, --since and --until go with --db", err=True)
        raise typer.Exit(ExitStatus.USAGE)
    if db is not None and jobs:
        typer.echo("error: give --jobs or --db (one of them)", err=True)
        raise typer.Exit(ExitStatus.USAGE)
    if rules is None:  # the project file's rule folder (its first), else the bundled rules
        named = choose_or_exit(None, True).own  # (which folder; whether the bundled rules go under: below)
        rules = Path(named[0]) if named else None
    rules_dir = rules or bundled_rules_path()
    if not rules_dir.is_dir():
        typer.echo(f"error: {rules_dir}: no such rules folder", err=True)
        raise typer.Exit(ExitStatus.USAGE)
    # both revisions of a folder of one's own sit on the same bundled rules (the bundled folder's own
    # revisions on nothing): what changed is the folder's
    choice = choose_or_exit([rules_dir], bundled)
    under = [p for p in choice.load_paths if choice.own and Path(p) not in choice.own]
    if db is not None:
        _diff_store(base, head, rules_dir, under, db, configs, since, until, fmt, output)
    job_roots = list(jobs) if jobs else default_example_paths([rules_dir])
    for j in job_roots:
        if not j.exists():
            typer.echo(f"error: {j}: no such job folder", err=True)
            raise typer.Exit(ExitStatus.USAGE)
    job_dirs = find_job_dirs(job_roots)
    if not job_dirs:
        typer.echo("error: no job directories to compare (give --jobs DIR)", err=True)
        raise typer.Exit(ExitStatus.USAGE)
    with tempfile.TemporaryDirectory(prefix="rulekit-diff-") as tmp:
        try:
            bdir, blabel = materialize(base, rules_dir, Path(tmp))
            hdir, hlabel = materialize(head, rules_dir, Path(tmp)) if head else (rules_dir, display_path(str(rules_dir)))
        except (RevisionError, ValueError) as e:
            typer.echo(f"error: {e}", err=True)
            raise typer.Exit(ExitStatus.USAGE)
        report = diff_jobs(_load(bdir, blabel, under), _load(hdir, hlabel, under), job_dirs, blabel, hlabel)
    text = {"text": render_text, "json": render_json, "github": render_github}[fmt](report)
    write_output(text, output)
    raise typer.Exit(ExitStatus.FINDINGS if report.broken else ExitStatus.OK)


def _diff_store(base: str, head: Optional[str], rules_dir: Path, under: list[str], db: Path,
                configs: Optional[Path], since: Optional[str], until: Optional[str], fmt: str,
                output: Optional[Path]) -> None:
    """`diff BASE HEAD --db STORE`: both revisions over the store's attempts; exits."""
    from datetime import datetime, timezone

    from rulekit.blueprint.backtest import backtest, stored_verdicts
    from rulekit.blueprint.model import Window
    from rulekit.cli.rules import _open, _window, load_blueprint_config, render_backtest

    lo, hi = _window(since, until)
    cfg = load_blueprint_config(configs) if configs is not None else None
    con = _open(db)
    try:
        stored = stored_verdicts(con, lo, hi)
        with tempfile.TemporaryDirectory(prefix="rulekit-diff-") as tmp:
            try:
                bdir, blabel = materialize(base, rules_dir, Path(tmp))
                hdir, hlabel = (materialize(head, rules_dir, Path(tmp)) if head
                                else (rules_dir, display_path(str(rules_dir))))
            except (RevisionError, ValueError) as e:
                typer.echo(f"error: {e}", err=True)
                raise typer.Exit(ExitStatus.USAGE)
            base_engine, head_engine = _load(bdir, blabel, under), _load(hdir, hlabel, under)
        window = Window(datetime.fromtimestamp(lo, timezone.utc) if lo is not None else None,
                        datetime.fromtimestamp(hi, timezone.utc) if hi is not None else None)
        rep = backtest(cfg, head_engine, stored, window, base=base_engine, con=con)
    finally:
        con.close()
    rep["base"], rep["head"] = blabel, hlabel
    text = (json.dumps(rep, indent=2) if fmt == "json"
            else f"base {blabel}  →  head {hlabel}  (store {display_path(str(db))})\n" + render_backtest(rep))
    write_output(text, output)
    raise typer.Exit(ExitStatus.FINDINGS if rep["changed"] else ExitStatus.OK)


def _fmt(v) -> str:
    if v is None:
        return "none"
    if isinstance(v, list):
        return "[" + ", ".join(v) + "]" if v else "[]"
    return str(v)


def _change_lines(j: JobDiff) -> list[str]:
    out = []
    for f, (old, new) in j.changes.items():
        label = LABELS.get(f, "error")
        out.append(f"{label:<11} {_fmt(old)} → {_fmt(new)}")
    return out


def render_text(r: DiffReport) -> str:
    c = r.counts()
    out = [f"base {r.base_label}  →  head {r.head_label}  ({c['jobs']} job{'s' * (c['jobs'] != 1)})",
           r.headline()]
    for j in r.jobs:
        if not j.changed:
            continue
        out.append(f"  {j.job_id}  ({display_path(j.job_dir)})")
        out += [f"    {x}" for x in _change_lines(j)]
    if c["expected"]:
        out.append(f"expected.json: {c['expected'] - c['broken']} of {c['expected']} hold with head"
                   + (f", {c['newly_broken']} newly broken" if c["newly_broken"] else "")
                   + (f", {c['fixed']} fixed" if c["fixed"] else ""))
        for j in r.broken:
            tag = "newly broken" if j.newly_broken else "already broken at base"
            out.append(f"  BROKEN {display_path(str(Path(j.job_dir) / 'expected.json'))} ({tag})")
            out += [f"    {m}" for m in j.head_mismatches]
    return "\n".join(out)


def render_json(r: DiffReport) -> str:
    return json.dumps(r.to_dict(), indent=2, default=str)


def _gh(s: str) -> str:
    return s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _gh_prop(s: str) -> str:
    return _gh(s).replace(":", "%3A").replace(",", "%2C")


def render_github(r: DiffReport) -> str:
    out = [f"::notice title=rulekit diff::{_gh(r.headline() + f' (base {r.base_label}, head {r.head_label})')}"]
    for j in r.jobs:
        target = Path(j.job_dir) / ("expected.json" if j.expected else "job.toml")
        where = f"file={_gh_prop(display_path(str(target)))},line=1"
        if j.broken:
            tag = "newly broken" if j.newly_broken else "still broken"
            out.append(f"::error {where},title={_gh_prop(f'expected.json {tag}: {j.job_id}')}::"
                       + _gh("\n".join(j.head_mismatches + _change_lines(j))))
        elif j.changed:
            out.append(f"::notice {where},title={_gh_prop(f'attribution changed: {j.job_id}')}::"
                       + _gh("\n".join(_change_lines(j))))
    return "\n".join(out)
