"""`rulekit mine`: the error lines no rule explains, as ranked templates, and drafts of rules for them.

Reads job directories (or a result store's fallback evidence with `--db`), clusters
the unexplained error lines (`rulekit.analysis.mine`) and prints the templates ranked
by jobs and nodes as text, JSON or Markdown.  `--draft FILE` writes a draft extractor
per chosen template (`rulekit.analysis.draft`; TOML, or the rule DSL with `--dsl`), only
those that load, pass their tests
and overlap no rule; the others are listed with why.  Exit 0; 1 when a draft was
rejected or a job directory could not be read; 2 on bad input.  Renders only.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from rulekit.cli.app import app
from rulekit.cli.status import ExitStatus, fail


@app.command()
def mine(
    job_dirs: Optional[list[Path]] = typer.Argument(None, help="Job directories (job.toml + logs)."),
    db: Optional[Path] = typer.Option(None, "--db", help="A result store instead: its fallback evidence rows."),
    rules: Optional[list[Path]] = typer.Option(None, "--rules", "-r", help="Rule files or folders (default: bundled)."),
    fmt: str = typer.Option("text", "--format", "-f", help="text, json or markdown."),
    limit: int = typer.Option(20, "--limit", "-n", help="Templates shown (and drafted), best ranked first."),
    template: Optional[list[int]] = typer.Option(None, "--template", "-t",
                                                 help="Draft only these templates (their rank in the list); repeatable."),
    draft: Optional[Path] = typer.Option(None, "--draft", help="Write checked draft rules (TOML) for the templates here."),
    dsl: bool = typer.Option(False, "--dsl", help="With --draft: write the drafts in the rule DSL (a .rule file)."),
    since: Optional[str] = typer.Option(None, "--since", help="With --db: attempts ending at/after T."),
    until: Optional[str] = typer.Option(None, "--until", help="With --db: attempts ending at/before T."),
) -> None:
    """Cluster the error lines no rule explains into ranked templates; draft rules for them."""
    from rulekit.analysis.mine import Miner, fallback_rules, mine_jobs, render_markdown, render_text, report
    from rulekit.cli._common import check_paths_exist, load_engine_or_exit

    if fmt not in ("text", "json", "markdown"):
        fail(f"unknown format {fmt!r}; use one of text, json, markdown")
    if bool(job_dirs) == bool(db):
        fail("give job directories or --db (one of them)")
    if limit < 1:
        fail("--limit: must be at least 1")
    if dsl and draft is None:
        fail("--dsl goes with --draft FILE")
    if draft is not None and (draft.suffix == ".rule") != dsl:  # rule files are read by their suffix
        fail("--draft: DSL drafts (--dsl) go in a .rule file" if dsl else
             "--draft: a .rule file holds DSL drafts: add --dsl (or name a .toml file)")
    check_paths_exist(job_dirs)
    check_paths_exist(rules)
    engine = load_engine_or_exit(rules).engine
    failed: list[dict] = []
    if db is not None:
        from rulekit.blueprint.rulestats import unexplained_in_store
        from rulekit.blueprint.store import StoreError, open_ro
        from rulekit.cli.rules import _window

        lo, hi = _window(since, until)
        try:
            con = open_ro(db)
        except StoreError as e:
            fail(str(e))
        miner = Miner()
        try:
            for u in unexplained_in_store(con, fallback_rules(engine), lo, hi):
                miner.add(u)
        finally:
            con.close()
    else:
        miner, failed = mine_jobs(engine, job_dirs or [])
    rep = report(miner, limit)
    rep["unreadable"] = failed
    status = ExitStatus.FINDINGS if failed else ExitStatus.OK
    drafted = None
    if draft is not None:
        drafted = _draft(engine, miner, rules, limit, template, draft, dsl)
        rep["drafts"] = drafted
        if drafted["rejected"]:
            status = ExitStatus.FINDINGS
    if fmt == "json":
        typer.echo(json.dumps(rep, indent=2))
    else:
        typer.echo(render_markdown(rep) if fmt == "markdown" else render_text(rep))
        for f in failed:
            typer.echo(f"error: {f['job_dir']}: {f['error']}", err=True)
        if drafted is not None:
            for d in drafted["accepted"]:
                typer.echo(f"drafted {d['rule']} ({d['symptom']}): {d['template']}", err=True)
            for d in drafted["rejected"]:
                typer.echo(f"not drafted {d['rule']}: " + "; ".join(d["problems"]), err=True)
            typer.echo(f"{len(drafted['accepted'])} draft(s) written to {draft}" if drafted["accepted"]
                       else f"no draft passed; {draft} not written", err=True)
    raise typer.Exit(status)


def _draft(engine, miner, rules, limit, chosen, out: Path, dsl: bool = False) -> dict:
    from rulekit.analysis.draft import make_drafts, validate

    ranked = miner.templates()[:limit]
    if chosen:
        bad = [i for i in chosen if not 1 <= i <= len(ranked)]
        if bad:
            fail(f"--template: {bad[0]} is not a rank in the list (1..{len(ranked)})")
        ranked = [ranked[i - 1] for i in chosen]
    taken_rules = {r.name for r in (*engine.extractors, *engine.accumulators)}
    taken_symptoms = set(engine.registry.names()) | set(engine.registry.aliases())
    drafts = make_drafts(ranked, taken_rules, taken_symptoms, dsl=dsl)
    try:
        accepted, rejected = validate(drafts, rules)
    except ValueError as e:
        fail(str(e))
    if accepted:
        head = ("# Draft rules from `rulekit mine`: confirm every line marked CONFIRM, then move the ones you\n"
                "# keep into your corpus (`rulekit check`, `rulekit test` and `rulekit lint` passed on each).\n\n")
        try:
            out.write_text(head + "\n".join(d.text for d in accepted), encoding="utf-8")
        except OSError as e:
            fail(f"cannot write {out}: {e.strerror}")
    return {"file": str(out) if accepted else None, "accepted": [d.to_dict() for d in accepted],
            "rejected": [d.to_dict() for d in rejected]}
