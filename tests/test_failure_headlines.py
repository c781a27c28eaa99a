"""A failing inline test's headline says what differs (the field, what was expected,
what came), never a restatement of what matched ("expected interesting_node X; got
interesting_node X on None" read as a pass)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

RULES = '''
[[symptom]]
name = "GPU_HOT"
outcome = "hardware"
sub_domain = "gpu"
rank = 100
blame = "node"

[[extractor]]
name = "GpuHot"
match_re = 'on (?P<host>[\\w-]+): GPU (?P<gpu>\\d+) is hot'
emit = { type = "interesting_node", symptom = "GPU_HOT", node = "{host}", fields = { gpu = "{gpu}" } }

[[extractor.test]]
line = "on node-05: GPU 3 is hot"
symptom = "GPU_HOT"
node = "node-02"

[[extractor.test]]
line = "on node-05: GPU 3 is hot"
captures = { gpu = "4" }

[[extractor.test]]
line = "on node-05: GPU 3 is hot"
expect = "bad_node"
'''


def _run(tmp_path: Path) -> str:
    (tmp_path / "rules").mkdir()
    (tmp_path / "rules" / "hot.toml").write_text(RULES)
    p = subprocess.run([sys.executable, "-m", "rulekit", "test", "--no-bundled", "rules"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 1, p.stdout + p.stderr
    return p.stdout


def test_the_headline_names_the_field_that_differs(tmp_path):
    out = _run(tmp_path)
    heads = [ln.strip() for ln in out.splitlines() if ln.startswith("  ") and not ln.startswith("    ")
             and "expected (-)" not in ln]
    assert heads == [
        "node: expected 'node-02', got 'node-05'",
        "capture `gpu`: expected '4', got '3'",
        "type: expected bad_node, got interesting_node",
    ], out
    assert "got interesting_node GPU_HOT on" not in out  # the old headline, which read as a pass
