"""rulekit: rule engine and toolkit for workload-centric failure attribution.

Public API: `setup_rules()`, `load_corpus()`, `Session`, `Observation`,
`MetricSeries`, `JobInfoBuilder`, `parse_job_record()`, `read_job_dir()`, `attribute_dir()`.
"""
__version__ = "0.1.0"

from rulekit.api import setup_rules  # noqa: E402
from rulekit.engine.jobrun import attribute_dir
from rulekit.inputs.jobdir import read_job_dir  # noqa: E402
from rulekit.inputs.jobinfo import ExecutionCancellation, JobInfo, JobInfoBuilder, SchedulerFailure  # noqa: E402
from rulekit.rules.loader import load_corpus  # noqa: E402
from rulekit.inputs.observation import Observation  # noqa: E402
from rulekit.inputs.metrics import MetricSeries  # noqa: E402
from rulekit.inputs.jobrecord import parse_job_record  # noqa: E402
from rulekit.engine.session import Session  # noqa: E402

__all__ = ["setup_rules", "load_corpus", "Session", "Observation", "JobInfo", "JobInfoBuilder", "SchedulerFailure",
           "ExecutionCancellation", "read_job_dir", "attribute_dir", "MetricSeries", "parse_job_record"]
