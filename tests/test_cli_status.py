"""The CLI's edge: one ExitStatus for every command, one `load_engine_or_exit()`,
a bug reported as one line "internal error (a bug)" (the traceback only under
`--traceback`), and engine options read from the environment once, at the edge,
with the variables behaving as before."""
from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rulekit.cli import app
from rulekit.cli.status import ExitStatus
from rulekit.config import EngineOptions
from rulekit.extract.scan import NaiveScanner
from rulekit.rules.loader import load_corpus

REPO = Path(__file__).resolve().parent.parent
CLI = REPO / "rulekit" / "cli"
BROKEN = {"bad.toml": '[[extractor]]\nname = "X"\nauthor = "t"\nmatch_re = "x"\nemit = { type = "bad_node", symptom = "NOPE" }\n'}


def run(args):
    return CliRunner().invoke(app, [str(a) for a in args])


def test_exit_status_values_are_the_documented_ones():
    assert [(s.name, int(s)) for s in ExitStatus] == [("OK", 0), ("FINDINGS", 1), ("USAGE", 2), ("INTERNAL", 3)]


def test_no_command_exits_with_a_bare_number():
    """Every `typer.Exit(...)` under rulekit/cli/ names an ExitStatus (or a value computed from one)."""
    bare = []
    for f in sorted(CLI.glob("*.py")):
        for node in ast.walk(ast.parse(f.read_text())):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "Exit"
                    and node.args and isinstance(node.args[0], ast.Constant)):
                bare.append(f"{f.name}:{node.lineno}")
    assert not bare, bare


def test_an_unexpected_exception_is_one_line_and_exit_internal(monkeypatch):
    import rulekit.cli.check as check_mod

    def boom(*a, **k):
        raise RuntimeError("boom\nsecond line")

    monkeypatch.setattr(check_mod, "check_paths", boom)
    res = run(["check"])
    assert res.exit_code == ExitStatus.INTERNAL
    lines = res.stderr.strip().splitlines()
    assert lines == ["rulekit: internal error (a bug): RuntimeError: boom (run with --traceback for the details)"]
    assert "Traceback" not in res.output


def test_traceback_flag_prints_the_traceback(monkeypatch):
    import rulekit.cli.check as check_mod

    monkeypatch.setattr(check_mod, "check_paths", lambda *a, **k: {}["missing"])
    res = run(["--traceback", "check"])
    assert res.exit_code == ExitStatus.INTERNAL
    assert "Traceback (most recent call last)" in res.stderr
    assert res.stderr.strip().splitlines()[-1] == "rulekit: internal error (a bug): KeyError: 'missing'"


def test_usage_errors_are_not_internal_errors(tmp_path):
    assert run(["check", tmp_path / "absent"]).exit_code == ExitStatus.USAGE
    assert run(["check", "--format", "yaml"]).exit_code == ExitStatus.USAGE
    assert run(["no-such-command"]).exit_code == ExitStatus.USAGE  # click's own usage error


@pytest.mark.parametrize("cmd", [["attribute", "JOB"], ["test"], ["lint", "--no-cost"], ["explain", "JOB"]])
def test_a_corpus_that_does_not_load_exits_usage_with_its_errors(make_corpus, cmd):
    root = make_corpus(BROKEN)
    job = REPO / "examples" / "cuda-oom"
    args = [job if a == "JOB" else a for a in cmd]
    if cmd[0] in ("test", "lint"):
        args.append(root)
    else:
        args += ["--rules", root]
    res = run(args)
    assert res.exit_code == ExitStatus.USAGE, res.output
    assert "RK203" in res.stderr and "bad.toml:5" in res.stderr
    if cmd[0] == "lint":
        assert "run `rulekit check` first" in res.stderr


def test_diff_names_the_revision_whose_rules_do_not_load(make_corpus):
    root = make_corpus(BROKEN)
    res = run(["diff", root, "--jobs", REPO / "examples" / "cuda-oom"])
    assert res.exit_code == ExitStatus.USAGE
    assert "do not load:" in res.stderr and "RK203" in res.stderr


# ---- engine options ------------------------------------------------------------------------

