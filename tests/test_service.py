"""The Attribution Service over real HTTP: `rulekit serve` (uvicorn) started on
127.0.0.1 with an ephemeral port by each fixture and stopped after it.

Every malformed payload of issue 15 gets a 4xx JSON body naming the field;
the HTTP cycle (create, ingest twice, attribute, retire) equals the library
`Session`, with one worker and with two; start-up refuses failing tests, busy
and impossible ports; bearer-token auth; an internal error is a 500 with an id.
"""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import httpx
import pytest

from rulekit.engine.session import Session
from rulekit.inputs.jobrecord import parse_job_record
from rulekit.inputs.metrics import MetricSeries
from rulekit.inputs.observation import Observation

XID79 = "[ 5120.118843] NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."
NCCL_TIMEOUT = ("[rank3]:[E1218 20:27:21.4 ProcessGroupNCCL.cpp:629] [Rank 3] Watchdog caught collective operation "
                "timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600013 milliseconds")
JOB = {"id": "svc-1", "state": "FAILED", "nodes": ["n1", "n2"], "tasks_per_node": 8,
       "start": "2026-06-01T03:00:00Z", "end": "2026-06-01T04:00:00Z"}
ROCE = {"node": "n1", "name": "roce_adp_retrans", "labels": {"device": "mlx5_0"},
        "samples": [[1780282800 + 30 * i, 900.0 * i] for i in range(6)]}
PAYLOAD = {"job": JOB, "observations": [{"source": "syslog", "node": "n2", "lines": [XID79]}], "metrics": [ROCE]}


def _start(args: list[str], env: dict[str, str] | None = None, timeout: float = 120.0):
    cmd = [sys.executable, "-m", "rulekit", "serve", "--port", "0", *args]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, **(env or {})})
    lines: list[str] = []
    ready = threading.Event()

    def reader() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.append(line)
            if " on http://" in line:
                ready.set()
        ready.set()

    threading.Thread(target=reader, daemon=True).start()
    if not ready.wait(timeout) or proc.poll() is not None and not any(" on http://" in x for x in lines):
        proc.kill()
        raise AssertionError("the server did not start:\n" + "".join(lines))
    url = next(x for x in lines if " on http://" in x).split(" on ")[1].split()[0]
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            if httpx.get(f"{url}/v1/health", timeout=5).status_code == 200:
                break
        except httpx.TransportError:
            time.sleep(0.2)
    return proc, url, lines


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


@contextmanager
def served(*args: str, env: dict[str, str] | None = None) -> Iterator[tuple[str, list[str]]]:
    proc, url, lines = _start(list(args), env)
    try:
        yield url, lines
    finally:
        _stop(proc)


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with served("--max-body-mb", "1", "--max-jobs", "3", "--body-timeout", "2", "--header-timeout", "2") as (url, _):
        yield url


def post(url: str, body, **kw) -> httpx.Response:
    data = body if isinstance(body, (bytes, str)) else json.dumps(body)
    return httpx.post(url, content=data, headers={"content-type": "application/json", **kw.pop("headers", {})},
                      timeout=60, **kw)


def library_result(engine, job: dict, batches: list[dict]) -> dict:
    with Session(engine, parse_job_record(job)) as s:
        for b in batches:
            for i, o in enumerate(b.get("observations", [])):
                s.ingest(Observation(source=o["source"], node=o.get("node"), format=o.get("format", "text"),
                                     label=o["label"], lines=o["lines"]))
            s.ingest_metrics(MetricSeries.of(m["node"], m["name"], m["samples"], m.get("labels")) for m in b.get("metrics", []))
        return s.attribute()


# ---- one shot ---------------------------------------------------------------------------

def test_one_shot_attribute_with_logs_and_metrics(server):
    r = post(f"{server}/v1/attribute", PAYLOAD)
    assert r.status_code == 200, r.text
    res = r.json()
    assert res["outcome"] == "hardware" and res["root_cause"]["node"] == "n2"
    assert {"node": "n1", "symptoms": ["performance_roce_adp_retrans_high"]} in res["interesting_nodes"]


