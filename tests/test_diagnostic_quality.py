"""What a rule author reads after a typo: one error for one mistake (the follow-ons
of a pattern that does not compile are held back), the caret on the token that is
wrong (TOML and DSL alike, in a rule and in its test), "did you mean" for names and
keys, the author's own pattern in RE2's complaint, and `rulekit test` still running
every test the broken rule does not affect."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


from rulekit.rules.loader import load_corpus

RULES = '''
[[symptom]]
name = "MY_DISK_FULL"
outcome = "infrastructure"
sub_domain = "filesystem"
rank = 300
blame = "node"

[[extractor]]
name = "MyDiskFull"
match_re = 'No space left on device: (?P<path>/local/\\S+'
emit = { type = "bad_node", symptom = "MY_DISK_FULL", fields = { path = "{path}" } }
[[extractor.test]]
line = "write failed: No space left on device: /local/scratch/x"
captures = { path = "/local/scratch/x" }

[[extractor]]
name = "MyOther"
match_re = 'other (?P<what>thing) happened'
emit = { type = "bad_node", symptom = "MY_DISK_FUL", node = "{wat}" }
[[extractor.test]]
line = "other thing happened"
symptom = "MY_DSK_FULL"
captures = { wht = "thing" }
'''


def spans(text: str, path: Path) -> dict[str, list[tuple[int, int, int, str]]]:
    path.write_text(text)
    res = load_corpus([path.parent])
    lines = text.split("\n")
    out: dict[str, list] = {}
    for d in res.diagnostics:
        s = d.span
        out.setdefault(d.code, []).append((s.line, s.col, s.end_col, lines[s.line - 1][s.col - 1:s.end_col - 1],
                                           d.message))
    return out


def test_one_error_for_one_regex_typo(tmp_path):
    (tmp_path / "r").mkdir()
    only_first = RULES.split('[[extractor]]\nname = "MyOther"')[0]
    got = spans(only_first, tmp_path / "r" / "a.toml")
    assert list(got) == ["RK301"], got  # no RK107 about {path}, no RK108 about the `path` capture
    ((line, col, _end, token, msg),) = got["RK301"]
    assert token == "(" and "missing ), unterminated subpattern" in msg
    assert r"\p{Z}" not in msg and "[^" not in msg  # the author's pattern, not RE2's rewriting of it


def test_carets_on_the_token_and_did_you_mean(tmp_path):
    (tmp_path / "r").mkdir()
    got = spans(RULES, tmp_path / "r" / "a.toml")
    by_token = {(code, d[3]): d[4] for code, ds in got.items() for d in ds}
    # the emit's symptom, at the value; a suggestion from the registry
    assert "did you mean `MY_DISK_FULL`?" in by_token[("RK203", "MY_DISK_FUL")]
    # in a test: at the test's `symptom`, not at its `line`
    assert "did you mean `MY_DISK_FULL`?" in by_token[("RK203", "MY_DSK_FULL")]
    # a placeholder the pattern lacks: at `{wat}` inside the emit, with the group it may mean
    assert "did you mean `what`?" in by_token[("RK107", "{wat}")]
    # a capture the test checks that the pattern does not have: at the capture's name
    assert "did you mean `what`?" in by_token[("RK108", "wht")]
    # the broken first rule still gets only its RK301
    assert {code for code in got} == {"RK301", "RK203", "RK107", "RK108"}


def test_dsl_carets_on_the_token(tmp_path):
    (tmp_path / "r").mkdir()
    text = ('symptom "MY_DISK_FULL" { outcome infrastructure sub_domain filesystem rank 300 blame node }\n'
            'extractor Other {\n'
            '  match /other (?P<what>thing) happened/\n'
            '  emit bad_node "MY_DISK_FUL"\n'
            '  test "other thing happened" => bad_node "MY_DSK_FULL"\n'
            '}\n')
    got = spans(text, tmp_path / "r" / "a.rule")
    tokens = sorted(d[3] for d in got["RK203"])
    assert tokens == ["MY_DISK_FUL", "MY_DSK_FULL"], got
    assert all("did you mean `MY_DISK_FULL`?" in d[4] for d in got["RK203"])


def test_unknown_keys_and_rule_names_get_suggestions(tmp_path):
    (tmp_path / "r").mkdir()
    text = RULES.replace("match_re = 'other", "sorce = \"syslog\"\nrequires = [\"MyDiskFul\"]\nmatch_re = 'other")
    got = spans(text, tmp_path / "r" / "a.toml")
    assert any("did you mean `source`?" in d[4] and d[3].startswith("sorce") for d in got["RK101"])
    assert any("did you mean `MyDiskFull`?" in d[4] for d in got["RK204"])
    p = subprocess.run([sys.executable, "-m", "rulekit", "explain", str(Path(__file__).parent.parent / "examples" /
                                                                         "xid149-nvlink"), "--rule", "NcclWatchdogTimeuot"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and "did you mean `NcclWatchdogTimeout`?" in p.stderr


def test_rulekit_test_runs_what_the_typo_does_not_affect(tmp_path):
    """A regex typo in one rule no longer hides an unrelated failing expectation."""
    rules = tmp_path / "rules"
    rules.mkdir()
    text = RULES.replace('symptom = "MY_DISK_FUL", node = "{wat}"', 'symptom = "MY_DISK_FULL"') \
                .replace('symptom = "MY_DSK_FULL"\ncaptures = { wht = "thing" }', 'expect = "interesting_node"')
    (rules / "a.toml").write_text(text)
    (rules / "jobs.test.toml").write_text('[[case]]\nname = "a job"\njob = { id = "t", state = "FAILED", nodes = ["n1"] }\n'
                                          '[[case.observation]]\nsource = "applog"\nlines = ["other thing happened"]\n'
                                          '[case.expect]\noutcome = "infrastructure"\n')
    p = subprocess.run([sys.executable, "-m", "rulekit", "test", "--no-bundled", "rules", "--format", "json"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert p.returncode == 2, p.stderr  # the corpus does not load: bad input
    assert "RK301" in p.stderr and "running the tests its errors do not affect" in p.stderr
    doc = json.loads(p.stdout)
    by_name = {r["name"]: r for r in doc["results"]}
    assert by_name["MyOther #1"]["status"] == "failed"  # the unrelated wrong expectation is reported
    assert "type: expected interesting_node, got bad_node" in by_name["MyOther #1"]["mismatches"]
    assert by_name["MyDiskFull #1"]["status"] == "skipped" and "the rule has errors" in by_name["MyDiskFull #1"]["skipped"]
    assert by_name["a job"]["status"] == "skipped" and "runs the whole corpus" in by_name["a job"]["skipped"]
    assert doc["summary"] == {"passed": 0, "failed": 1, "error": 0, "skipped": 2}


def test_the_language_server_shows_the_same(tmp_path):
    from rulekit_lsp.settings import Settings
    from rulekit_lsp.workspace import Workspace

    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "a.toml").write_text(RULES)
    w = Workspace(Settings(bundled=False))
    w.configure([str(tmp_path)])
    (c,) = w.corpora
    diags = c.diagnostics_by_file()[str((tmp_path / "r" / "a.toml").resolve())]
    rk203 = sorted((d.span.line, d.span.col) for d in diags if d.code == "RK203")
    text = RULES.split("\n")
    assert [text[ln - 1][col - 1:col + 10] for ln, col in rk203] == ["MY_DISK_FUL", "MY_DSK_FULL"]
    assert not any(d.code in ("RK107", "RK108") and "path" in d.message for d in diags)
