"""Attribute one job directory: read it (`rulekit.inputs.jobdir`), run a
`Session` over its observations, and attach the reader's notes to the result.

The one place that turns a folder into a result; the CLI, the test runner and
batch executors call it.  Raises RulekitError on bad input; prints nothing.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from rulekit.engine.session import Session
from rulekit.inputs.jobdir import read_job_dir


def attribute_dir(engine: Any, job_dir: str | Path, progress: Callable[[int], None] | None = None,
                  with_trace: bool = False) -> dict[str, Any]:
    """Read and attribute one job directory with a built engine (raises RulekitError on bad input)."""
    jd = read_job_dir(job_dir)
    with Session(engine, jd.job) as s:
        s.ingest_batch(jd.observations, progress)
        s.ingest_metrics(jd.metrics)
        result = s.attribute(with_trace=with_trace)
    if jd.notes:
        result["notes"] = [d.to_dict() for d in jd.notes]
    return result