def test_start_and_end_are_used(server):
    """Metric samples outside [start, end] are not evaluated: the same series before the job did nothing."""
    early = dict(ROCE, samples=[[1780270000 + 30 * i, 900.0 * i] for i in range(6)])
    res = post(f"{server}/v1/attribute", dict(PAYLOAD, metrics=[early])).json()
    assert res["interesting_nodes"] == []
    res = post(f"{server}/v1/attribute", dict(PAYLOAD, job={k: v for k, v in JOB.items() if k not in ("start", "end")},
                                              metrics=[early])).json()
    assert res["interesting_nodes"][0]["node"] == "n1"


def _job(**kw):
    return {"job": {**JOB, **kw}}


MALFORMED = [
    # (body, status, a loc that must be named, words in the message)
    (_job(state=5), 422, ["body", "job", "state"], "string"),
    (_job(state="EXPLODED"), 422, ["body", "job", "state"], "unknown job state"),
    (_job(tasks_per_node=-3), 422, ["body", "job", "tasks_per_node"], "positive integer"),
    (_job(ranks={"0": "nowhere"}), 422, ["body", "job", "ranks"], "not in `nodes`"),
    (_job(start="yesterday"), 422, ["body", "job", "start"], "RFC 3339"),
    (_job(end="2026-01-01T00:00:00Z"), 422, ["body", "job", "end"], "before `start`"),
    (_job(failed_node=7), 422, ["body", "job", "failed_node"], "node name"),
    (_job(exit_code=[1, 2]), 422, ["body", "job", "exit_code"], "integer"),
    (_job(nodes="n1"), 422, ["body", "job", "nodes"], "list of node names"),
    (_job(bogus=1), 422, ["body", "job", "bogus"], "unknown key"),
    ({"job": {**JOB, "execution_cancellation": {"record_id": "other", "cancelled_by": "x",
                                                "source_time": "2026-06-01T03:10:00Z"}}},
     422, ["body", "job", "execution_cancellation"], "not 'svc-1'"),
    ({**_job(), "observations": [{"source": "syslog", "node": ["a"], "lines": ["x"]}]}, 422,
     ["body", "observations", 0, "log", "node"], "string"),
    ({**_job(), "observations": [{"source": "syslog", "lines": "not a list"}]}, 422,
     ["body", "observations", 0, "log", "lines"], "list"),
    ({**_job(), "observations": [{"kind": "core_dump", "source": "x"}]}, 422, ["body", "observations", 0],
     "unknown observation kind"),
    ({**_job(), "metrics": [{"node": "n1", "name": "m", "samples": [[0, "hot"]]}]}, 422,
     ["body", "metrics", 0, "samples"], "number"),
    ({"observations": []}, 422, ["body", "job"], "required"),
    ([], 422, ["body"], "object"),
    (b"{not json", 400, ["body"], "JSON"),
    (b'{"job": {"id": "\xff\xfe"}}', 400, ["body"], "UTF-8"),
    (b"", 400, ["body"], "empty"),
    ('{"job": ' + "[" * 100_000 + "]" * 100_000 + "}", 400, ["body"], "JSON"),
    # a 5,000-digit integer: refused by the JSON parser itself (with its column), never converted
    ('{"job": {"id": "1", "tasks_per_node": ' + "7" * 5000 + "}}", 400, ["body"], "number out of range"),
    ('{"job": {"id": "1", "exit_code": ' + "9" * 5000 + "}}", 400, ["body"], "number out of range"),
    ('{"job": {"id": "1", "exit_code": ' + "9" * 30 + "}}", 422, ["body", "job", "exit_code"], "32-bit"),
]


@pytest.mark.parametrize("body, status, loc, words", MALFORMED, ids=[f"{i}-{m[2][-1]}" for i, m in enumerate(MALFORMED)])
def test_malformed_payloads_get_a_4xx_json_naming_the_field(server, body, status, loc, words):
    r = post(f"{server}/v1/attribute", body)
    assert r.status_code == status, r.text[:500]
    assert r.headers["content-type"].startswith("application/json")
    detail = r.json()["detail"]
    assert any(d["loc"][: len(loc)] == loc for d in detail), detail
    assert words.lower() in json.dumps(detail).lower(), detail


