"""Python rules misbehaving at attribution time are contained per rule: sys.exit(),
print() and a call that never returns become `rule_errors` entries naming the rule
and its place; the verdict still comes from the other rules; `--format json` stays
JSON.  A plugin that behaves in the import probe and loops on its second import is
stopped too."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from rulekit.rules.loader import bundled_rules_path, load_corpus

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "xid149-nvlink"
RULEKIT = [sys.executable, "-m", "rulekit"]

HEAD = "import sys, time\nfrom rulekit.plugin import filter_def, refiner_def, collector_def, FilterPriority, " \
       "RefinerPriority, accumulator_def, Accumulator\n"
BODIES = {
    "exit": "sys.exit(7)",
    "print": 'print("PLUGIN-NOISE {not json")',
    "loop": "while True:\n    pass",
}


def _plugin(tmp_path: Path, kind: str, what: str) -> Path:
    d = tmp_path / "plugins"
    d.mkdir(exist_ok=True)
    body = textwrap.indent(BODIES[what], "    ").strip()
    if kind == "accumulator":
        body = textwrap.indent(BODIES[what], "        ").strip()
    if kind == "filter":
        text = HEAD + f'''
@filter_def(name="Hostile", author="t", priority=FilterPriority.STANDARD)
def hostile(ctx):
    {body}
'''
    elif kind == "refiner":
        text = HEAD + f'''
@refiner_def(name="Hostile", author="t", priority=RefinerPriority.FINAL)
def hostile(ctx):
    {body}
'''
    elif kind == "collector":
        text = HEAD + f'''
@collector_def(name="Hostile", author="t")
def hostile(ctx):
    {body}
'''
    else:  # an accumulator fed the lines after an NVRM line
        text = HEAD + f'''
@accumulator_def(name="Hostile", author="t", trigger_re="NVRM: Xid", sources=["syslog"], max_lines=3)
class Hostile(Accumulator):
    def __init__(self, ctx, line, caps):
        pass
    def feed(self, line):
        {body}
    def finalize(self):
        return []
'''
    (d / "hostile.py").write_text(text)
    return d


def _attribute(plugins: Path, *extra: str, timeout: float = 120, **env: str):
    e = dict(os.environ, RULEKIT_RULE_TIMEOUT="1", **env)
    t0 = time.monotonic()
    p = subprocess.run(RULEKIT + ["attribute", "--rules", str(bundled_rules_path()), "--rules", str(plugins),
                                  str(EXAMPLE), "--format", "json", *extra],
                       capture_output=True, text=True, timeout=timeout, env=e)
    return p, time.monotonic() - t0


SMALL = """
[[symptom]]
name = "GPU_GONE"
outcome = "hardware"
sub_domain = "gpu"
rank = 900
blame = "node"
[[extractor]]
name = "GpuGone"
author = "t"
match_re = 'NVRM: Xid .*fallen off the bus'
source = "syslog"
emit = { type = "bad_node", symptom = "GPU_GONE" }
"""


@pytest.mark.parametrize("kind", ["filter", "refiner", "collector", "accumulator"])
@pytest.mark.parametrize("what", ["exit", "print", "loop"])
def test_a_misbehaving_rule_is_one_rule_error_and_the_verdict_stands(tmp_path, kind, what, capfd):
    """In the library (what the CLI, the Service and the Blueprint run): every kind of
    Python rule, every way of misbehaving."""
    from rulekit.config import EngineOptions
    from rulekit.engine.session import Session
    from rulekit.inputs.jobinfo import JobInfo
    from rulekit.inputs.observation import Observation

    d = _plugin(tmp_path, kind, what)
    (d / "small.toml").write_text(SMALL)
    res = load_corpus([d], options=EngineOptions(rule_timeout=0.5, cache_dir=None))
    assert res.engine is not None, res.diagnostics
    line = "Jun  1 03:12:40 n2 kernel: NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus."
    t0 = time.monotonic()
    with Session(res.engine, JobInfo(id="j", state="FAILED", nodes=("n1", "n2"))) as s:
        s.ingest(Observation(source="syslog", node="n2", lines=[line, "next line", "and another"]))
        r = s.attribute()
    took = time.monotonic() - t0
    assert "PLUGIN-NOISE" not in capfd.readouterr().out  # nothing reached our stdout
    assert r["outcome"] == "hardware" and r["bad_nodes"][0]["node"] == "n2"
    errs = [e for e in r.get("rule_errors", []) if e["rule"] == "Hostile"]
    assert errs, r.get("rule_errors")
    assert errs[0]["where"].startswith(str(d / "hostile.py") + ":"), errs[0]
    want = {"exit": "sys.exit(7)", "print": "PLUGIN-NOISE", "loop": "time budget of 0.5 s"}[what]
    assert want in errs[0]["error"], errs[0]
    assert took < 10


@pytest.mark.parametrize("what", ["exit", "print", "loop"])
def test_attribute_cli_keeps_its_json_and_its_exit_status(tmp_path, what):
    p, took = _attribute(_plugin(tmp_path, "filter", what))
    assert p.returncode in (0, 1), (p.returncode, p.stderr[-2000:])
    assert p.stdout.lstrip().startswith("[")
    (d,) = json.loads(p.stdout)  # stdout is our JSON alone (a list of results: one job here)
    assert d["outcome"] == "hardware" and d["sub_domain"] == "nvlink"  # the other rules' verdict
    (err,) = [e for e in d.get("rule_errors", []) if e["rule"] == "Hostile"]
    assert "hostile.py:" in err["where"]
    assert {"exit": "sys.exit(7)", "print": "PLUGIN-NOISE", "loop": "time budget of 1 s"}[what] in err["error"]
    assert took < 60


def test_a_plugin_that_loops_only_on_its_second_import_is_stopped(tmp_path):
    """The probe (a child) sees it finish; the loader's own import loops: stopped by the
    plugin time limit there too: a located RK006 (an error, as when the probe times out)."""
    d = tmp_path / "R"
    d.mkdir()
    marker = tmp_path / "imported-once"
    (d / "sly.py").write_text(textwrap.dedent(f"""
        import os
        MARK = {str(marker)!r}
        if os.path.exists(MARK):
            while True:
                pass
        open(MARK, "w").close()
    """))
    (d / "ok.toml").write_text(textwrap.dedent("""
        [[symptom]]
        name = "FOO_FAULT"
        outcome = "hardware"
        sub_domain = "gpu"
        rank = 10
        blame = "node"
        [[extractor]]
        name = "Foo"
        author = "t"
        match_re = 'foo fault'
        emit = { type = "bad_node", symptom = "FOO_FAULT" }
    """))
    t0 = time.monotonic()
    res = load_corpus([d], plugin_timeout=1.0)
    took = time.monotonic() - t0
    diags = [x for x in res.diagnostics if x.code == "RK006"]
    assert diags and diags[0].span.file.endswith("sly.py") and diags[0].span.line in (5, 6), res.diagnostics
    assert "second import" in diags[0].message
    assert took < 15
