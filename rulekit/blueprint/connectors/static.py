"""Static execution context: a list of attempts written by hand (TOML or JSON).

    [[context]]
    type = "static"
    jobs = "jobs.toml"        # a file of [[job]] tables (or a JSON list of objects)
    # or inline: [[context.job]] tables
Job keys: id (required), attempt, state, nodes, start, end, exit_code,
tasks_per_node, ranks, failed_node, name, user, partition,
allocation_failure, execution_cancellation.  Validated with located errors
at load time; runs no scheduler.
"""
from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any, Iterable

from rulekit.blueprint.connectors.base import ContextConnector
from rulekit.blueprint.model import Attempt, Window, as_datetime
from rulekit.diagnostics import Diagnostic, Span
from rulekit.inputs.jobinfo import SLURM_STATES
from rulekit.rules.toml_frontend import Locator, toml_error_span

JOB_KEYS = {"id", "attempt", "state", "nodes", "start", "end", "exit_code", "tasks_per_node", "ranks", "failed_node",
            "name", "user", "partition", "allocation_failure", "execution_cancellation"}


def attempt_from_table(sec: Any) -> Attempt | None:
    """One job table (a config `Section`) -> Attempt; errors go to the section."""
    jid = sec.get("id", (str, int), None, required=True)
    state = sec.get("state", str)
    if state is not None and state.upper().split()[0].rstrip("+") not in SLURM_STATES:
        sec.error(f"unknown job state {state!r}; expected one of {', '.join(sorted(SLURM_STATES))}", "state")
    nodes = sec.str_list("nodes")
    times = {}
    for k in ("start", "end"):
        sec.used.add(k)
        try:
            times[k] = as_datetime(sec.table.get(k))
        except ValueError as e:
            sec.error(f"`{k}`: {e}", k)
            times[k] = None
    ranks = sec.get("ranks", dict, {})
    try:
        ranks = {int(k): str(v) for k, v in ranks.items()}
    except ValueError:
        sec.error("`ranks` keys must be rank numbers", "ranks")
        ranks = {}
    af = sec.get("allocation_failure", dict)
    ec = sec.get("execution_cancellation", dict)
    for d in (af, ec):
        for k, v in list((d or {}).items()):
            if hasattr(v, "isoformat"):
                d[k] = v.isoformat()
    exit_code = sec.get("exit_code", (str, int))
    sec.check_unknown(JOB_KEYS)
    if jid is None:
        return None
    return Attempt(job_id=str(jid), attempt=sec.get("attempt", int, 0), nodes=nodes, start=times["start"],
                   end=times["end"], state=state.upper().split()[0].rstrip("+") if state else None,
                   exit_code=None if exit_code is None else str(exit_code), name=sec.get("name", str),
                   user=sec.get("user", str), partition=sec.get("partition", str),
                   tasks_per_node=sec.get("tasks_per_node", int), ranks=ranks, failed_node=sec.get("failed_node", str),
                   allocation_failure=af, execution_cancellation=ec, source="static")


class StaticContext(ContextConnector):
    TYPE = "static"
    KEYS = {"type", "name", "jobs", "job"}

    def __init__(self, jobs: list[Attempt]):
        self.jobs = jobs

    @classmethod
    def from_config(cls, sec: Any) -> "StaticContext":
        from rulekit.blueprint.config import Section

        jobs: list[Attempt] = []
        for s in sec.subs("job"):
            a = attempt_from_table(s)
            if a:
                jobs.append(a)
        path = sec.file("jobs")
        if path is not None and path.exists():
            text = path.read_bytes().decode("utf-8", "replace")
            if path.suffix == ".json":
                try:
                    items = json.loads(text)
                except json.JSONDecodeError as e:
                    sec.diags.append(Diagnostic("RK601", f"JSON syntax error: {e.msg}",
                                                Span(str(path), e.lineno, e.colno)))
                    items = []
                if not isinstance(items, list):
                    sec.diags.append(Diagnostic("RK602", "a JSON jobs file must be a list of job objects",
                                                Span(str(path), 1, 1)))
                    items = []
                loc = Locator("", str(path))
                for i, t in enumerate(items):
                    if not isinstance(t, dict):
                        sec.diags.append(Diagnostic("RK602", f"jobs[{i}] must be an object", Span(str(path), 1, 1)))
                        continue
                    a = attempt_from_table(Section(t, None, loc, path, sec.diags, f"jobs[{i}]"))
                    if a:
                        jobs.append(a)
            else:
                try:
                    data = tomllib.loads(text)
                except tomllib.TOMLDecodeError as e:
                    sec.diags.append(Diagnostic("RK601", f"TOML syntax error: {str(e).split(' (at ')[0]}",
                                                toml_error_span(e, text, str(path))))
                    data = {}
                loc = Locator(text, str(path))
                top = Section(data, loc.top(), loc, path, sec.diags, "a jobs file")
                top.used = set()
                top.check_unknown({"job"})
                top.what = "[[job]]"
                regions = loc.tables("job")
                items = data.get("job", [])
                if not isinstance(items, list):
                    top.error("`job` must be an array of tables `[[job]]`", "job")
                    items = []
                for i, t in enumerate(items):
                    a = attempt_from_table(Section(t, regions[i] if i < len(regions) else None, loc, path, sec.diags,
                                                   f"[[job]] #{i + 1}"))
                    if a:
                        jobs.append(a)
        if not jobs and not sec.table.get("jobs") and not sec.table.get("job"):
            sec.error("a static context needs `jobs = \"FILE\"` or `[[context.job]]` tables")
        return cls(jobs)

    def attempts(self, window: Window, job_id: str | None = None) -> Iterable[Attempt]:
        for a in self.jobs:
            if job_id is not None and a.job_id != job_id:
                continue
            if window.contains(a):
                yield a
