"""rulekit: rule engine and toolkit for workload-centric failure attribution.

Public API: `setup_rules()`, `load_corpus()`, `Session`, `Observation`,
`JobInfoBuilder`, `read_job_dir()`, `attribute_dir()`.
"""
__version__ = "0.1.0"

from rulekit.api import setup_rules  # noqa: E402
from rulekit.jobdir import attribute_dir, read_job_dir  # noqa: E402
from rulekit.jobinfo import ExecutionCancellation, JobInfo, JobInfoBuilder, SchedulerFailure  # noqa: E402
from rulekit.loader import load_corpus  # noqa: E402
from rulekit.observation import Observation  # noqa: E402
from rulekit.session import Session  # noqa: E402

__all__ = ["setup_rules", "load_corpus", "Session", "Observation", "JobInfo", "JobInfoBuilder", "SchedulerFailure",
           "ExecutionCancellation", "read_job_dir", "attribute_dir"]
