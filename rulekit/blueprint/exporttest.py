"""A judged attempt of the result store as a job directory (`rulekit blueprint export-test`):
job.toml from the stored attempt, its logs from what the store kept (or, given the
Blueprint config, collected again), metric series in observations.jsonl, and
expected.json from the latest judgement: the right outcome / root symptom / bad nodes
of a `wrong` one, the stored verdict of a `confirmed` one.  `rulekit attribute` and
`rulekit test` read the directory; a wrong verdict becomes a regression test.

Names from the store are untrusted (scheduler data): a node or file name becomes one
path component only through `rulekit.blueprint.names.check_name`, and every path is
checked inside the output folder after it is made; anything else (another source, a
name refused) goes to observations.jsonl as records, never lost.  A sparse kept log
(past the store's budget, `rulekit.blueprint.keptlogs`) is written with blank lines
between its runs, so each line keeps the number the evidence cites.  Writes only
under the output folder; no engine.
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from rulekit.blueprint.names import UnsafeName, check_name, inside

JOB_KEYS = ("state", "nodes", "failed_node", "exit_code", "tasks_per_node", "start", "end")
TABLES = ("allocation_failure", "execution_cancellation")


class ExportError(ValueError):
    """An attempt that cannot be exported (no judgement, nothing to expect, a bad output folder)."""


def expectation(result: dict[str, Any], judgement: dict[str, Any]) -> dict[str, Any]:
    """expected.json for the judged attempt."""
    if judgement["verdict"] == "confirmed":
        v = result.get("verdict") or {}
        rc = v.get("root_cause") or {}
        out = {"outcome": v.get("outcome"), "sub_domain": v.get("sub_domain"), "root_cause": rc.get("symptom"),
               "root_node": rc.get("node"), "bad_nodes": sorted(b["node"] for b in v.get("bad_nodes") or [])}
        return {k: x for k, x in out.items() if x is not None}
    out = {}
    if judgement.get("outcome"):
        out["outcome"] = judgement["outcome"]
    if judgement.get("symptom"):
        out["root_cause"] = judgement["symptom"]
    if judgement.get("nodes"):
        out["bad_nodes"] = sorted(judgement["nodes"])
    if not out:
        raise ExportError(f"feedback: the judgement #{judgement['id']} says the verdict is wrong but not what is "
                          "right; record the right --outcome, --symptom or --node with `rulekit blueprint feedback`")
    return out


def _toml(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{_toml(str(k))} = {_toml(x)}" for k, x in v.items() if x is not None) + " }"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_toml(x) for x in v) + "]"
    return json.dumps(str(v), ensure_ascii=False).replace("\x7f", "\\u007f")


def job_toml(result: dict[str, Any]) -> str:
    ctx = result.get("context") or {}
    lines = [f"# exported from a result store: attempt {result['key']} (attributed {result.get('attributed_at')})",
             "[job]", f"id = {_toml(result['job_id'])}"]
    for k in JOB_KEYS:
        if ctx.get(k) not in (None, "", []):
            lines.append(f"{k} = {_toml(ctx[k])}")
    if ctx.get("ranks"):
        lines += ["", "[job.ranks]"] + [f"{_toml(str(r))} = {_toml(n)}" for r, n in ctx["ranks"].items()]
    for t in TABLES:
        if isinstance(ctx.get(t), dict):
            lines += ["", f"[{t}]"] + [f"{_toml(str(k))} = {_toml(x)}" for k, x in ctx[t].items() if x is not None]
    return "\n".join(lines) + "\n"


def _file_lines(runs: list[list[Any]]) -> list[str]:
    out: list[str] = []
    for first, lines in runs:
        out += [""] * max(0, first - 1 - len(out))
        out += [str(x) for x in lines]
    return out


def _safe_stem(name: str) -> str:
    stem = re.sub(r"\.log$", "", name.rsplit("/", 1)[-1])
    return re.sub(r"[^A-Za-z0-9_.+-]", "_", stem).strip(".") or "log"


def write_job_dir(out: Path, result: dict[str, Any], kept: list[dict[str, Any]],
                  expected: dict[str, Any]) -> list[str]:
    """Write the job directory at `out` (new or empty); the notes on what it may miss."""
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ExportError(f"--out: {out} exists and is not an empty folder")
    out.mkdir(parents=True, exist_ok=True)
    root = out.resolve()
    files: dict[Path, list[str]] = {}
    records: list[dict[str, Any]] = []
    notes: list[str] = []
    for k in kept:
        target: Path | None = None
        try:
            text = k.get("format") in (None, "text")
            if k["source"] == "applog" and text:
                target = Path("applog") / (_safe_stem(str(k.get("name") or "app")) + ".log")
                i = 2
                while target in files:
                    target, i = Path("applog") / f"{_safe_stem(str(k.get('name')))}-{i}.log", i + 1
            elif k["source"] == "syslog" and k.get("node") and text:
                target = Path("syslog") / (check_name("node", str(k["node"])) + ".log")
                if target in files:
                    target = None
        except UnsafeName as e:
            notes.append(f"{e}: its lines are in observations.jsonl")
            target = None
        if target is not None:
            files[target] = _file_lines(k["runs"])
        else:
            for first, lines in k["runs"]:
                rec = {"source": k["source"], "lines": lines}
                if k.get("node"):
                    rec["node"] = k["node"]
                if k.get("format") not in (None, "text"):
                    rec["format"] = k["format"]
                records.append(rec)
        if not k.get("complete"):
            notes.append(f"{k.get('name') or k['source']}: only the lines around its evidence were kept "
                         "(lines no rule read, and events a filter or refiner discarded, are missing)")
    for rel, lines in files.items():
        p = out / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if not inside(p.parent, root):
            raise ExportError(f"refused to write {rel}: outside {out}")
        p.write_text("".join(x + "\n" for x in lines), encoding="utf-8")
    records += [m for m in result.get("metrics") or [] if m.get("samples")]
    if records:
        (out / "observations.jsonl").write_text(
            "".join(json.dumps({"kind": "metric", "node": r["node"], "name": r["name"], "labels": r["labels"],
                                "samples": r["samples"]} if "samples" in r else r, ensure_ascii=False) + "\n"
                    for r in records), encoding="utf-8")
    (out / "job.toml").write_text(job_toml(result), encoding="utf-8")
    (out / "expected.json").write_text(json.dumps(expected, indent=2) + "\n", encoding="utf-8")
    return notes


EXPORT_BYTES = 64 << 20  # logs collected again for an export, together


def recollect(cfg: Any, key: str) -> tuple[list[dict[str, Any]], list[str]]:
    """The attempt's logs collected again through the Blueprint config that found it:
    (kept observations, the connectors' failures)."""
    from rulekit.blueprint.keptlogs import keep
    from rulekit.blueprint.orchestrator import RunReport, _run_collector, discover
    from rulekit.inputs.observation import Observation

    report = RunReport()
    job_id = key.rsplit("#", 1)[0]
    for _ctx, a, _notes in discover(cfg, report, None, job_id):
        if a.key != key:
            continue
        obs = [Observation(source=r["source"], node=r.get("node"), label=r.get("label"), lines=list(r["lines"]))
               for r in a.extra.get("observations") or []]
        problems = []
        for conn in cfg.logs:
            items, cov = _run_collector(conn, "logs", a)
            obs += items
            if cov.status in ("failed", "partial"):
                problems.append(f"{cov.collector} ({cov.type}) {cov.status}: {cov.error}")
        return keep(obs, [], EXPORT_BYTES), problems
    why = "; ".join(f"{f['collector']}: {f['error']}" for f in report.context_failures)
    raise ExportError(f"--configs: the config does not find attempt {key}" + (f" ({why})" if why else ""))
