"""`rulekit mine --draft FILE --dsl`: drafts in the rule DSL, checked like the TOML ones
(load, inline tests, overlap lint) before they are written; the DSL file loads and,
added to the corpus, explains the lines it was drafted from; its literals survive
quotes, backslashes and slashes in the mined lines."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from test_mine import OVERLAPPING, jobs  # noqa: E402,F401  (the fixture)

from rulekit.analysis.draft import dsl_regex, dsl_str, make_drafts, render, validate  # noqa: E402
from rulekit.analysis.mine import mine_jobs, unexplained_in_job  # noqa: E402
from rulekit.rules.loader import bundled_rules_path, load_corpus  # noqa: E402


def test_dsl_drafts_are_checked_and_explain_their_lines(bundled, jobs, tmp_path):  # noqa: F811
    miner, _ = mine_jobs(bundled, jobs)
    ts = miner.templates()
    taken = ({r.name for r in bundled.extractors}, set(bundled.registry.names()))
    drafts = make_drafts(ts, set(taken[0]), set(taken[1]), dsl=True)
    toml = make_drafts(ts, set(taken[0]), set(taken[1]))
    assert [d.pattern for d in drafts] == [d.pattern for d in toml]  # the same drafts, another syntax
    quorum = next(d for d in drafts if "quorum" in d.template.template)
    assert quorum.dsl and quorum.text.startswith("# drafted by") and "extractor " + quorum.rule + " {" in quorum.text
    assert quorum.text.count("  test ") == 3 and quorum.text.count("=> nothing") == 1  # two variants, a near miss
    assert "CONFIRM" in quorum.text
    own = tmp_path / "own"
    own.mkdir()
    (own / "own.toml").write_text(OVERLAPPING)
    accepted, rejected = validate(drafts, [own])
    assert [d.rule for d in rejected] == [quorum.rule] and quorum.overlaps[0]["rule"] == "FrobQuorum"
    assert {d.rule for d in accepted} == {d.rule for d in drafts} - {quorum.rule}
    f = tmp_path / "drafts" / "drafts.rule"
    f.parent.mkdir()
    f.write_text("\n".join(d.text for d in accepted))
    res = load_corpus([bundled_rules_path(), f.parent])
    assert res.engine is not None
    rules = {r.name: r for r in res.engine.extractors}
    for d in accepted:
        assert rules[d.rule].span.file.endswith("drafts.rule") and len(rules[d.rule].tests) == len(d.positives) + 1
    left = [u.text for j in jobs for u in unexplained_in_job(res.engine, j)]
    assert not any("widgetd" in t or "evicted" in t for t in left)


def test_a_broken_dsl_draft_is_rejected_with_its_check_error(bundled, jobs):  # noqa: F811
    miner, _ = mine_jobs(bundled, jobs)
    (d,) = make_drafts(miner.templates()[:1], set(), set(), dsl=True)
    d.text = re.sub(r"(?m)^  outcome \w+", "  outcome cosmic", d.text, count=1)
    accepted, rejected = validate([d], None)
    assert accepted == [] and rejected == [d] and any(p.startswith("check: RK106") for p in d.problems), d.problems


@pytest.mark.parametrize("text", ['say "hi" \\ there', "tab\there", "bell\x07", "caf\u00e9 / ok"])
def test_dsl_literals_round_trip(tmp_path, text):
    pat = re.escape(text.replace("\t", " ").replace("\x07", " "))
    rule = (f'symptom "S" {{\n outcome application\n sub_domain python\n rank 100\n blame workload\n docs "x"\n}}\n'
            f"extractor R {{\n docs \"x\"\n match {dsl_regex(pat + '/?')}\n emit bad_node \"S\"\n"
            f"  test {dsl_str(text)} => nothing\n}}\n")
    (tmp_path / "r.rule").write_text(rule)
    res = load_corpus([tmp_path])
    assert res.engine is not None, [str(x) for x in res.diagnostics]
    (r,) = [r for r in res.engine.extractors if r.name == "R"]
    assert r.tests[0].line == text


def test_cli_mine_draft_dsl(jobs, tmp_path):  # noqa: F811
    cli = [sys.executable, "-m", "rulekit", "mine"]
    out = tmp_path / "d.rule"
    p = subprocess.run(cli + [str(j) for j in jobs] + ["--draft", str(out), "--dsl", "-t", "2"],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert "1 draft(s) written" in p.stderr and "frobnicator" in out.read_text() and "[[" not in out.read_text()
    p = subprocess.run([sys.executable, "-m", "rulekit", "test", str(out), "-k", "Draft"], capture_output=True,
                       text=True)
    assert p.returncode == 0 and " 0 failed" in p.stdout, p.stdout + p.stderr
    for args, msg in ((["--draft", str(tmp_path / "d.toml"), "--dsl"], "go in a .rule file"),
                      (["--dsl"], "--dsl goes with --draft"),
                      (["--draft", str(tmp_path / "e.rule")], "add --dsl")):
        p = subprocess.run(cli + [str(jobs[0])] + args, capture_output=True, text=True)
        assert p.returncode == 2 and msg in p.stderr, p.stderr