def test_oversized_body_is_413_json_while_streaming(server):
    big = b'{"job": {"id": "x"}, "observations": [{"source": "applog", "lines": ["' + b"a" * (2 << 20) + b'"]}]}'
    r = post(f"{server}/v1/attribute", big)
    assert r.status_code == 413 and r.json()["detail"][0]["type"] == "body_too_large"

    def chunks():  # no Content-Length: counted as it streams
        for _ in range(40):
            yield b" " * (64 << 10)

    r = httpx.post(f"{server}/v1/attribute", content=chunks(), timeout=60)
    assert r.status_code == 413 and r.json()["detail"][0]["loc"] == ["body"]


def test_unknown_paths_and_methods_are_json(server):
    r = httpx.get(f"{server}/v2/nothing", timeout=10)
    assert r.status_code == 404 and r.json()["detail"][0]["loc"] == ["path"]
    r = httpx.get(f"{server}/v1/attribute", timeout=10)
    assert r.status_code == 405 and "detail" in r.json()
    r = httpx.get(f"{server}/v1/jobs/0123456789abcdef01234567", timeout=10)
    assert r.status_code == 404 and r.json()["detail"][0]["loc"] == ["path", "id"]


def test_a_stalled_body_times_out_with_408(server):
    host, port = server.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=60) as s:
        s.sendall(b"POST /v1/attribute HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  b"Content-Length: 100\r\n\r\n{\"job\":")
        s.settimeout(60)
        t0 = time.time()
        data = b""
        while chunk := s.recv(65536):  # the server answers, then closes
            data += chunk
    assert b" 408 " in data.split(b"\r\n")[0] and b"body_timeout" in data
    assert 1.5 < time.time() - t0 < 15


def test_stalled_headers_are_dropped(server):
    host, port = server.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=60) as s:
        s.sendall(b"POST /v1/attribute HTTP/1.1\r\nHost: x\r\n")  # and never the rest
        s.settimeout(40)
        t0 = time.time()
        assert s.recv(100) == b""  # closed by the server
        assert 1.5 < time.time() - t0 < 15


@pytest.fixture(scope="module")
def h11_server() -> Iterator[str]:
    """The same Service on uvicorn's pure-Python parser (`--http h11`)."""
    with served("--http", "h11", "--max-body-mb", "1", "--header-timeout", "2") as (url, _):
        yield url


@pytest.fixture(params=["httptools", "h11"])
def either(request, server, h11_server) -> str:
    """The default server (httptools) and the h11 one."""
    return server if request.param == "httptools" else h11_server


def _raw(url: str, data: bytes, wait: float = 40) -> tuple[bytes, float]:
    """Send `data` on a new connection; everything the server answers until it closes, and how long."""
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=60) as s:
        s.sendall(data)
        s.settimeout(wait)
        t0 = time.time()
        got = b""
        try:
            while chunk := s.recv(65536):
                got += chunk
        except ConnectionResetError:
            pass
        return got, time.time() - t0


def test_the_default_parser_is_httptools(server):
    """`--http auto` (the default) runs the httptools protocol when httptools is installed,
    as the package requires."""
    from rulekit.service.limits import TimedHttpToolsProtocol, http_protocol

    assert http_protocol("auto", 10.0) is TimedHttpToolsProtocol


def test_stalled_headers_are_dropped_by_either_parser(either):
    got, took = _raw(either, b"POST /v1/attribute HTTP/1.1\r\nHost: x\r\n")  # and never the rest
    assert got == b"" and 1.5 < took < 15


def test_headers_trickled_on_a_kept_alive_connection_are_dropped(either):
    """The clock starts again at the first byte of the next request on a kept-alive connection."""
    host, port = either.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=60) as s:
        s.sendall(b"GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n")
        s.settimeout(30)
        first = s.recv(65536)
        assert first.startswith(b"HTTP/1.1 200 ")
        s.sendall(b"GET /v1/health HTTP/1.1\r\n")  # the next request's headers never end
        t0 = time.time()
        while s.recv(65536):
            pass
        assert 1.5 < time.time() - t0 < 15


