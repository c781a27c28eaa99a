"""The Dask cluster the executor tests share (imported like `corpora`): two
single-threaded worker processes on loopback, no dashboard port of its own.

`two_worker_client(config)` yields a `distributed.Client`; `config` (dask settings)
applies while the cluster is created, as the scheduler reads it then."""
from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator


@contextmanager
def two_worker_client(config: dict[str, Any] | None = None) -> Iterator[Any]:
    import dask
    import distributed

    with dask.config.set(config or {}):
        cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                           dashboard_address="127.0.0.1:0", silence_logs=40)
    client = distributed.Client(cluster)
    try:
        yield client
    finally:
        client.close()
        cluster.close()
