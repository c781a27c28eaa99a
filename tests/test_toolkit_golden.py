"""Golden outputs of the toolkit commands in every format, on the fixtures.

Run with RULEKIT_UPDATE_GOLDEN=1 to rewrite tests/golden/ from the current
output (then review the diff).  The SARIF logs are also validated against the
official SARIF 2.1.0 schema (tests/data/sarif-schema-2.1.0.json, OASIS errata01).
"""
from __future__ import annotations

import json
import os
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rulekit.cli import app

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = Path(__file__).parent / "golden"
FIX = "tests/fixtures/every_check"
UPDATE = os.environ.get("RULEKIT_UPDATE_GOLDEN") == "1"

# the fixtures are corpora of their own: `--no-bundled`, so the bundled rules' changes do not move these
LINT = ["lint", "--no-bundled", f"{FIX}/lint", "--sample", f"{FIX}/benign.log", "--no-cost"]
CASES = {
    "check.txt": (["check", "--no-bundled", f"{FIX}/check"], 1),
    "check.json": (["check", "--no-bundled", f"{FIX}/check", "--format", "json"], 1),
    "check.sarif": (["check", "--no-bundled", f"{FIX}/check", "--format", "sarif"], 1),
    "check.github": (["check", "--no-bundled", f"{FIX}/check", "--format", "github"], 1),
    "lint.txt": (LINT, 1),
    "lint.json": (LINT + ["--format", "json"], 1),
    "lint.sarif": (LINT + ["--format", "sarif"], 1),
    "lint.github": (LINT + ["--format", "github"], 1),
    "test.txt": (["test", "--no-bundled", f"{FIX}/lint", "--coverage"], 1),
    "test.json": (["test", "--no-bundled", f"{FIX}/lint", "--format", "json"], 1),
    "explain_job.txt": (["explain", f"{FIX}/examples/gpu-lost", "--no-bundled", "--rules", f"{FIX}/lint"], 0),
    "explain_job.json": (["explain", f"{FIX}/examples/gpu-lost", "--no-bundled", "--rules", f"{FIX}/lint", "--format", "json"], 0),
    "explain_line.txt": (["explain", f"{FIX}/examples/gpu-lost", "--no-bundled", "--rules", f"{FIX}/lint",
                          "--line", "syslog/node-02.log:1"], 0),
    "explain_code.txt": (["explain", "RK307"], 0),
}


def _normalize(text: str) -> str:
    return re.sub(r'"semanticVersion": "[^"]*"', '"semanticVersion": "X"', text)


def run(args, monkeypatch) -> tuple[int, str]:
    monkeypatch.chdir(ROOT)
    res = CliRunner().invoke(app, args)
    if res.exception and not isinstance(res.exception, SystemExit):
        raise res.exception
    return res.exit_code, res.stdout


def compare(name: str, text: str) -> None:
    path = GOLDEN / name
    text = _normalize(text)
    if UPDATE or not path.exists():
        if not UPDATE:
            pytest.fail(f"no golden file {path}; run with RULEKIT_UPDATE_GOLDEN=1 to create it")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, "utf-8")
        return
    assert text == path.read_text("utf-8"), f"output differs from {path} (RULEKIT_UPDATE_GOLDEN=1 to accept)"


@pytest.mark.parametrize("name", sorted(CASES))
def test_golden(name, monkeypatch):
    args, code = CASES[name]
    got, out = run(args, monkeypatch)
    assert got == code, out
    compare(name, out)


def test_junit_golden(monkeypatch, tmp_path):
    got, _ = run(["test", "--no-bundled", f"{FIX}/lint", "--junit-xml", str(tmp_path / "j.xml")], monkeypatch)
    assert got == 1
    xml = (tmp_path / "j.xml").read_text()
    root = ET.fromstring(xml)
    suite = root.find("testsuite")
    assert suite is not None and suite.get("failures") == "2" and suite.get("errors") == "1"
    compare("test.junit.xml", xml)


@pytest.fixture(scope="module")
def sarif_schema():
    return json.loads((Path(__file__).parent / "data" / "sarif-schema-2.1.0.json").read_text())


@pytest.mark.parametrize("args", [CASES["check.sarif"][0], CASES["lint.sarif"][0], ["check", "bundled_rules", "-f", "sarif"]])
def test_sarif_is_valid(args, monkeypatch, sarif_schema):
    import jsonschema

    _, out = run(args, monkeypatch)
    log = json.loads(out)
    jsonschema.Draft4Validator(sarif_schema).validate(log)
    run0 = log["runs"][0]
    ids = [r["id"] for r in run0["tool"]["driver"]["rules"]]
    for res in run0["results"]:
        assert ids[res["ruleIndex"]] == res["ruleId"]


def test_sarif_schema_rejects_a_broken_log(sarif_schema):
    import jsonschema

    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft4Validator(sarif_schema).validate({"version": "2.1.0", "runs": [{"results": []}]})


def test_github_annotations_are_one_line_each(monkeypatch):
    _, out = run(CASES["check.github"][0], monkeypatch)
    lines = out.strip().splitlines()
    assert lines and all(re.match(r"^::(error|warning|notice) file=[^,]+,line=\d+,col=\d+,endLine=\d+,endColumn=\d+,"
                                  r"title=RK\d{3} [a-z0-9-]+::", ln) for ln in lines), lines
