"""The Service path: JSON payload -> verdict, as a pure function and over real HTTP."""
from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request

import pytest

from rulekit.cli.serve import make_server
from rulekit.service.payload import PayloadError, attribute_payload

XID79 = "[ 5120.118843] NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."
PAYLOAD = {"job": {"id": "svc-1", "state": "FAILED", "nodes": ["n1", "n2"], "tasks_per_node": 8},
           "observations": [{"source": "syslog", "node": "n2", "lines": [XID79]}]}


def test_payload_to_verdict(bundled):
    r = attribute_payload(bundled, PAYLOAD)
    assert r["outcome"] == "hardware" and r["root_cause"]["node"] == "n2"
    assert r["root_cause"]["symptom"].startswith("XID-79-")


@pytest.mark.parametrize("payload, words", [
    ([], "JSON object"), ({"job": {}}, "`id`"), ({"job": {"id": "1", "nodes": "n1"}}, "list of node names"),
    ({"job": {"id": "1"}, "observations": [{"lines": []}]}, "`source`"),
    ({"job": {"id": "1", "execution_cancellation": {"record_id": "2", "cancelled_by": "x",
                                                    "source_time": "2026-01-01T00:00:00Z"}}}, "not '1'"),
])
def test_bad_payloads_say_which_field(bundled, payload, words):
    with pytest.raises(PayloadError) as exc:
        attribute_payload(bundled, payload)
    assert words in str(exc.value)


def test_http_endpoints(bundled):
    server = make_server(bundled, "127.0.0.1", 0)
    port = server.server_address[1]
    t = threading.Thread(target=server.serve_forever, daemon=True)
    t.start()
    try:
        base = f"http://127.0.0.1:{port}"
        health = json.load(urllib.request.urlopen(f"{base}/v1/health", timeout=10))
        assert health["status"] == "ok" and health["rules"] == len(bundled.rules)
        req = urllib.request.Request(f"{base}/v1/attribute", data=json.dumps(PAYLOAD).encode(),
                                     headers={"Content-Type": "application/json"})
        r = json.load(urllib.request.urlopen(req, timeout=30))
        assert r["outcome"] == "hardware"
        bad = urllib.request.Request(f"{base}/v1/attribute", data=b"{not json", headers={"Content-Type": "application/json"})
        with pytest.raises(urllib.error.HTTPError) as exc:
            urllib.request.urlopen(bad, timeout=10)
        assert exc.value.code == 400 and "not JSON" in json.load(exc.value)["error"]
        symptoms = json.load(urllib.request.urlopen(f"{base}/v1/symptoms", timeout=10))
        assert any(s["name"] == "NVRX_INJECTED_FAULT" for s in symptoms)
    finally:
        server.shutdown()
        server.server_close()
