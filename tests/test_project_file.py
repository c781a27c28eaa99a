"""A team's rule repository (tests/fixtures/team_repo: `rulekit.toml`, `rules/`,
`examples/`, a Blueprint config): its rules go on top of the bundled ones by default,
`--no-bundled` replaces them, and the command line, the language server, the Service,
the Blueprint and the library all read the same corpus from the project file."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from rulekit.diagnostics import RulekitError
from rulekit.rules.loader import bundled_rules_path
from rulekit.rules.project import NoRules, choose_corpus, find_project_file, read_project

REPO = Path(__file__).resolve().parent.parent
TEAM = REPO / "tests" / "fixtures" / "team_repo"
TEAM_RULE, BUNDLED_RULE = "NhcGpuCheckFailed", "NcclWatchdogTimeout"


@pytest.fixture()
def team(tmp_path: Path) -> Path:
    shutil.copytree(TEAM, tmp_path / "team")
    return tmp_path / "team"


def rk(*args: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rulekit", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout)


# ---- the one reader ------------------------------------------------------------------------------

def test_the_project_file_is_found_from_a_subfolder_and_names_the_corpus(team):
    f = find_project_file(team / "examples" / "nhc-gpu-missing")
    assert f == (team / "rulekit.toml").resolve()
    choice = choose_corpus(start=team / "examples")
    assert [Path(p).resolve() for p in choice.paths] == [bundled_rules_path().resolve(), (team / "rules").resolve()]
    assert choice.bundled and choice.owns(team / "rules" / "nhc.toml")
    assert not choice.owns(bundled_rules_path() / "nccl.toml")
    assert choice.project.analysis == {"lint": {"broad_rate": 0.002}}


def test_pyproject_tool_table_counts_and_plain_pyproject_does_not(tmp_path):
    (tmp_path / "rules").mkdir()
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n')
    assert find_project_file(tmp_path) is None
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n\n[tool.rulekit]\nrules = ["rules"]\nbundled = false\n')
    p = read_project(find_project_file(tmp_path))
    assert p.rules == ((tmp_path / "rules").resolve(),) and p.bundled is False
    choice = choose_corpus(start=tmp_path)
    assert not choice.bundled and [Path(x).resolve() for x in choice.paths] == [(tmp_path / "rules").resolve()]


def test_no_bundled_without_rules_is_refused():
    with pytest.raises(NoRules):
        choose_corpus(bundled=False, find=False)


def test_naming_the_bundled_folder_is_the_bundled_corpus():
    choice = choose_corpus([bundled_rules_path()], find=False)
    assert choice.own == () and choice.bundled and len(choice.paths) == 1


def test_a_bad_project_file_is_located_with_a_suggestion(tmp_path):
    (tmp_path / "rulekit.toml").write_text('# team rules\nrule = ["rules"]\nbundled = "yes"\nexamples = ["nope"]\n')
    with pytest.raises(RulekitError) as e:
        read_project(tmp_path / "rulekit.toml")
    got = {(d.code, d.span.line, d.span.col): d.message for d in e.value.diagnostics}
    assert "did you mean `rules`?" in got[("RK008", 2, 1)]
    assert "must be true or false" in got[("RK008", 3, 1)]
    assert "'nope', which does not exist" in got[("RK008", 4, 14)]
    p = rk("check", cwd=tmp_path)
    assert p.returncode == 2 and "rulekit.toml:2:1: error RK008" in p.stderr and "Traceback" not in p.stderr


# ---- the command line ------------------------------------------------------------------------------

def test_check_and_test_read_the_project_and_report_only_the_teams_files(team):
    p = rk("check", cwd=team)
    assert p.returncode == 0 and p.stdout.strip() == "no problems found", p.stdout + p.stderr
    p = rk("test", "--format", "json", cwd=team)
    assert p.returncode == 0, p.stdout + p.stderr
    doc = json.loads(p.stdout)
    files = {Path(r["file"]).name for r in doc["results"]}
    assert files == {"nhc.toml", "jobs.test.toml", "expected.json"}  # the bundled tests are not the team's
    assert doc["summary"] == {"passed": 4, "failed": 0, "error": 0, "skipped": 0}


def test_own_rules_add_to_the_bundled_corpus_and_no_bundled_replaces_it(team):
    job = str(team / "examples" / "nhc-gpu-missing")
    for args, cwd in ((["attribute", job], team), (["attribute", "--rules", str(team / "rules"), job], team.parent)):
        p = rk(*args, "--format", "json", "--trace", cwd=cwd)
        assert p.returncode == 0, p.stderr
        (r,) = json.loads(p.stdout)
        assert r["root_cause"]["symptom"] == "NHC_GPU_CHECK_FAILED" and r["bad_nodes"][0]["node"] == "node-02"
        rules = {e["rule"] for e in r["evidence"]}
        assert TEAM_RULE in rules and BUNDLED_RULE in rules  # the team's rule and the bundled ones
    p = rk("attribute", "--no-bundled", job, "--format", "json", cwd=team)
    (r,) = json.loads(p.stdout)
    assert r["root_cause"]["symptom"] == "NHC_GPU_CHECK_FAILED"
    assert {e["rule"] for e in r["evidence"]} == {TEAM_RULE}  # no bundled rule read the NCCL lines


def test_lint_reports_the_teams_rules_only_and_reads_the_projects_thresholds(team):
    rules = team / "rules" / "nhc.toml"
    # a rule as broad as "every line with `error`" is the team's finding (RK305), not the bundled corpus's
    rules.write_text(rules.read_text() + '''
[[extractor]]
name = "AnyError"
source = "syslog"
match_re = '(?i)error'
emit = { type = "interesting_node", symptom = "NHC_GPU_CHECK_FAILED" }
[[extractor.test]]
line = "kernel: some error"
[[extractor.test]]
line = "all good"
expect = "nothing"
''')
    p = rk("lint", "--no-cost", "--format", "json", cwd=team, timeout=900)
    assert p.returncode == 1, p.stderr
    diags = json.loads(p.stdout)["diagnostics"]
    assert diags and all(Path(d["span"]["file"]).name == "nhc.toml" for d in diags), diags
    assert any(d["code"] == "RK305" and "AnyError" in d["message"] for d in diags)


# ---- the library ---------------------------------------------------------------------------------

def test_setup_rules_reads_the_project_when_asked(team):
    code = ("from rulekit import setup_rules\n"
            "e = setup_rules(project=True)\n"
            f"print({TEAM_RULE!r} in e.by_name, {BUNDLED_RULE!r} in e.by_name)\n"
            "e = setup_rules(['rules'], force=True)\n"
            f"print({TEAM_RULE!r} in e.by_name, {BUNDLED_RULE!r} in e.by_name)\n")
    p = subprocess.run([sys.executable, "-c", code], cwd=team, capture_output=True, text=True, timeout=300)
    assert p.stdout.split("\n")[:2] == ["True True", "True False"], p.stderr


# ---- the language server -------------------------------------------------------------------------

def test_the_language_server_reads_the_same_corpus(team):
    from rulekit_lsp.settings import Settings
    from rulekit_lsp.workspace import Workspace

    extra = team / "rules" / "extra.toml"  # a team rule that emits a bundled symptom
    extra.write_text("[[extractor]]\nname = \"TeamWatchdog\"\nmatch_re = 'team watchdog fired'\n"
                     'emit = { type = "interesting_node", symptom = "NCCL_WATCHDOG_TIMEOUT" }\n'
                     '[[extractor.test]]\nline = "team watchdog fired"\n[[extractor.test]]\nline = "x"\n'
                     'expect = "nothing"\n')
    (team / "scratch").mkdir()  # a folder of rule files the project file does not name
    (team / "scratch" / "tmp.toml").write_text('[[symptom]]\nname = "SCRATCH"\noutcome = "hardware"\n'
                                                'sub_domain = "gpu"\nrank = 1\nblame = "node"\n')
    w = Workspace()
    w.configure([str(team)])
    (c,) = w.corpora
    assert c.folders == [str((team / "rules").resolve())]
    assert c.context_folders == [str(bundled_rules_path().resolve())]
    by_file = c.diagnostics_by_file()
    assert set(by_file) == {str((team / "rules" / f).resolve()) for f in ("nhc.toml", "jobs.test.toml", "extra.toml")}
    assert all(not ds for ds in by_file.values()), by_file  # NCCL_WATCHDOG_TIMEOUT is known: bundled underneath
    job = c.test_job(jobs=True)
    assert {r.name for r in job.rules} == {TEAM_RULE, "TeamWatchdog"} and len(job.cases) == 1
    # a bundled symptom is found (definition in the bundled rules) but not renamed from a team's workspace
    from rulekit_lsp.features import navigation

    col = extra.read_text().split("\n")[3].index("NCCL_WATCHDOG_TIMEOUT") + 2
    (where,) = navigation.definition(c, str(extra), 4, col)
    assert Path(where.file).parent == bundled_rules_path().resolve()
    assert "not edited from here" in navigation.rename(c, str(extra), 4, col, "NCCL_WATCHDOG_TIMEOUT_X")
    # the editor setting wins over the project file: alone, the bundled symptom is unregistered
    w2 = Workspace(Settings(bundled=False))
    w2.configure([str(team)])
    (c2,) = w2.corpora
    assert c2.context_folders == []
    assert [d.code for d in c2.diagnostics_by_file()[str(extra.resolve())]] == ["RK203"]


def test_the_language_server_shows_the_project_files_problems(team):
    from rulekit_lsp.workspace import Workspace

    (team / "rulekit.toml").write_text('rules = ["rules"]\nbundld = false\n')
    w = Workspace()
    w.configure([str(team)])
    (d,) = w.project_problems
    assert d.code == "RK008" and d.span.line == 2 and "did you mean `bundled`?" in d.message


# ---- the Service and the Blueprint -------------------------------------------------------------------

def test_the_service_serves_the_projects_corpus(team):
    proc = subprocess.Popen([sys.executable, "-m", "rulekit", "serve", "--port", "0", "--no-access-log"], cwd=team,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        url = None
        deadline = time.monotonic() + 240
        while url is None and time.monotonic() < deadline:
            line = proc.stderr.readline()
            if not line:
                raise AssertionError(f"the Service ended: {proc.wait(10)}")
            if line.startswith("rulekit serving"):
                url = line.split(" on ", 1)[1].split(" with ", 1)[0]
        assert url, "the Service did not start"
        for _ in range(100):  # the URL is printed once the port is bound, a moment before it answers
            try:
                urllib.request.urlopen(url + "/v1/health", timeout=5).read()
                break
            except OSError:
                time.sleep(0.1)
        names = {r["name"] for r in json.load(urllib.request.urlopen(url + "/v1/rules", timeout=30))}
        assert TEAM_RULE in names and BUNDLED_RULE in names
        body = json.dumps({"job": {"id": "j", "state": "FAILED", "nodes": ["node-01", "node-02"], "tasks_per_node": 8},
                           "observations": [{"source": "syslog", "node": "node-02", "lines": [
                               "Jun  1 03:12:41 node-02 nhc[2211]: ERROR:  nhc:  Health check failed:  check_hw_gpu:  x"]}]})
        req = urllib.request.Request(url + "/v1/attribute", data=body.encode(), method="POST",
                                     headers={"content-type": "application/json"})
        r = json.load(urllib.request.urlopen(req, timeout=60))
        assert r["root_cause"]["symptom"] == "NHC_GPU_CHECK_FAILED"
    finally:
        proc.terminate()
        proc.wait(30)


def test_the_blueprint_reads_the_projects_corpus(team):
    p = rk("blueprint", "run", "--configs", "blueprint", "--output", "stdout", "--quiet", cwd=team)
    assert p.returncode == 0, p.stderr
    (line,) = p.stdout.splitlines()
    v = json.loads(line)["verdict"]
    assert v["root_cause"]["symptom"] == "NHC_GPU_CHECK_FAILED"
    assert BUNDLED_RULE in {e["rule"] for e in v["evidence"]}
    p = rk("blueprint", "run", "--configs", "blueprint", "--output", "stdout", "--quiet", "--no-bundled", cwd=team)
    v = json.loads(p.stdout.splitlines()[0])["verdict"]
    assert {e["rule"] for e in v["evidence"]} == {TEAM_RULE}


def test_the_docs_show_this_layout():
    text = (REPO / "docs" / "rule-authoring.md").read_text("utf-8")
    assert "## A rule repository" in text
    for f in ("rulekit.toml", "rules/", "examples/", "[tool.rulekit]", "--no-bundled"):
        assert f in text, f
    assert os.path.exists(TEAM / "rulekit.toml")
