"""`explain`: the attribution trace as data.

* `explain_code(code)`: a diagnostic code's documentation from the one code table.
* `explain_line(engine, job_dir, file, line)`: for one log line of a job, every rule
  whose pattern matches it (and its captures and the event it would emit), whether
  the rule applies to that file's source, and what the attribution phases later
  did to the events that line produced.
* `explain_job(engine, job_dir)`: phase by phase, which events each filter and
  refiner added, demoted, promoted or discarded and why, the symptoms that were
  candidates for the root cause (rank, outcome, who removed them) and why the
  root cause won (rank, tie-break, POST_OUTCOME changes), and what the collectors
  found (e.g. the flight-recorder analysis of a hang).

Pure data out; the CLI renders it.  Reads the job directory (that is its input)
but writes nothing.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from rulekit.rules.records import dataclass
from rulekit.codes import Code, lookup
from rulekit.diagnostics import Diagnostic, RulekitError, Span
from rulekit.rules.corpus import RuleEngine, applies
from rulekit.rules.expand import render
from rulekit.inputs.jobdir import JobDir, read_job_dir
from rulekit.rules.model import ExtractorRule, short_type
from rulekit.inputs.observation import Observation
from rulekit.extract.regex import compile_pattern
from rulekit.engine.session import Session

# ---- codes ------------------------------------------------------------------------------


def explain_code(code: str) -> Code | None:
    """The code-table entry for `RK101`, `rk101` or a code name (`unknown-key`)."""
    return lookup(code)


def is_code(arg: str) -> bool:
    return lookup(arg) is not None


# ---- one line ---------------------------------------------------------------------------


@dataclass(frozen=True)
class LineRef:
    file: str
    line: int


def parse_line_ref(text: str) -> LineRef | None:
    """`applog/train.log:42` -> LineRef; None when it is not FILE:N with N >= 1."""
    file, sep, num = text.rpartition(":")
    if not sep or not file or not num.isdigit() or int(num) < 1:
        return None
    return LineRef(file, int(num))


def _find_observation(jd: JobDir, file: str) -> Observation | None:
    want = Path(file)
    for o in jd.observations:
        if o.path is None:
            continue
        cands = {str(o.path), o.label or "", str(o.path.relative_to(jd.path)) if o.path.is_relative_to(jd.path) else ""}
        if file in cands or (want.is_absolute() and want.resolve() == o.path.resolve()):
            return o
        if (Path.cwd() / want).resolve() == o.path.resolve():
            return o
    for o in jd.observations:  # observations.jsonl records: label "observations.jsonl:N"
        if o.path is None and o.label and file in ("observations.jsonl", o.label):
            return o
    return None


def _read_line(obs: Observation, n: int) -> str | None:
    if obs.path is not None:
        with open(obs.path, "rb") as f:
            for i, raw in enumerate(f, start=1):
                if i == n:
                    return raw.rstrip(b"\n").rstrip(b"\r").decode("utf-8", "replace")
        return None
    lines = list(obs.lines or ())
    idx = n - obs.first_line
    return lines[idx] if 0 <= idx < len(lines) else None


def _span(rule: Any) -> dict[str, Any] | None:
    s: Span | None = getattr(rule, "span", None)
    return None if s is None else {"file": s.file, "line": s.line, "col": s.col}


def match_rules(engine: RuleEngine, line: str, source: str, fmt: str, rule: str | None = None) -> list[dict[str, Any]]:
    """Every extractor / accumulator whose pattern matches `line`, with its captures,
    whether it applies to (source, format), and the event an extractor would emit."""
    out = []
    for r in (*engine.extractors, *engine.accumulators):
        if rule is not None and r.name != rule:
            continue
        m = compile_pattern(r.match_re).search(line)
        if m is None:
            continue
        caps = {k: v for k, v in m.groupdict().items() if v is not None}
        entry: dict[str, Any] = {"rule": r.name, "kind": r.kind.value, "applies": applies(r, source, fmt),
                                 "sources": list(r.sources), "formats": list(r.formats),
                                 "match": {"start": m.start() + 1, "end": m.end() + 1, "text": m.group(0)},
                                 "captures": caps, "span": _span(r)}
        if isinstance(r, ExtractorRule):
            values = dict(r.lookup)
            values.update(caps)
            sym = render(r.emit.symptom, values) if r.emit.symptom else None
            entry["emit"] = {"type": r.emit.type,
                             "symptom": engine.registry.canonical(sym) if sym else None,
                             "node": render(r.emit.node, values) if r.emit.node else None}
            if sym and engine.registry.is_known(sym):
                entry["emit"]["rank"] = engine.registry.rank(sym)
        out.append(entry)
    return out


def explain_line(engine: RuleEngine, job_dir: str | Path, file: str, line: int, rule: str | None = None) -> dict[str, Any]:
    """The line trace (see the module docstring).  Raises RulekitError (RK501/RK502) for
    a bad job directory and RK506-free plain errors for a line that does not exist."""
    jd = read_job_dir(job_dir)
    obs = _find_observation(jd, file)
    if obs is None:
        known = ", ".join(o.label or str(o.path) for o in jd.observations) or "none"
        raise RulekitError(Diagnostic("RK501", f"`{file}` is not a log of job `{job_dir}` (its logs: {known})",
                                      Span(str(job_dir))))
    text = _read_line(obs, line)
    if text is None:
        raise RulekitError(Diagnostic("RK501", f"`{file}` has no line {line}", Span(file, 1, 1)))
    matches = match_rules(engine, text, obs.source, obs.format, rule)
    job = explain_job(engine, job_dir, _jd=jd)
    label = obs.name
    produced = [e for e in job["events"] if e["source"] == label and e["line_num"] == line]
    ids = {e["id"] for e in produced}
    history = [t for t in job["trace"] if t["event_id"] in ids]
    return {"job_dir": str(job_dir), "file": file, "line_num": line, "line": text, "source": obs.source,
            "format": obs.format, "node": obs.node, "rule": rule, "matches": matches,
            "events": produced, "history": history,
            "root_cause_from_line": bool(job["decision"]["root_event_id"] in ids)}


# ---- the whole job ----------------------------------------------------------------------


def _priority(engine: RuleEngine, name: str) -> dict[str, Any]:
    """A filter's or refiner's priority as stratum + offset (the order rules run in)."""
    from rulekit.rules.model import FilterPriority, FilterRule, RefinerPriority, RefinerRule, stratum_of

    r = engine.by_name.get(name)
    out: dict[str, Any] = {"rule": name, "kind": r.kind.value if r is not None else None}
    if isinstance(r, (FilterRule, RefinerRule)):
        strata = FilterPriority if isinstance(r, FilterRule) else RefinerPriority
        st = stratum_of(r.priority, strata)
        out["priority"] = r.priority
        out["stratum"] = f"{st.name}+{r.priority - st.value}" if st is not None else str(r.priority)
    return out


NOTE_ACTIONS = ("keep", "keep_symptom", "prefer_symptom")  # trace notes: a rule left a symptom or chose it


def _event_dict(e: Any) -> dict[str, Any]:
    return {"id": e.id, "type": short_type(e.event_type), "symptom": e.symptom, "node": e.node,
            "rule": e.rule, "source": e.label or e.source, "line_num": e.line_num}


def explain_job(engine: RuleEngine, job_dir: str | Path, rule: str | None = None, _jd: JobDir | None = None) -> dict[str, Any]:
    """The job trace (see the module docstring)."""
    jd = _jd or read_job_dir(job_dir)
    with Session(engine, jd.job) as s:
        s.ingest_batch(jd.observations)
        stream = s.manager.stream(s.context_id)
        extracted = [_event_dict(e) for e in stream.all()]
        result = s.attribute(with_trace=True)
        final = {e.id: e for e in s.manager.stream(s.context_id).all()}
        reg = engine.registry
    trace = result.pop("trace", [])
    decision = result.pop("decision", {})
    # phases in the order they ran, entries in order
    phases: list[dict[str, Any]] = []
    for t in trace:
        if rule is not None and t["rule"] != rule:
            continue
        if not phases or phases[-1]["phase"] != t["phase"]:
            phases.append({"phase": t["phase"], "entries": [], "rules": []})
        phases[-1]["entries"].append(t)
        if t["rule"] not in [r["rule"] for r in phases[-1]["rules"]]:
            phases[-1]["rules"].append(_priority(engine, t["rule"]))
    # every bad-node symptom extraction produced: its rank and what became of it
    fate: dict[str, dict[str, Any]] = {}
    for e in extracted:
        if e["type"] != "bad_node" or not e["symptom"]:
            continue
        sym = e["symptom"]
        f = fate.setdefault(sym, {"symptom": sym, "rank": reg.rank(sym) if reg.is_known(sym) else None,
                                  "outcome": reg.info(sym).outcome if reg.is_known(sym) else None,
                                  "nodes": set(), "events": 0, "removed_by": []})
        f["nodes"].add(e["node"])
        f["events"] += 1
    for t in trace:  # symptoms filters added (e.g. a decoded burst) are candidates too
        if t["action"] == "add" and t["symptom"] and t["event_id"] in final and final[t["event_id"]].is_bad:
            sym = t["symptom"]
            f = fate.setdefault(sym, {"symptom": sym, "rank": reg.rank(sym) if reg.is_known(sym) else None,
                                      "outcome": reg.info(sym).outcome if reg.is_known(sym) else None,
                                      "nodes": set(), "events": 0, "removed_by": [], "added_by": t["rule"]})
            f["nodes"].add(t["node"])
            f["events"] += 1
    for t in trace:
        if t["symptom"] in fate and t["action"] in ("demote", "discard", "discard_symptom", "demote_symptom", "set_symptom"):
            entry = {"rule": t["rule"], "action": t["action"], "phase": t["phase"], "reason": t["reason"]}
            if entry not in fate[t["symptom"]]["removed_by"]:
                fate[t["symptom"]]["removed_by"].append(entry)
        elif t["symptom"] in fate and t["action"] in NOTE_ACTIONS:  # what a rule left or chose, and why (order in time)
            entry = {"rule": t["rule"], "action": t["action"], "phase": t["phase"], "reason": t["reason"]}
            notes = fate[t["symptom"]].setdefault("notes", [])
            if entry not in notes:
                notes.append(entry)
    remaining = set(result.get("symptoms", []))
    candidates = []
    for f in sorted(fate.values(), key=lambda f: (-(f["rank"] or 0), f["symptom"])):
        f["nodes"] = sorted(n or "?" for n in f["nodes"])
        f["remaining"] = f["symptom"] in remaining
        candidates.append(f)
    root = result.get("root_cause") or {}
    why = [decision.get("reason", "")]
    root_sym = root.get("symptom")
    if root_sym:
        higher = [c for c in candidates if (c["rank"] or 0) > reg.rank(root_sym) and not c["remaining"]]
        for c in higher:
            by = "; ".join(f"{x['action']} by {x['rule']} ({x['phase']}): {x['reason']}" for x in c["removed_by"]) \
                or "removed"
            why.append(f"higher-ranked `{c['symptom']}` ({c['rank']}) did not count: {by}")
    if decision.get("changed_by"):
        why.append("the decision was changed after outcome mapping by " + ", ".join(decision["changed_by"]))
    root_event = None
    if root and decision and result.get("root_cause"):
        rid = next((e for e in final.values() if e.symptom == root_sym and e.is_bad and e.node == root.get("node")), None)
        root_event = rid.id if rid else None
    decision = dict(decision)
    decision["root_event_id"] = root_event
    return {"job_dir": str(job_dir), "job_id": result.get("job_id"), "outcome": result.get("outcome"),
            "sub_domain": result.get("sub_domain"), "ambiguous": result.get("ambiguous"),
            "root_cause": {"symptom": root_sym, "node": root.get("node"), "rule": root.get("rule")} if root_sym else None,
            "decision": decision, "why": [w for w in why if w], "candidates": candidates, "phases": phases,
            "events": extracted, "trace": trace, "rule": rule, "collectors": result.get("collectors", {}),
            "rule_errors": result.get("rule_errors", [])}
