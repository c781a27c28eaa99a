"""The toolkit commands end to end: exit codes (0 clean, 1 findings, 2 usage or
I/O error), `explain CODE` for every code, `-k`, `--update` round trips, and
never stopping at the first failure."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rulekit.cli import app
from rulekit.codes import CODES

ROOT = Path(__file__).resolve().parent.parent
FIX = ROOT / "tests" / "fixtures" / "every_check"


def run(*args: str) -> tuple[int, str, str]:
    res = CliRunner().invoke(app, list(args))
    if res.exception and not isinstance(res.exception, SystemExit):
        raise res.exception
    return res.exit_code, res.stdout, res.stderr


CLEAN = """author = "me"
[[symptom]]
name = "S"
outcome = "hardware"
sub_domain = "gpu"
rank = 10
blame = "node"
[[extractor]]
name = "R"
match_re = 'distinctive failure text'
emit = { type = "bad_node", symptom = "S" }
[[extractor.test]]
line = "a distinctive failure text here"
symptom = "S"
[[extractor.test]]
line = "distinctive text"
expect = "nothing"
"""


@pytest.fixture
def clean(tmp_path: Path) -> Path:
    d = tmp_path / "rules"
    d.mkdir()
    (d / "r.toml").write_text(CLEAN)
    return d


# ---- exit codes ----------------------------------------------------------------------------

def test_check_exit_codes(clean):
    assert run("check", str(clean))[0] == 0
    assert run("check", str(FIX / "check"))[0] == 1
    assert run("check", str(FIX / "empty"))[0] == 1  # RK005 is a warning
    code, _, err = run("check", str(clean / "nope"))
    assert code == 2 and "no such file" in err
    code, _, err = run("check", str(clean), "--format", "xml")
    assert code == 2 and "unknown format" in err


def test_check_writes_output_file(clean, tmp_path):
    out = tmp_path / "o.sarif"
    assert run("check", str(FIX / "check"), "-f", "sarif", "-o", str(out))[0] == 1
    assert json.loads(out.read_text())["version"] == "2.1.0"
    assert run("check", str(clean), "-o", str(tmp_path / "no" / "such" / "dir.txt"))[0] == 2


def test_warning_only_corpus_is_a_finding_and_suppression_clears_it(tmp_path):
    d = tmp_path / "rules"
    d.mkdir()
    extra = '[[symptom]]\nname = "UNUSED"\noutcome = "hardware"\nsub_domain = "gpu"\nrank = 1\nblame = "node"\n'
    (d / "r.toml").write_text(CLEAN + extra)
    code, out, _ = run("check", str(d))
    assert code == 1 and "RK205" in out
    (d / "r.toml").write_text(CLEAN + extra.replace('name = "UNUSED"', 'name = "UNUSED"  # rulekit: ignore[unused-symptom]'))
    assert run("check", str(d))[0] == 0


def test_lint_exit_codes(clean, tmp_path):
    assert run("lint", str(clean), "--no-cost")[0] == 0
    assert run("lint", str(FIX / "lint"), "--sample", str(FIX / "benign.log"), "--no-cost")[0] == 1
    assert run("lint", str(FIX / "check"))[0] == 2  # does not load
    assert run("lint", str(clean), "--sample", str(tmp_path / "missing.log"))[0] == 2
    code, _, err = run("lint", str(clean), "--config", str(FIX / "bad_settings.toml"))
    assert code == 2 and "RK109" in err


def test_test_exit_codes(clean):
    assert run("test", str(clean))[0] == 0
    assert run("test", str(FIX / "lint"))[0] == 1
    assert run("test", str(FIX / "check"))[0] == 2
    assert run("test", str(clean), "--format", "sarif")[0] == 2


# ---- explain ----------------------------------------------------------------------------------

@pytest.mark.parametrize("code", sorted(CODES))
def test_explain_every_code(code):
    rc, out, _ = run("explain", code)
    c = CODES[code]
    assert rc == 0 and out.startswith(f"{code} {c.name}") and c.doc.splitlines()[0] in out


def test_explain_by_name_and_json():
    rc, out, _ = run("explain", "shadowed-pattern", "--format", "json")
    assert rc == 0 and json.loads(out)["code"] == "RK307"


def test_explain_usage_errors():
    assert run("explain", "RK999")[0] == 2
    ex = str(FIX / "examples" / "gpu-lost")
    rules = str(FIX / "lint")
    assert run("explain", ex, "--rules", rules, "--line", "syslog/node-02.log")[0] == 2
    assert run("explain", ex, "--rules", rules, "--line", "syslog/node-02.log:99")[0] == 2
    assert run("explain", ex, "--rules", rules, "--line", "applog/none.log:1")[0] == 2
    assert run("explain", ex, "--rules", rules, "--rule", "NoSuchRule")[0] == 2


def test_explain_rule_filter_and_line_json():
    ex = str(FIX / "examples" / "gpu-lost")
    rc, out, _ = run("explain", ex, "--rules", str(FIX / "lint"), "--line", "syslog/node-02.log:1",
                     "--rule", "GpuErrorGeneric", "--format", "json")
    d = json.loads(out)
    assert rc == 0 and [m["rule"] for m in d["matches"]] == ["GpuErrorGeneric"]
    assert d["matches"][0]["emit"]["symptom"] == "GPU_ERROR"


def test_explain_bundled_example_names_the_cascade():
    rc, out, _ = run("explain", str(ROOT / "examples" / "xid149-nvlink"))
    assert rc == 0
    assert "XID-149-NVLINK_SIGNAL_INTEGRITY" in out and "demote by" in out and "highest rank" in out


# ---- test: selection, never stopping, update ------------------------------------------------

def test_k_selects_cases():
    rc, out, _ = run("test", str(FIX / "lint"), "-k", "GpuFallenOff", "--format", "json")
    d = json.loads(out)
    assert rc == 0 and d["summary"] == {"passed": 2, "failed": 0, "error": 0, "skipped": 0}
    assert {r["rule"] for r in d["results"]} == {"GpuFallenOff"}


def test_never_stops_at_the_first_failure():
    _, out, _ = run("test", str(FIX / "lint"), "--format", "json")
    d = json.loads(out)
    statuses = [r["status"] for r in d["results"]]
    assert statuses.count("failed") == 2 and statuses.count("error") == 1 and statuses.count("passed") == 10
    failed = [r for r in d["results"] if r["status"] == "failed"]
    assert all(r["file"] and r["line"] for r in failed)


def test_update_rewrites_expectations_and_keeps_comments(tmp_path):
    root = tmp_path / "repo"
    shutil.copytree(FIX, root, ignore=shutil.ignore_patterns("check", "broken-expected"))
    rules = root / "lint"
    # make the example fail too: expect the wrong root node
    exp = root / "examples" / "gpu-lost" / "expected.json"
    exp.write_text(exp.read_text().replace('"root_node": "node-02"', '"root_node": "node-01"'))
    assert run("test", str(rules))[0] == 1
    rc, _, err = run("test", str(rules), "--update")
    assert rc == 0, err
    assert "updated" in err
    rc, out, _ = run("test", str(rules))
    assert rc == 0, out
    text = (rules / "jobs.test.toml").read_text()
    assert 'outcome = "network"' in text and "# actual: network" in text  # comment kept
    assert 'symptom = "GPU_ERROR"' in (rules / "rules.toml").read_text()
    assert json.loads(exp.read_text())["root_node"] == "node-02"


def test_update_line_test_that_no_longer_matches(tmp_path):
    d = tmp_path / "rules"
    d.mkdir()
    (d / "r.toml").write_text(CLEAN.replace('line = "a distinctive failure text here"', 'line = "no longer matching"'))
    assert run("test", str(d))[0] == 1
    assert run("test", str(d), "--update")[0] == 0
    text = (d / "r.toml").read_text()
    assert text.count('expect = "nothing"') == 2 and 'symptom = "S"' not in text.split("[[extractor.test]]")[1]
    assert run("test", str(d))[0] == 0


def test_junit_names_file_and_line(tmp_path):
    import xml.etree.ElementTree as ET

    out = tmp_path / "j.xml"
    run("test", str(FIX / "lint"), "--junit-xml", str(out))
    cases = ET.parse(out).getroot().iter("testcase")
    failed = [c for c in cases if c.find("failure") is not None]
    assert len(failed) == 2 and all(c.get("file") and c.get("line") for c in failed)
    assert "expected (-) vs actual (+)" in failed[0].find("failure").text


def test_coverage_report_in_json():
    _, out, _ = run("test", str(FIX / "lint"), "--coverage", "--format", "json")
    codes = {d["code"] for d in json.loads(out)["coverage"]}
    assert {"RK402", "RK403", "RK404", "RK406"} <= codes


def test_pre_commit_hooks_name_real_commands():
    """`.pre-commit-hooks.yaml` offers check, test and lint, each an existing command
    that runs once on the whole corpus (flat YAML: read line by line, no yaml dependency)."""
    text = (ROOT / ".pre-commit-hooks.yaml").read_text()
    hooks: list[dict[str, str]] = []
    for ln in text.splitlines():
        if ln.startswith("- id:"):
            hooks.append({"id": ln.split(":", 1)[1].strip()})
        elif ln.startswith("  ") and ":" in ln and hooks:
            k, v = ln.strip().split(":", 1)
            hooks[-1][k] = v.strip()
    assert [h["id"] for h in hooks] == ["rulekit-check", "rulekit-test", "rulekit-lint"]
    commands = {c.name or c.callback.__name__ for c in app.registered_commands}
    for h in hooks:
        prog, cmd, *args = h["entry"].split()
        assert prog == "rulekit" and cmd in commands and h["pass_filenames"] == "false"
        assert h["language"] == "python"
        rc, _, err = run(cmd, *args, "--help")
        assert rc == 0, err


DSL = '''author "me"
symptom "S" { outcome hardware sub_domain gpu rank 10 blame node }
symptom "T" { outcome hardware sub_domain gpu rank 5 blame node }
extractor R {
  match /distinctive (?P<x>\\w+) text/
  emit bad_node "S"
  # the first test expects the wrong symptom and capture
  test "a distinctive foo text" => bad_node "T" captures { x = "bar" }
  test "distinctive text" => nothing
  test "a distinctive zed text" with { source = "applog" } => nothing
}
family Fa { match /x ${s}/ emit bad_node "${sym}" member M { s = "a b" sym = "S" test "x a b" => nothing } }
'''


def test_update_rewrites_dsl_test_clauses(tmp_path):
    d = tmp_path / "rules"
    d.mkdir()
    (d / "r.rule").write_text(DSL)
    code, out, _ = run("test", str(d))
    assert code == 1 and "3 failed" in out
    assert run("test", str(d), "--update")[0] == 0
    text = (d / "r.rule").read_text()
    assert 'test "a distinctive foo text" => bad_node "S" captures { x = "foo" }' in text
    assert 'with { source = "applog" } => bad_node "S"' in text
    assert 'test "x a b" => bad_node "S" } }' in text
    assert "# the first test expects" in text
    assert run("test", str(d))[0] == 0


def test_update_rewrites_dsl_job_case(tmp_path):
    d = tmp_path / "rules"
    d.mkdir()
    case = '''
# a job case whose expectation is out of date
case "gpu lost" {
  job { id = "t1", state = "FAILED", nodes = ["node-01"] }
  observe applog { "a distinctive foo text" }
  expect { outcome = "network", root_cause = "T", bad_nodes = ["node-09"] }
}
'''
    (d / "r.rule").write_text(DSL + case)
    assert run("test", str(d), "-k", "job")[0] == 1
    assert run("test", str(d), "--update")[0] == 0
    text = (d / "r.rule").read_text()
    assert 'expect { outcome = "hardware", root_cause = "S", bad_nodes = ["node-01"] }' in text
    assert "# a job case whose expectation is out of date" in text
    assert run("test", str(d))[0] == 0
