"""Rule corpora several test modules share (imported like `frgen` and `http_fakes`).

ONE_TESTED_RULE: the smallest TOML corpus that checks and tests clean -- one
symptom (FOO_FAULT) and one extractor (Foo) with a positive and a near-miss test.
Tests that need a broken corpus derive it from this text (`.replace(...)`).

STALL_RULES: a small corpus (file name -> text) whose one filter stalls on demand:
"SLEEP" in a line sleeps 0.3 s, "HANG" spins forever, "SNOOZE" sleeps in one C call
(an exception raised in the thread waits for it).  `write_rules` writes such a dict."""

import textwrap
from pathlib import Path


ONE_TESTED_RULE = '''
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
[[extractor.test]]
line = "foo fault"
[[extractor.test]]
line = "bar"
expect = "nothing"
'''

STALL_RULES = {
    "symptoms.toml": """
        [[symptom]]
        name = "STALL_FAULT"
        outcome = "hardware"
        sub_domain = "gpu"
        rank = 900
        blame = "node"
    """,
    "extract.toml": """
        [[extractor]]
        name = "ExStall"
        match_re = 'FAULT'
        emit = { type = "bad_node", symptom = "STALL_FAULT" }
    """,
    "stall.py": """
        import time
        from rulekit.plugin import filter_def, FilterPriority

        @filter_def(name="Stall", author="t", priority=FilterPriority.EARLY)
        def stall(ctx):
            for e in ctx.event_stream.bad_events():
                if "HANG" in (e.datum or ""):
                    while True:
                        pass
                if "SLEEP" in (e.datum or ""):
                    time.sleep(0.3)
                if "SNOOZE" in (e.datum or ""):
                    time.sleep(3600)  # one C call: an exception raised in the thread waits for it
    """,
}


def write_rules(root: Path, files: dict[str, str]) -> Path:
    """Write a corpus given as {file name: indented text} into `root`; returns `root`."""
    for name, text in files.items():
        (root / name).write_text(textwrap.dedent(text).lstrip("\n"))
    return root