def test_a_header_block_past_the_bound_is_a_400_by_either_parser(either):
    """h11 refuses an incomplete header block past 16 KiB; the httptools protocol does the same
    (llhttp keeps no limit of its own)."""
    got, took = _raw(either, b"GET /v1/health HTTP/1.1\r\nHost: x\r\n" + b"X-Pad: " + b"a" * 70_000, wait=30)
    assert got.startswith(b"HTTP/1.1 400 ") and took < 10
    big_but_whole = b"GET /v1/health HTTP/1.1\r\nHost: x\r\nX-Pad: " + b"a" * 8_000 + b"\r\nConnection: close\r\n\r\n"
    got, _ = _raw(either, big_but_whole, wait=30)
    assert got.startswith(b"HTTP/1.1 200 ")


def test_both_parsers_give_the_same_answers(server, h11_server):
    """The one-shot result, a field error and an oversized body: the same status and bytes."""
    bodies = [json.dumps(PAYLOAD), json.dumps(dict(PAYLOAD, job=dict(JOB, nodes="n1"))), "x" * (2 << 20)]
    for body in bodies:
        a, b = post(f"{server}/v1/attribute", body), post(f"{h11_server}/v1/attribute", body)
        assert a.status_code == b.status_code and a.content == b.content
        assert {k: v for k, v in a.headers.items() if k != "date"} == {k: v for k, v in b.headers.items() if k != "date"}


# ---- the corpus ---------------------------------------------------------------------------

def test_health_symptoms_rules(server, bundled):
    h = httpx.get(f"{server}/v1/health", timeout=10).json()
    assert h["status"] == "ok" and len(h["corpus_hash"]) == 64
    assert h["rules"] == len(bundled.rules) and h["symptoms"] == len(bundled.registry)
    assert h["self_test"]["ok"] is True and h["self_test"]["by_kind"]["job"] > 0 and h["self_test"]["by_kind"]["metric"] > 0
    syms = httpx.get(f"{server}/v1/symptoms", timeout=10).json()
    assert any(s["name"] == "performance_roce_adp_retrans_high" for s in syms)
    rules = httpx.get(f"{server}/v1/rules", timeout=10).json()
    assert {"name": "node-metric-roce-adp-retrans", "kind": "metric"}.items() <= next(
        r for r in rules if r["name"] == "node-metric-roce-adp-retrans").items()


def test_openapi_is_served_and_checked_in(server):
    from rulekit.service.openapi import render

    checked_in = Path(__file__).resolve().parent.parent / "docs" / "openapi.json"
    assert checked_in.read_text() == render(), "regenerate: python -m rulekit.service.openapi > docs/openapi.json"
    served_doc = httpx.get(f"{server}/openapi.json", timeout=10).json()
    assert served_doc == json.loads(checked_in.read_text())


# ---- the cycle ----------------------------------------------------------------------------

BATCH1 = {"observations": [{"source": "applog", "label": "train.log", "lines": [NCCL_TIMEOUT]}]}
BATCH2 = {"observations": [{"source": "syslog", "node": "n2", "label": "n2.log", "lines": [XID79]}], "metrics": [ROCE]}


def run_cycle(url: str) -> tuple[dict, dict, dict]:
    r = post(f"{url}/v1/jobs", {"job": JOB})
    assert r.status_code == 201, r.text
    jid = r.json()["id"]
    r1 = post(f"{url}/v1/jobs/{jid}/observations", BATCH1)
    assert r1.status_code == 200 and r1.json()["observations"] == 1, r1.text
    prelim = post(f"{url}/v1/jobs/{jid}/attribute", b"").json()
    r2 = post(f"{url}/v1/jobs/{jid}/observations", BATCH2)
    assert r2.status_code == 200 and r2.json()["metric_series"] == 1 and r2.json()["events_added"] >= 2, r2.text
    status = httpx.get(f"{url}/v1/jobs/{jid}", timeout=30).json()
    assert status["observations"] == 2 and status["metric_series"] == 1 and status["job_id"] == "svc-1"
    final = post(f"{url}/v1/jobs/{jid}/attribute", b"").json()
    d = httpx.delete(f"{url}/v1/jobs/{jid}", timeout=30)
    assert d.status_code == 200 and d.json()["retired"] is True
    assert httpx.get(f"{url}/v1/jobs/{jid}", timeout=30).status_code == 404
    assert post(f"{url}/v1/jobs/{jid}/observations", BATCH1).status_code == 404
    return prelim, final, status


