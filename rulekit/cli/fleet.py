"""`rulekit fleet`: node states from the Blueprint's store, and the Slurm drains they propose.

Reads the store (`--db`), the fleet policy (`--configs`, a Blueprint config
folder's `[fleet]` section; default: the documented defaults) and prints every
node's state (`healthy`, `suspect`, `quarantine` proposed, `cleared`) with its
reasons, the circuit breaker, and the proposed drains as `scontrol` commands
(shadow mode: nothing runs).  `--apply` drains the proposed nodes through Slurm
(`rulekit.blueprint.drains`: at most `max_new_drains` per run, never a node
someone else drained, never a resume).  Exit 0; 1 when an --apply step failed;
2 on bad input (no such store, a bad config or time).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

import typer

from rulekit.cli.app import app
from rulekit.cli.status import ExitStatus, fail


@app.command()
def fleet(
    db: Path = typer.Option(..., "--db", help="SQLite store written by `rulekit blueprint run --output sqlite:PATH`."),
    configs: Optional[Path] = typer.Option(None, "--configs", help="Blueprint config folder (or file) whose "
                                           "[fleet] section sets the policy; default: the documented defaults."),
    fmt: str = typer.Option("text", "--format", "-f", help="text or json"),
    as_of: Optional[str] = typer.Option(None, "--as-of", help="Judge the history as of T (RFC 3339, epoch, or "
                                        "a duration ago like 24h); default: now."),
    apply_drains: bool = typer.Option(False, "--apply", help="Drain the proposed nodes through Slurm (default: "
                                      "shadow mode, only print the commands)."),
    scontrol: str = typer.Option("scontrol", "--scontrol", help="The scontrol binary (with --apply)."),
    sinfo: str = typer.Option("sinfo", "--sinfo", help="The sinfo binary (with --apply)."),
) -> None:
    """Node states (healthy, suspect, quarantine, cleared) with reasons, and proposed Slurm drains."""
    from rulekit.blueprint import drains
    from rulekit.blueprint.fleet_memory import read_fleet_state
    from rulekit.blueprint.model import parse_time
    from rulekit.blueprint.store import StoreError
    from rulekit.cli._common import check_format, fleet_policy_or_exit

    check_format(fmt, ("text", "json"))
    policy = fleet_policy_or_exit(configs)
    try:
        when = parse_time(as_of).timestamp() if as_of else None
    except ValueError as e:
        fail(f"--as-of: {e}")
    try:
        state = read_fleet_state(db, policy, when)
    except StoreError as e:
        fail(str(e))
    doc = state.to_dict()
    doc["policy"] = policy.to_dict()
    doc["proposals"] = drains.proposed(state.proposals, scontrol)
    doc["mode"] = "apply" if apply_drains else "shadow"
    outcomes = drains.apply(state.proposals, scontrol, sinfo, policy.max_new_drains) if apply_drains else []
    doc["applied"] = [o.to_dict() for o in outcomes]
    if fmt == "json":
        typer.echo(json.dumps(doc, indent=2, default=str))
    else:
        typer.echo(render_text(doc))
    if any(o.status == "failed" for o in outcomes):
        raise typer.Exit(ExitStatus.FINDINGS)


def render_text(doc: dict[str, Any]) -> str:
    from rulekit.blueprint.fleet import span, when

    c = doc["counts"]
    out = [f"Fleet as of {when(doc['as_of'])} (history of {span(doc['window_s'])}, {len(doc['nodes'])} node(s)): "
           f"{c['quarantine']} quarantine proposed, {c['suspect']} suspect, {c['cleared']} cleared, "
           f"{c['healthy']} healthy"]
    for n in doc["nodes"]:
        if n["state"] == "healthy" and not n["incidents"]:
            continue
        gap = f", every {span(n['mean_gap_s'])}" if n.get("mean_gap_s") else ""
        out.append(f"{n['state'].upper():10} {n['node']}  {n['blamed']} blamed, {n['ambiguous']} ambiguous in "
                   f"{n['attempts']} attempt(s){gap}; last {when(n['last_incident'])}; "
                   f"{n['clean_since']} clean since" + (f"; action {n['action']}" if n.get("action") else ""))
        for r in n["reasons"]:
            out.append(f"    {r}")
    healthy = [n["node"] for n in doc["nodes"] if n["state"] == "healthy" and not n["incidents"]]
    if healthy:
        out.append(f"HEALTHY    {', '.join(healthy[:20])}" + (f" (+{len(healthy) - 20})" if len(healthy) > 20 else ""))
    b = doc["breaker"]
    if b["tripped"]:
        out.append(b["message"])
    else:
        out.append(f"Circuit breaker: {len(b['new_quarantines'])} node(s) newly meet the quarantine policy within "
                   f"{span(b['window_s'])} (at most {b['cap']}: {b['share']:.0%} of {b['fleet_size']} node(s))")
    if doc["proposals"]:
        if doc["mode"] == "shadow":
            out.append("Proposed drains (shadow mode: nothing is applied; `--apply` drains through Slurm):")
        else:
            out.append("Proposed drains:")
        for p in doc["proposals"]:
            out.append(f"  {p['command']}" if p.get("command") else f"  {p['node']}: refused ({p['refused']})")
    elif not b["tripped"]:
        out.append("No drain proposed.")
    for o in doc["applied"]:
        out.append(f"  {o['status']:12} {o['node']}: {o['detail']}")
    return "\n".join(out)
