"""Small requests to `rulekit serve`: what a client of many small jobs sees (beside
bench/service_load.py, whose requests are large).

Starts the Service on 127.0.0.1 (ephemeral port, default settings) with 1 and
then 2 workers and measures, on keep-alive connections:

1. latency of one request at a time: `GET /v1/health` and a small one-shot
   `POST /v1/attribute` (a two-node job, one Xid line): p50, p95, max in ms;
2. small jobs per second: the same small attribute request from 8 concurrent
   keep-alive clients for --seconds, every answer must be 200.

Targets: a small request under 5 ms p50, over 200 small jobs/s with one worker.
A response written in two pieces waits for the client's delayed ACK (~40 ms)
unless the server's connections have TCP_NODELAY: this is the benchmark that
shows it.  Exit 0 when the targets hold, 1 otherwise.

    .venv/bin/python bench/service_small.py [--requests 300] [--seconds 5] [--workers 1,2] [--code OLD_CHECKOUT]
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from pathlib import Path

import httpx

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from service_load import cpu_ticks, small_payload, start, stop  # noqa: E402

P50_TARGET_MS = 5.0
JOBS_TARGET = 200.0


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def one_at_a_time(url: str, n: int) -> dict:
    out = {}
    with httpx.Client(timeout=30) as c:
        for name, call in (("health", lambda i: c.get(f"{url}/v1/health")),
                           ("attribute_small", lambda i: c.post(f"{url}/v1/attribute", content=small_payload(i),
                                                                headers={"content-type": "application/json"}))):
            for i in range(10):  # warm: the first requests pay imports and caches
                call(i)
            ms = []
            for i in range(n):
                t = time.perf_counter()
                r = call(i)
                ms.append((time.perf_counter() - t) * 1000)
                assert r.status_code == 200, r.text[:300]
            out[name] = {"p50_ms": round(statistics.median(ms), 2), "p95_ms": round(pct(ms, 95), 2),
                         "max_ms": round(max(ms), 2)}
    return out


async def jobs_per_second(url: str, seconds: float, pid: int, clients: int = 8, warm: float = 2.0) -> dict:
    """Small jobs from `clients` keep-alive clients: `warm` seconds first (each request
    thread of the server pays its first job once), then `seconds` measured; also the
    server's CPU milliseconds per job (all its processes), which the machine's other
    load does not change much."""
    done = errors = 0
    measuring = False
    body = small_payload(0)
    stop_at = time.perf_counter() + warm + seconds

    async def client() -> None:
        nonlocal done, errors
        async with httpx.AsyncClient(timeout=60) as c:
            while time.perf_counter() < stop_at:
                r = await c.post(f"{url}/v1/attribute", content=body, headers={"content-type": "application/json"})
                if not measuring:
                    continue
                if r.status_code == 200:
                    done += 1
                else:
                    errors += 1

    async def clock() -> tuple[float, int]:
        nonlocal measuring
        await asyncio.sleep(warm)
        measuring = True
        return time.perf_counter(), cpu_ticks(pid)

    results = await asyncio.gather(clock(), *(client() for _ in range(clients)))
    t0, ticks0 = results[0]
    took = time.perf_counter() - t0
    cpu_ms = (cpu_ticks(pid) - ticks0) * 1000 / os.sysconf("SC_CLK_TCK")
    return {"jobs_per_s": round(done / took, 1), "non_200": errors, "clients": clients,
            "server_cpu_ms_per_job": round(cpu_ms / done, 2) if done else None}


def measure(workers: int, requests: int, seconds: float, code: Path | None = None) -> dict:
    """One server (this checkout's rulekit, or `code`'s): latency one at a time, then jobs/s."""
    proc, url = start(workers, code=code)
    try:
        r = one_at_a_time(url, requests)
        r.update(asyncio.run(jobs_per_second(url, seconds, proc.pid)))
    finally:
        stop(proc)
    return r


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--requests", type=int, default=300)
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--workers", default="1,2")
    ap.add_argument("--code", type=Path, default=None,
                    help="also run the rulekit of this checkout (a `git archive` of an older commit) "
                         "first, as the baseline, and print this one's ratios against it")
    args = ap.parse_args()
    report: dict = {"load_average_before": round(os.getloadavg()[0], 2), "cpu_count": os.cpu_count()}
    ok = True
    for w in (int(x) for x in args.workers.split(",")):
        if args.code is not None:
            base = report[f"baseline_workers_{w}"] = measure(w, args.requests, args.seconds, args.code.resolve())
        r = report[f"workers_{w}"] = measure(w, args.requests, args.seconds)
        if args.code is not None:
            report[f"ratio_workers_{w}"] = {
                "health_p50_baseline_over_this": round(base["health"]["p50_ms"] / r["health"]["p50_ms"], 1),
                "attribute_small_p50_baseline_over_this":
                    round(base["attribute_small"]["p50_ms"] / r["attribute_small"]["p50_ms"], 1),
                "jobs_per_s_this_over_baseline": round(r["jobs_per_s"] / max(base["jobs_per_s"], 0.1), 2)}
        ok &= r["health"]["p50_ms"] < P50_TARGET_MS and r["attribute_small"]["p50_ms"] < P50_TARGET_MS
        ok &= r["non_200"] == 0
        if w == 1:
            ok &= r["jobs_per_s"] > JOBS_TARGET
    report["load_average_after"] = round(os.getloadavg()[0], 2)
    report["targets"] = {"p50_ms_below": P50_TARGET_MS, "jobs_per_s_one_worker_above": JOBS_TARGET, "met": ok}
    print(json.dumps(report, indent=2))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