def test_http_cycle_equals_the_library_session(server, bundled):
    prelim, final, _ = run_cycle(server)
    assert prelim == library_result(bundled, JOB, [BATCH1])
    assert final == library_result(bundled, JOB, [BATCH1, BATCH2])
    assert final["outcome"] == "hardware" and final["root_cause"]["node"] == "n2"


def test_open_jobs_are_bounded(server):
    ids = []
    try:
        for _ in range(3):
            r = post(f"{server}/v1/jobs", {"job": JOB})
            assert r.status_code == 201
            ids.append(r.json()["id"])
        r = post(f"{server}/v1/jobs", {"job": JOB})
        assert r.status_code == 429 and r.json()["detail"][0]["type"] == "too_many_jobs" and "retry-after" in r.headers
    finally:
        for i in ids:
            httpx.delete(f"{server}/v1/jobs/{i}", timeout=30)


def test_bad_records_are_rejected_by_the_cycle_too(server):
    r = post(f"{server}/v1/jobs", _job(state="EXPLODED"))
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["body", "job", "state"]


def test_idle_jobs_are_retired_after_the_ttl():
    with served("--job-ttl", "1") as (url, _):
        jid = post(f"{url}/v1/jobs", {"job": JOB}).json()["id"]
        time.sleep(2.5)
        assert httpx.get(f"{url}/v1/jobs/{jid}", timeout=30).status_code == 404


def test_cycle_with_two_workers_equals_the_library(bundled):
    with served("--workers", "2") as (url, _):
        pids = {httpx.get(f"{url}/v1/health", timeout=10, headers={"connection": "close"}).json()["worker_pid"]
                for _ in range(30)}
        for _ in range(3):  # requests land on either worker; every answer must be the same
            prelim, final, _ = run_cycle(url)
            assert prelim == library_result(bundled, JOB, [BATCH1])
            assert final == library_result(bundled, JOB, [BATCH1, BATCH2])
    assert len(pids) == 2, "both workers should have answered"


# ---- start-up, ports, auth, internal errors --------------------------------------------------

