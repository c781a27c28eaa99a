"""The Service under hostile requests and hostile rules, over real HTTP: memory bombs
(a packed flight-recorder dump in a log line is text, a body of millions of tiny JSON values)
cost their caps; a body that trickles ends at its deadline; a rule that exits, prints,
loops or blocks is contained (JSON answers with an error id, the worker keeps
answering, shutdown is not held up); headers say nosniff and a CSP; the API's
documents need the token when one is set; SIGTERM leaves no spool of job lines."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import zlib
from pathlib import Path

import httpx
import pytest

from rulekit.rules.loader import bundled_rules_path

TOKEN = "t0ken"
AUTH = {"authorization": f"Bearer {TOKEN}"}
JOB = {"id": "svc", "state": "FAILED", "nodes": ["n1", "n2"], "tasks_per_node": 8}
XID79 = "[ 5120.118843] NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."
PAYLOAD = {"job": JOB, "observations": [{"source": "syslog", "node": "n2", "lines": [XID79]}]}

HOSTILE = '''
import sys, time
from rulekit.plugin import filter_def, FilterPriority

@filter_def(name="Hostile", author="t", priority=FilterPriority.STANDARD)
def hostile(ctx):
    what = ctx.job.id
    if what == "exit":
        sys.exit(3)
    if what == "print":
        print("PLUGIN-NOISE")
    if what == "loop":
        while True:
            pass
    if what == "snooze":
        time.sleep(3600)
'''


def _vm(pid: int, key: str = "VmHWM") -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) / 1024
    raise AssertionError(key)


class Server:
    def __init__(self, args: list[str], env: dict[str, str]):
        cmd = [sys.executable, "-m", "rulekit", "serve", "--port", "0", *args]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                     env={**os.environ, **env})
        self.lines: list[str] = []
        ready = threading.Event()

        def reader() -> None:
            for line in self.proc.stderr:  # type: ignore[union-attr]
                self.lines.append(line)
                if " on http://" in line:
                    ready.set()
            ready.set()

        threading.Thread(target=reader, daemon=True).start()
        if not ready.wait(180) or self.proc.poll() is not None:
            self.proc.kill()
            raise AssertionError("the server did not start:\n" + "".join(self.lines))
        self.url = next(x for x in self.lines if " on http://" in x).split(" on ")[1].split()[0]
        for _ in range(300):
            try:
                if httpx.get(f"{self.url}/v1/health", timeout=5).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.2)

    def post(self, path: str, body, timeout: float = 60, **headers: str) -> httpx.Response:
        data = body if isinstance(body, (bytes, str)) else json.dumps(body)
        return httpx.post(self.url + path, content=data, timeout=timeout,
                          headers={"content-type": "application/json", **AUTH, **headers})

    def stop(self, wait: float = 60) -> float:
        t0 = time.monotonic()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(wait)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
                return float("inf")
        return time.monotonic() - t0


@pytest.fixture(scope="module")
def plugins(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("hostile_plugins")
    (d / "hostile.py").write_text(HOSTILE)
    return d


@pytest.fixture(scope="module")
def server(plugins, tmp_path_factory):
    s = Server(["--rules", str(bundled_rules_path()), "--rules", str(plugins), "--request-timeout", "6",
                "--body-timeout", "2", "--body-deadline", "4", "--graceful-timeout", "5"],
               {"RULEKIT_SERVICE_TOKEN": TOKEN, "RULEKIT_RULE_TIMEOUT": "1",
                "TMPDIR": str(tmp_path_factory.mktemp("svc_tmp"))})
    yield s
    s.stop()


# ---- bombs first: they read the server's peak memory ---------------------------------------

def test_a_packed_dump_in_a_log_line_costs_its_cap(server):
    """58 KB of zlib (a 116 KB request) holding 60 MB of `[],[],...` in a log line: once
    1.5 GB of peak memory in the server, when such a line was unpacked; dumps now arrive
    only as records (bounded by the body's value cap), so the line is text."""
    text = b'{"entries":[' + b"[]," * 20_000_000 + b"[]]}"
    line = f"FR_DUMP v1 rank=0 {zlib.compress(text, 9).hex()}"
    body = {"job": JOB, "observations": [{"source": "flight_recorder", "format": "fr", "lines": [line]},
                                         *PAYLOAD["observations"]]}
    before = _vm(server.proc.pid)
    t0 = time.monotonic()
    r = server.post("/v1/attribute", body)
    took = time.monotonic() - t0
    grown = _vm(server.proc.pid) - before
    print(f"peak RSS growth {grown:.0f} MiB, {took:.1f} s")
    assert r.status_code == 200, r.text[:500]
    assert r.json()["outcome"] == "hardware"
    assert grown < 150, grown
    assert took < 20


def test_a_body_of_millions_of_tiny_values_is_refused_before_parsing(server):
    """A 60 MB body (under the 64 MiB limit) of 20 million empty lists in a dump: 413
    before pydantic builds them."""
    dump = b'{"entries":[' + b"[]," * 20_000_000 + b"[]]}"
    body = (b'{"job":' + json.dumps(JOB).encode() + b',"observations":[{"kind":"flight_recorder","rank":0,"dump":'
            + dump + b"}]}")
    before = _vm(server.proc.pid)
    r = server.post("/v1/attribute", body, timeout=120)
    grown = _vm(server.proc.pid) - before
    print(f"peak RSS growth {grown:.0f} MiB")
    assert r.status_code == 413 and r.json()["detail"][0]["type"] == "too_many_values", r.text[:300]
    assert grown < 200, grown


def test_a_trickling_body_ends_at_the_body_deadline(server):
    """One byte every second keeps each chunk within --body-timeout 2; --body-deadline 4 ends it."""
    host, port = server.url.split("//")[1].split(":")
    s = socket.create_connection((host, int(port)))
    t0 = time.monotonic()
    s.sendall(f"POST /v1/attribute HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              f"Authorization: Bearer {TOKEN}\r\nContent-Length: 100000\r\n\r\n".encode())
    got = b""
    s.settimeout(0.05)
    while time.monotonic() - t0 < 30 and b"\r\n\r\n" not in got:
        try:
            s.sendall(b" ")
        except OSError:
            pass
        try:
            got += s.recv(65536)
        except socket.timeout:
            pass
        except OSError:
            break
        time.sleep(1.0)
    s.close()
    assert b" 408 " in got.split(b"\r\n")[0], got[:200]
    assert time.monotonic() - t0 < 8


# ---- hostile rules ------------------------------------------------------------------------

def _job(what: str) -> dict:
    return dict(PAYLOAD, job=dict(JOB, id=what))


@pytest.mark.parametrize("what,words", [("exit", "sys.exit(3)"), ("print", "PLUGIN-NOISE"), ("loop", "time budget")])
def test_a_misbehaving_rule_is_a_rule_error_in_a_json_answer(server, what, words):
    t0 = time.monotonic()
    r = server.post("/v1/attribute", _job(what))
    assert r.status_code == 200, r.text[:300]
    d = r.json()
    assert d["outcome"] == "hardware"
    (err,) = [e for e in d["rule_errors"] if e["rule"] == "Hostile"]
    assert words in err["error"] and "hostile.py:" in err["where"]
    assert time.monotonic() - t0 < 20


def test_a_rule_blocked_in_c_is_abandoned_and_the_worker_keeps_answering(server):
    """time.sleep(3600) in a filter: the answer is a JSON 503 with an error id at the
    request deadline (6 s); meanwhile health answers at once, and an ordinary request too."""
    got: list[httpx.Response] = []
    t = threading.Thread(target=lambda: got.append(server.post("/v1/attribute", _job("snooze"))))
    t0 = time.monotonic()
    t.start()
    time.sleep(1.0)
    h0 = time.monotonic()
    assert httpx.get(f"{server.url}/v1/health", timeout=10).status_code == 200
    assert time.monotonic() - h0 < 2
    ok = server.post("/v1/attribute", PAYLOAD)
    assert ok.status_code == 200 and ok.json()["outcome"] == "hardware"
    t.join(60)
    r = got[0]
    assert r.status_code == 503 and r.headers["content-type"].startswith("application/json")
    body = r.json()
    assert len(body["error_id"]) == 16 and body["error_id"] in body["detail"][0]["msg"]
    assert 5 < time.monotonic() - t0 < 20


def test_security_headers_and_documents_behind_the_token(server):
    for path in ("/v1/health", "/v1/rules"):
        r = httpx.get(server.url + path, headers=AUTH, timeout=10)
        assert r.headers["x-content-type-options"] == "nosniff"
        assert "default-src 'none'" in r.headers["content-security-policy"]
        assert "frame-ancestors 'none'" in r.headers["content-security-policy"]
    assert httpx.get(server.url + "/redoc", headers=AUTH, timeout=10).status_code == 404  # not served: it needs a CDN
    for path in ("/docs", "/openapi.json"):
        r = httpx.get(server.url + path, timeout=10)
        assert r.status_code == 401 and r.json()["detail"][0]["type"] == "unauthorized", path
        r = httpx.get(server.url + path, headers=AUTH, timeout=10)
        assert r.status_code == 200, path
        assert r.headers["x-content-type-options"] == "nosniff"
    assert "script-src 'self'" in httpx.get(server.url + "/docs", headers=AUTH, timeout=10).headers[
        "content-security-policy"]
    r = server.post("/v1/attribute", "not json")  # error answers carry them too
    assert r.status_code == 400 and r.headers["x-content-type-options"] == "nosniff"


def test_names_have_a_length_limit(server):
    r = server.post("/v1/attribute", dict(PAYLOAD, job=dict(JOB, nodes=["n1", "n" * 1_000_000])))
    assert r.status_code == 422 and r.json()["detail"][0]["loc"][:3] == ["body", "job", "nodes"]


def test_shutdown_is_not_held_up_by_a_stuck_rule(server):
    """Last in the module: a SIGTERM with a rule still blocked in C ends the server within
    its graceful timeout, and the spool of open jobs is gone."""
    r = server.post("/v1/jobs", {"job": JOB})
    assert r.status_code == 201
    jid = r.json()["id"]
    assert server.post(f"/v1/jobs/{jid}/observations", {"observations": PAYLOAD["observations"]}).status_code == 200
    def stuck() -> None:
        try:
            server.post("/v1/attribute", _job("snooze"), timeout=30)
        except httpx.TransportError:
            pass  # the server went away, as asked

    threading.Thread(target=stuck, daemon=True).start()
    time.sleep(1.0)
    took = server.stop(wait=60)
    assert took < 5 + 10, took


def test_sigterm_removes_the_spool_of_open_jobs(tmp_path):
    rules = tmp_path / "R"
    rules.mkdir()
    (rules / "a.toml").write_text('[[symptom]]\nname = "FOO_FAULT"\noutcome = "hardware"\nsub_domain = "gpu"\n'
                                  'rank = 10\nblame = "node"\n[[extractor]]\nname = "Foo"\nauthor = "t"\n'
                                  "match_re = 'foo fault'\nemit = { type = \"bad_node\", symptom = \"FOO_FAULT\" }\n")
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    s = Server(["--rules", str(rules)], {"TMPDIR": str(tmp), "RULEKIT_SERVICE_TOKEN": TOKEN})
    try:
        jid = s.post("/v1/jobs", {"job": JOB}).json()["id"]
        assert s.post(f"/v1/jobs/{jid}/observations", {"observations": [
            {"source": "syslog", "node": "n1", "lines": ["foo fault: a secret line"]}]}).status_code == 200
        spools = list(tmp.glob("rulekit-jobs-*/*/spool.jsonl"))
        assert spools and b"secret" in spools[0].read_bytes()
    finally:
        s.stop()
    assert not list(tmp.glob("rulekit-jobs-*")), list(tmp.rglob("*"))