def test_options_from_env_keep_the_variables_meaning(tmp_path):
    home = str(tmp_path / "home")
    o = EngineOptions.from_env({"HOME": home})
    assert o.scanner == "auto" and o.plugin_timeout == 10.0
    assert EngineOptions.from_env({"XDG_CACHE_HOME": str(tmp_path)}).cache_dir == tmp_path / "rulekit"
    assert EngineOptions.from_env({"RULEKIT_CACHE_DIR": str(tmp_path / "c")}).cache_dir == tmp_path / "c"
    assert EngineOptions.from_env({"RULEKIT_CACHE_DIR": ""}).cache_dir is None  # empty disables
    assert EngineOptions.from_env({"RULEKIT_SCANNER": " NAIVE "}).scanner == "naive"
    assert EngineOptions.from_env({"RULEKIT_SCANNER": ""}).scanner == "auto"
    for raw, want in (("2.5", 2.5), ("0", 10.0), ("-1", 10.0), ("soon", 10.0), ("", 10.0)):
        assert EngineOptions.from_env({"RULEKIT_PLUGIN_TIMEOUT": raw}).plugin_timeout == want, raw
    # defaults are the engine's historical constants
    assert (o.buffer_size, o.spill_rows, o.spill_bytes, o.repeat_cap, o.evidence_per_key, o.evidence_max) == \
        (2000, 250_000, 8 << 20, 32, 3, 400)
    assert o.group_cap == 256 and o.scan_workers is None  # automatic
    for raw, want in (("0", 0), ("2", 2), (" 3 ", 3), ("-1", None), ("many", None), ("", None)):
        assert EngineOptions.from_env({"RULEKIT_SCAN_WORKERS": raw}).scan_workers == want, raw


def test_the_environment_still_reaches_the_engine(monkeypatch, make_corpus):
    root = make_corpus({"r.toml": '[[symptom]]\nname = "S"\noutcome = "hardware"\nsub_domain = "x"\nrank = 1\n'
                                  'blame = "node"\n\n[[extractor]]\nname = "R"\nauthor = "t"\nmatch_re = "zzz"\n'
                                  'emit = { type = "bad_node", symptom = "S" }\n'})
    monkeypatch.setenv("RULEKIT_SCANNER", "naive")
    monkeypatch.setenv("RULEKIT_PLUGIN_TIMEOUT", "3")
    eng = load_corpus([root]).engine
    assert eng.options.scanner == "naive" and eng.options.plugin_timeout == 3.0
    assert isinstance(eng.scan_plan("applog", "text").scanner, NaiveScanner)


def test_options_given_at_the_edge_win_over_the_environment(monkeypatch, make_corpus, tmp_path):
    root = make_corpus({"r.toml": '[[symptom]]\nname = "S"\noutcome = "hardware"\nsub_domain = "x"\nrank = 1\n'
                                  'blame = "node"\n\n[[extractor]]\nname = "R"\nauthor = "t"\nmatch_re = "zzz"\n'
                                  'emit = { type = "bad_node", symptom = "S" }\n'})
    monkeypatch.setenv("RULEKIT_SCANNER", "re2")
    cache = tmp_path / "cache"
    eng = load_corpus([root], options=EngineOptions(scanner="naive", cache_dir=cache)).engine
    assert isinstance(eng.scan_plan("applog", "text").scanner, NaiveScanner)
    assert list(cache.glob("corpus-*.pkl")), "the corpus cache goes to the folder the options name"
    eng = load_corpus([root], options=EngineOptions(scanner="re2", cache_dir=cache)).engine
    assert eng.scan_plan("applog", "text").scanner.backend == "re2"
    assert list(cache.glob("scan-*.pkl")), "so does the scanner's analysis"
    off = tmp_path / "off"
    monkeypatch.setenv("RULEKIT_CACHE_DIR", str(off))
    load_corpus([root], options=EngineOptions(cache_dir=None))
    assert not off.exists(), "options with no cache folder: the environment's folder is not used"


def test_evidence_caps_come_from_the_engine_options():
    from rulekit.engine.jobrun import attribute_dir

    job = REPO / "examples" / "cuda-oom"
    full = attribute_dir(load_corpus(None).engine, job)
    assert len(full["evidence"]) >= 2
    capped = attribute_dir(load_corpus(None, options=EngineOptions(evidence_max=1, evidence_per_key=1)).engine, job)
    assert len(capped["evidence"]) == 1
    assert capped["evidence_omitted"] == len(full["evidence"]) - 1 + full.get("evidence_omitted", 0)
    # the one kept is the full list's most important item (a bad-node event), not its first in time
    assert json.dumps(capped["evidence"][0]) in {json.dumps(e) for e in full["evidence"]}
    assert capped["evidence"][0]["event_type"] == "Attribution.node.bad"