def test_start_up_refuses_a_failing_test(tmp_path, make_corpus):
    rules = make_corpus({"r.toml": """
[[symptom]]
name = "BOOM"
outcome = "hardware"
sub_domain = "gpu"
rank = 900
blame = "node"

[[extractor]]
name = "Boom"
match_re = 'BOOM'
emit = { type = "bad_node", symptom = "BOOM" }
[[extractor.test]]
line = "nothing to see"
"""})
    r = subprocess.run([sys.executable, "-m", "rulekit", "serve", "--port", "0", "--rules", str(rules)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "start-up tests fail" in r.stderr and "Boom" in r.stderr
    assert "Traceback" not in r.stderr
    with served("--rules", str(rules), "--allow-failing-tests") as (url, lines):
        h = httpx.get(f"{url}/v1/health", timeout=10).json()
        assert h["status"] == "degraded" and h["self_test"]["failed"] == 1


def test_busy_and_impossible_ports_are_a_clear_exit_2():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        r = subprocess.run([sys.executable, "-m", "rulekit", "serve", "--port", str(port)], capture_output=True,
                           text=True, timeout=120)
    assert r.returncode == 2 and "already in use" in r.stderr and "Traceback" not in r.stderr
    r = subprocess.run([sys.executable, "-m", "rulekit", "serve", "--port", "99999"], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 2 and "--port" in r.stderr and "65535" in r.stderr and "Traceback" not in r.stderr


def test_bearer_token_auth():
    with served(env={"RULEKIT_SERVICE_TOKEN": "s3cret"}) as (url, lines):
        assert any("bearer token required" in x for x in lines)
        assert httpx.get(f"{url}/v1/health", timeout=10).json()["auth"] is True
        r = post(f"{url}/v1/attribute", PAYLOAD)
        assert r.status_code == 401 and r.headers["www-authenticate"].startswith("Bearer")
        assert post(f"{url}/v1/attribute", PAYLOAD, headers={"authorization": "Bearer wrong"}).status_code == 401
        assert httpx.get(f"{url}/v1/rules", timeout=10).status_code == 401
        ok = post(f"{url}/v1/attribute", PAYLOAD, headers={"authorization": "Bearer s3cret"})
        assert ok.status_code == 200 and ok.json()["outcome"] == "hardware"


def test_an_internal_error_is_a_500_json_with_an_error_id(tmp_path, caplog):
    """A real uvicorn in this process, serving an app over an engine that breaks."""
    import uvicorn

    from rulekit.service.app import create_app
    from rulekit.service.settings import ServiceSettings

    class Broken:
        rules: tuple = ()
        metric_rules: tuple = ()

        def rule_names(self):
            raise RuntimeError("the engine broke")

    app = create_app(Broken(), ServiceSettings(state_dir=str(tmp_path)))
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    t = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    t.start()
    try:
        url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        for _ in range(100):
            if server.started:
                break
            time.sleep(0.05)
        r = post(f"{url}/v1/attribute", PAYLOAD)
        assert r.status_code == 500
        body = r.json()
        assert len(body["error_id"]) == 16 and body["error_id"] in body["detail"][0]["msg"]
    finally:
        server.should_exit = True
        t.join(30)
        sock.close()


def test_graceful_shutdown_finishes_the_request_in_flight():
    proc, url, _ = _start([])
    nccl = ("[rank{r}]:[E1218 20:27:21.4 ProcessGroupNCCL.cpp:629] [Rank {r}] Watchdog caught collective operation "
            "timeout: WorkNCCL(SeqNum={i}, OpType=ALLREDUCE) ran for 600013 milliseconds")
    heavy = dict(PAYLOAD, observations=PAYLOAD["observations"] + [
        {"source": "applog", "lines": [nccl.format(r=i % 16, i=i) for i in range(3000)]}])
    got: list = []
    t = threading.Thread(target=lambda: got.append(post(f"{url}/v1/attribute", heavy)))
    try:
        t.start()
        time.sleep(0.5)  # the request is being served
        proc.send_signal(signal.SIGTERM)
        t.join(120)
        assert got and got[0].status_code == 200 and got[0].json()["outcome"] == "hardware"
        assert proc.wait(60) in (0, -signal.SIGTERM)  # uvicorn re-raises the signal once it has drained
        with pytest.raises(httpx.TransportError):  # and then it is gone
            httpx.get(f"{url}/v1/health", timeout=5)
    finally:
        _stop(proc)


def test_flight_recorder_observations_over_http(server, bundled):
    """The flight-recorder kind: the same culprits as a job directory's fr/ dumps; a refused dump is a 422 at its item."""
    from frgen import Fault, Sim

    sim = Sim(world=16, tp=8, faults={3: Fault("hang", 4), 12: Fault("hang", 4)})
    obs = [{"kind": "flight_recorder", "rank": r, "dump": json.loads(json.dumps(d))} for r, d in sim.dumps().items()]
    body = {"job": {"id": "fr", "state": "FAILED", "nodes": ["node-01", "node-02"], "tasks_per_node": 8},
            "observations": [{"source": "applog", "lines": sim.watchdog_lines()}, *obs]}
    r = post(f"{server}/v1/attribute", body)
    assert r.status_code == 200, r.text[:300]
    assert r.json()["collectors"]["flight_recorder"]["culprit_ranks"] == [3, 12]
    bad = dict(body, observations=[{"kind": "flight_recorder", "rank": 1, "dump": {"entries": "not a list"}}])
    r = post(f"{server}/v1/attribute", bad)
    assert r.status_code == 422 and r.json()["detail"][0]["loc"][:3] == ["body", "observations", 0]
