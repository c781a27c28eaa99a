"""Small requests to `rulekit serve`: what a client of many small jobs sees (beside
bench/service_load.py, whose requests are large).

Starts the Service on 127.0.0.1 (ephemeral port, default settings) with 1 and
then 2 workers and measures, on keep-alive connections:

1. latency of one request at a time: `GET /v1/health` and a small one-shot
   `POST /v1/attribute` (a two-node job, one Xid line): p50, p95, max in ms;
2. small jobs per second: the same small attribute request from 8 concurrent
   keep-alive clients for --seconds, every answer must be 200.

The load comes from a minimal keep-alive HTTP/1.1 client over asyncio streams (one
request written, the status line, headers and Content-Length body read back, as
wrk or h2load do), so the numbers are the server's and the loopback's: the load
generator shares this machine's cores with the server, and a full HTTP library
costs about a millisecond of client CPU per request (the same measurements
through httpx are printed beside, `*_httpx`).

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


class RawClient:
    """One keep-alive HTTP/1.1 connection: a request out, its response (status, body)
    back.  Only what the Service answers is read: Content-Length bodies."""

    def __init__(self, url: str):
        host, port = url.split("://", 1)[1].rsplit(":", 1)
        self.host, self.port = host, int(port)
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def request(self, method: str, path: str, body: bytes = b"") -> tuple[int, bytes]:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        head = (f"{method} {path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n"
                + (f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n" if body or method == "POST"
                   else "") + "\r\n").encode()
        self.writer.write(head + body)
        assert self.reader is not None
        raw = await self.reader.readuntil(b"\r\n\r\n")
        lines = raw.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        length = None
        for ln in lines[1:]:
            k, _, v = ln.partition(":")
            if k.strip().lower() == "content-length":
                length = int(v)
            elif k.strip().lower() == "transfer-encoding":
                raise RuntimeError(f"unexpected Transfer-Encoding: {v.strip()}")
        if length is None:
            raise RuntimeError("a response without Content-Length")
        return status, await self.reader.readexactly(length)

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


async def one_at_a_time_raw(url: str, n: int) -> dict:
    """`one_at_a_time` through `RawClient` (the server's latency without a client library's)."""
    out = {}
    c = RawClient(url)
    try:
        for name, call in (("health", lambda i: c.request("GET", "/v1/health")),
                           ("attribute_small", lambda i: c.request("POST", "/v1/attribute", small_payload(i)))):
            for i in range(10):
                await call(i)
            ms = []
            for i in range(n):
                t = time.perf_counter()
                status, body = await call(i)
                ms.append((time.perf_counter() - t) * 1000)
                assert status == 200, body[:300]
            out[name] = {"p50_ms": round(statistics.median(ms), 2), "p95_ms": round(pct(ms, 95), 2),
                         "max_ms": round(max(ms), 2)}
    finally:
        c.close()
    return out


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


async def jobs_per_second(url: str, seconds: float, pid: int, clients: int = 8, warm: float = 2.0,
                          raw: bool = True) -> dict:
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
        if raw:
            c = RawClient(url)
            try:
                while time.perf_counter() < stop_at:
                    status, _ = await c.request("POST", "/v1/attribute", body)
                    if measuring:
                        done, errors = (done + 1, errors) if status == 200 else (done, errors + 1)
            finally:
                c.close()
            return
        async with httpx.AsyncClient(timeout=60) as hc:
            while time.perf_counter() < stop_at:
                r = await hc.post(f"{url}/v1/attribute", content=body, headers={"content-type": "application/json"})
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
        r = asyncio.run(one_at_a_time_raw(url, requests))
        r.update(asyncio.run(jobs_per_second(url, seconds, proc.pid)))
        httpx_r = one_at_a_time(url, requests)
        httpx_r.update(asyncio.run(jobs_per_second(url, seconds, proc.pid, raw=False)))
        for k, v in httpx_r.items():
            if k in ("health", "attribute_small", "jobs_per_s", "server_cpu_ms_per_job"):
                r[f"{k}_httpx"] = v
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
