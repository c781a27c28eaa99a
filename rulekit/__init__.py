"""rulekit: rule engine and toolkit for workload-centric failure attribution.

Public API: `setup_rules()`, `load_corpus()`, `Session`, `Observation`,
`MetricSeries`, `JobInfoBuilder`, `parse_job_record()`, `read_job_dir()`, `attribute_dir()`.

The names are imported on first use (PEP 562 `__getattr__`), so `import rulekit`
and the command line (`rulekit.cli`, a subpackage) do not import the engine, the
inputs and pydantic before a command needs them.  Must not import anything at
import time.
"""
from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

# public name -> the module that defines it
_EXPORTS = {
    "setup_rules": "rulekit.api",
    "attribute_dir": "rulekit.engine.jobrun",
    "read_job_dir": "rulekit.inputs.jobdir",
    "ExecutionCancellation": "rulekit.inputs.jobinfo",
    "JobInfo": "rulekit.inputs.jobinfo",
    "JobInfoBuilder": "rulekit.inputs.jobinfo",
    "SchedulerFailure": "rulekit.inputs.jobinfo",
    "load_corpus": "rulekit.rules.loader",
    "Observation": "rulekit.inputs.observation",
    "MetricSeries": "rulekit.inputs.metrics",
    "parse_job_record": "rulekit.inputs.jobrecord",
    "Session": "rulekit.engine.session",
    "DISTRIBUTION": "rulekit.config",
}

__all__ = ["setup_rules", "load_corpus", "Session", "Observation", "JobInfo", "JobInfoBuilder", "SchedulerFailure",
           "ExecutionCancellation", "read_job_dir", "attribute_dir", "MetricSeries", "parse_job_record"]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'rulekit' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # once: later lookups do not come here
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
