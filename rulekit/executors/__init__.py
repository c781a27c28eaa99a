"""Batch execution: attribute many job attempts on a pool of workers.

One small interface (`base.Executor`: submit job attempts, a bounded number in
flight, a per-task timeout, outcomes as they finish, a failure recorded per job
with its error while the batch goes on; a job is a `Job` directory or any `Task`) and its implementations: `local` (a
process pool on this machine) and `dask` (Dask distributed: a scheduler address
or a LocalCluster).  `choose.make_executor(name, ...)` picks one by name, so the CLI's
`attribute` and `blueprint run` take the same `--executor` option.

May import the core, `rules`, `inputs` and `engine` (and any group below it);
must not import `cli`.  Nothing here prints: callers render outcomes.
"""
from rulekit.executors.base import CorpusSpec, Executor, ExecutorError, Job, JobOutcome, JobTimeout, Task
from rulekit.executors.choose import EXECUTORS, make_executor

__all__ = ["CorpusSpec", "Executor", "ExecutorError", "Job", "JobOutcome", "JobTimeout", "Task", "make_executor", "EXECUTORS"]
