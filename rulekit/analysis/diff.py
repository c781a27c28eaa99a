"""Attribution diff: the same job directories attributed with two rule revisions,
and what moved (outcome, sub-domain, root cause, root node, bad nodes), plus
each job's `expected.json` checked against both.

`diff_jobs(base, head, job_dirs)` returns a `DiffReport` (data only); `rulekit
diff` renders it as text, JSON or GitHub annotations.  A job that cannot be
read is reported in the report, never raised.  Does no printing and knows no
git: the CLI materializes a revision into a folder.
"""
from __future__ import annotations

import json
from dataclasses import field
from pathlib import Path
from typing import Any, Iterable

from rulekit.rules.records import dataclass
from rulekit.analysis.testing import compare_expect
from rulekit.diagnostics import RulekitError

FIELDS = ("outcome", "sub_domain", "root_cause", "root_node", "bad_nodes")
LABELS = {"outcome": "outcome", "sub_domain": "sub-domain", "root_cause": "root cause", "root_node": "root node",
          "bad_nodes": "bad nodes"}


def summary_of(result: dict[str, Any]) -> dict[str, Any]:
    """The fields a diff compares, from one attribution result."""
    if "error" in result:
        return {"error": result["error"]}
    root = result.get("root_cause") or {}
    return {"outcome": result.get("outcome"), "sub_domain": result.get("sub_domain"),
            "root_cause": root.get("symptom"), "root_node": root.get("node"),
            "bad_nodes": sorted(b["node"] for b in result.get("bad_nodes", []))}


@dataclass
class JobDiff:
    job_dir: str
    job_id: str
    base: dict[str, Any]
    head: dict[str, Any]
    changes: dict[str, tuple[Any, Any]] = field(default_factory=dict)  # field -> (old, new)
    expected: bool = False  # the job has an expected.json
    base_mismatches: list[str] = field(default_factory=list)
    head_mismatches: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.changes)

    @property
    def broken(self) -> bool:
        """expected.json fails with the head revision."""
        return self.expected and bool(self.head_mismatches)

    @property
    def newly_broken(self) -> bool:
        return self.broken and not self.base_mismatches

    @property
    def fixed(self) -> bool:
        return self.expected and bool(self.base_mismatches) and not self.head_mismatches

    def to_dict(self) -> dict[str, Any]:
        return {"job_dir": self.job_dir, "job_id": self.job_id,
                "changes": {k: {"old": o, "new": n} for k, (o, n) in self.changes.items()},
                "base": self.base, "head": self.head,
                "expected": ({"base_passes": not self.base_mismatches, "head_passes": not self.head_mismatches,
                              "head_mismatches": self.head_mismatches, "newly_broken": self.newly_broken,
                              "fixed": self.fixed} if self.expected else None)}


@dataclass
class DiffReport:
    base_label: str
    head_label: str
    jobs: list[JobDiff]

    def counts(self) -> dict[str, int]:
        out = {"jobs": len(self.jobs), "changed": sum(j.changed for j in self.jobs)}
        for f in FIELDS:
            out[f] = sum(f in j.changes for j in self.jobs)
        out["errors"] = sum("error" in j.changes for j in self.jobs)
        out["expected"] = sum(j.expected for j in self.jobs)
        out["broken"] = sum(j.broken for j in self.jobs)
        out["newly_broken"] = sum(j.newly_broken for j in self.jobs)
        out["fixed"] = sum(j.fixed for j in self.jobs)
        return out

    def headline(self) -> str:
        """`14 jobs changed root cause, 3 outcome` (or `no job changed`)."""
        c = self.counts()
        parts = [(c[f], LABELS[f]) for f in FIELDS if c[f]]
        if c["errors"]:
            parts.append((c["errors"], "whether it can be attributed"))
        if not parts:
            return f"no job changed ({c['jobs']} compared)"
        (n0, l0), rest = parts[0], parts[1:]
        return f"{n0} job{'s' * (n0 != 1)} changed {l0}" + "".join(f", {n} {label}" for n, label in rest) + \
            f" ({c['changed']} of {c['jobs']} changed)"

    @property
    def broken(self) -> list[JobDiff]:
        return [j for j in self.jobs if j.broken]

    def to_dict(self) -> dict[str, Any]:
        return {"tool": "rulekit diff", "base": self.base_label, "head": self.head_label,
                "summary": self.counts(), "headline": self.headline(), "jobs": [j.to_dict() for j in self.jobs]}


def find_job_dirs(roots: Iterable[Path]) -> list[Path]:
    """Job directories: each root that is one (job.toml, applog/ or syslog/), else its
    immediate sub-folders that are."""
    out: list[Path] = []
    for root in roots:
        root = Path(root)
        if _is_job_dir(root):
            out.append(root)
            continue
        if root.is_dir():
            out += [d for d in sorted(root.iterdir()) if d.is_dir() and _is_job_dir(d)]
    return out


def _is_job_dir(d: Path) -> bool:
    return d.is_dir() and any((d / n).exists() for n in ("job.toml", "applog", "syslog", "observations.jsonl"))


def _attribute(engine: Any, job_dir: Path) -> dict[str, Any]:
    from rulekit.engine.jobrun import attribute_dir

    try:
        return attribute_dir(engine, job_dir)
    except RulekitError as e:
        return {"error": str(e)}
    except OSError as e:
        return {"error": f"{e.filename or job_dir}: {e.strerror or e}"}


def _expected(job_dir: Path) -> dict[str, Any] | None | str:
    p = job_dir / "expected.json"
    if not p.is_file():
        return None
    try:
        data = json.loads(p.read_text("utf-8"))
    except (OSError, ValueError) as e:
        return f"expected.json cannot be read: {e}"
    return data if isinstance(data, dict) else "expected.json must hold a JSON object"


def diff_jobs(base: Any, head: Any, job_dirs: Iterable[Path], base_label: str = "base",
              head_label: str = "head") -> DiffReport:
    """Attribute every job directory with both engines and compare."""
    jobs = []
    for d in job_dirs:
        rb, rh = _attribute(base, d), _attribute(head, d)
        sb, sh = summary_of(rb), summary_of(rh)
        jd = JobDiff(str(d), str(rh.get("job_id") or rb.get("job_id") or d.name), sb, sh)
        if "error" in sb or "error" in sh:
            if sb.get("error") != sh.get("error"):
                jd.changes["error"] = (sb.get("error"), sh.get("error"))
        else:
            for f in FIELDS:
                if sb.get(f) != sh.get(f):
                    jd.changes[f] = (sb.get(f), sh.get(f))
        exp = _expected(d)
        if exp is not None:
            jd.expected = True
            if isinstance(exp, str):
                jd.base_mismatches = jd.head_mismatches = [exp]
            else:
                jd.base_mismatches = [sb["error"]] if "error" in sb else compare_expect(exp, rb)
                jd.head_mismatches = [sh["error"]] if "error" in sh else compare_expect(exp, rh)
        jobs.append(jd)
    return DiffReport(base_label, head_label, jobs)
