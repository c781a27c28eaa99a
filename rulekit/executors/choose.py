"""Pick a batch executor by name: the one place that knows every implementation
(`local`, `dask`), so `base` (the interface they build on) imports none of them.
Each is imported only when asked for (Dask loads only for "dask")."""
from __future__ import annotations

from typing import Any

from rulekit.executors.base import CorpusSpec, Executor

EXECUTORS = ("local", "dask")


def make_executor(name: str, corpus: CorpusSpec, *, engine: Any = None, address: str | None = None,
                  workers: int | None = None, timeout: float | None = None,
                  max_in_flight: int | None = None, cores: int | None = None) -> Executor:
    """An executor by name: "local" (a process pool; `engine`, when given, is inherited by
    forked workers; `cores`, the processes it may keep busy in all: `LocalExecutor`) or
    "dask" (`address` of a scheduler, or a LocalCluster of `workers`)."""
    if name == "local":
        from rulekit.executors.local import LocalExecutor

        return LocalExecutor(corpus, engine=engine, workers=workers, timeout=timeout, max_in_flight=max_in_flight,
                             cores=cores)
    if name == "dask":
        from rulekit.executors.dask import DaskExecutor

        return DaskExecutor(corpus, address=address, workers=workers, timeout=timeout, max_in_flight=max_in_flight)
    raise ValueError(f"unknown executor {name!r}; use local or dask")
