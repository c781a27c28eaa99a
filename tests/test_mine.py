"""`rulekit mine` with data: the unexplained error lines are the generic fallback's
survivors (a line a specific rule reads is not one), Drain templates ranked by jobs
and nodes, drafts whose patterns name their variables, drafts checked (tests, overlap
with the rule and the witness line) before they are written, and the jobs attributed
again with the drafts added no longer show those lines."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from rulekit.analysis.draft import make_drafts, pattern_of, validate
from rulekit.analysis.mine import Miner, mask, message_of, mine_jobs, unexplained_in_job
from rulekit.blueprint.rulestats import unexplained_in_store
from rulekit.extract.regex import compile_pattern
from rulekit.rules.loader import bundled_rules_path, load_corpus

OOM = ("[rank13]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.22 GiB. GPU 5 has a total "
       "capacity of 79.10 GiB of which 612.00 MiB is free.")


def _job(root: Path, name: str, nodes: list[str], applog: list[str], syslog: dict[str, list[str]] | None = None) -> Path:
    d = root / name
    (d / "applog").mkdir(parents=True)
    (d / "job.toml").write_text(f'[job]\nid = "{name}"\nstate = "FAILED"\nnodes = {json.dumps(nodes)}\n'
                                "tasks_per_node = 8\n")
    (d / "applog" / "train.log").write_text("\n".join(applog) + "\n")
    for node, lines in (syslog or {}).items():
        (d / "syslog").mkdir(exist_ok=True)
        (d / "syslog" / f"{node}.log").write_text("\n".join(lines) + "\n")
    return d


def _quorum(shard: int, tries: int) -> str:
    what = "replica" if shard == 12 else "shard"  # a second variant of the same template
    return f"2026-06-01T03:10:{shard:02d} ERROR frobnicator lost quorum on {what} {shard} after {tries} retries"


@pytest.fixture
def jobs(tmp_path):
    out = []
    for i, (a, b) in enumerate([("node0001", "node0002"), ("node0003", "node0004"), ("node0005", "node0006")]):
        out.append(_job(tmp_path, f"job-{i}", [a, b], [
            "2026-06-01T03:00:00 INFO step 100 loss 2.31 errors=0",
            _quorum(10 + i, 3 + i),
            OOM,
        ], {b: [f"Jun  1 03:10:4{i} {b} kernel: widgetd 0000:3b:00.0: sensor bank {i} read failed with error 0x1f"]}))
    # one job with the same unknown line many times (more than the engine's repeat cap of 32
    # events, which mining lifts): fewer jobs, ranked lower despite more lines
    out.append(_job(tmp_path, "job-noisy", ["node0009"], [
        f"2026-06-01T03:11:{i:02d} ERROR cache shard {i} evicted under pressure" for i in range(1, 51)]))
    return out


def test_unexplained_lines_are_what_the_fallback_keeps(bundled, jobs):
    lines = unexplained_in_job(bundled, jobs[0])
    texts = [u.text for u in lines]
    assert _quorum(10, 3) in texts
    assert not any("OutOfMemoryError" in t for t in texts)  # a specific rule reads it
    assert not any("INFO" in t for t in texts)  # not an error line
    assert any("widgetd" in t for t in texts)
    u = next(u for u in lines if "widgetd" in u.text)
    assert (u.node, u.file, u.line_num, u.source) == ("node0002", "syslog/node0002.log", 1, "syslog")


def test_templates_are_ranked_by_jobs_then_nodes(bundled, jobs):
    miner, failed = mine_jobs(bundled, jobs)
    assert failed == []
    ts = miner.templates()
    widget, top = ts[0], ts[1]  # both in 3 jobs; the one on more nodes first
    assert "<PCI>" in widget.template and "<HEX>" in widget.template and len(widget.nodes) == 3
    assert len(top.jobs) == 3 and top.lines == 3 and not top.nodes
    assert "<NUM>" in top.template and "frobnicator lost quorum" in top.template
    noisy = next(t for t in ts if "evicted" in t.template)
    assert noisy.lines == 50 and len(noisy.jobs) == 1 and ts.index(noisy) == 2


def test_message_and_masks():
    assert message_of("Jun  1 03:10:40 node0002 kernel: [ 12.5] nvidia 0000:3b:00.0: x") == "nvidia 0000:3b:00.0: x"
    assert message_of("[rank3]: 2026-06-01T03:10:40.123Z boom") == "boom"
    assert mask("node0002:17:18 [3] NCCL WARN rank 7 at 10.0.0.7:45 rc 0x1f", ["node0002"]) == \
        "<NODE>:<NUM>:<NUM> [<NUM>] NCCL WARN rank <NUM> at <IP> rc <HEX>"


def test_pattern_names_its_variables_and_is_re2():
    pat, names = pattern_of("<NODE>:<NUM>:<NUM> [<NUM>] NCCL WARN rank <NUM> on GPU <NUM> failed with error <HEX> <*>")
    assert names == ["node", "num", "num2", "num3", "rank", "gpu", "code"]
    compile_pattern(pat)  # RE2 accepts it
    m = re.search(pat, "[rank7]: host-a:1:2 [7] NCCL WARN rank 7 on GPU 3 failed with error 0x1f tail")
    assert m is None  # ends at the line's end: a free token at the end is dropped, not required
    m = re.search(pat, "[rank7]: host-a:1:2 [7] NCCL WARN rank 7 on GPU 3 failed with error 0x1f")
    assert m and (m["rank"], m["gpu"], m["code"], m["node"]) == ("7", "3", "0x1f", "host-a")


OVERLAPPING = """
[[symptom]]
name = "FROB_QUORUM"
outcome = "application"
sub_domain = "program"
rank = 500
blame = "workload"

[[extractor]]
name = "FrobQuorum"
match_re = 'frobnicator lost quorum'
docs = "an existing rule the quorum draft overlaps"
emit = { type = "bad_node", symptom = "FROB_QUORUM" }
"""


def test_drafts_are_checked_then_explain_their_lines(bundled, jobs, tmp_path):
    miner, _ = mine_jobs(bundled, jobs)
    ts = miner.templates()
    drafts = make_drafts(ts, {r.name for r in bundled.extractors}, set(bundled.registry.names()))
    assert len(drafts) == len(ts)
    quorum = next(d for d in drafts if "quorum" in d.template.template)
    assert "<*>" in quorum.template.template and "(?:replica|shard)" in quorum.pattern
    assert quorum.text.count("[[extractor.test]]") == 3  # a positive per variant (two), one near miss
    assert "CONFIRM" in quorum.text and 'expect = "nothing"' in quorum.text
    # against a corpus holding a rule for the quorum line: that draft is refused, with rule and witness
    own = tmp_path / "own"
    own.mkdir()
    (own / "own.toml").write_text(OVERLAPPING)
    accepted, rejected = validate(drafts, [own])
    assert [d.rule for d in rejected] == [quorum.rule]
    (ov,) = quorum.overlaps
    assert ov["rule"] == "FrobQuorum" and "frobnicator lost quorum" in ov["witness"]
    assert {d.rule for d in accepted} == {d.rule for d in drafts} - {quorum.rule}
    # the accepted drafts added to the bundled corpus explain the lines they were drafted from
    f = tmp_path / "drafts" / "drafts.toml"
    f.parent.mkdir()
    f.write_text("\n".join(d.text for d in accepted))
    engine = load_corpus([bundled_rules_path(), f.parent]).engine
    assert engine is not None
    left = [u.text for j in jobs for u in unexplained_in_job(engine, j)]
    assert any("quorum" in t for t in left)
    assert not any("widgetd" in t or "evicted" in t for t in left)


def test_mine_from_a_store(bundled, tmp_path):
    from rulekit.blueprint.config import load_config
    from rulekit.blueprint.orchestrator import Attributor, run
    from rulekit.blueprint.store import open_db, upsert

    class Out:
        def __init__(self):
            self.rs = []

        def write(self, r):
            self.rs.append(r)

        def close(self):
            pass

    out = Out()
    run(load_config(Path(__file__).resolve().parent.parent / "examples/blueprint/static"), Attributor(engine=bundled),
        [out])
    con = open_db(tmp_path / "bp.db")
    for r in out.rs:
        upsert(con, r)
    want = [(r["job_id"], e["datum"]) for r in out.rs for e in r["verdict"]["evidence"] if e["rule"] == "ErrorLine"]
    got = unexplained_in_store(con, ["ErrorLine"])
    assert want and [(u.job, u.text) for u in got] == want
    m = Miner()
    for u in got:
        m.add(u)
    assert m.lines == len(want)


def test_cli_mine_formats_drafts_and_bad_input(jobs, tmp_path):
    cli = [sys.executable, "-m", "rulekit", "mine"]
    p = subprocess.run(cli + [str(j) for j in jobs] + ["--format", "json"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    rep = json.loads(p.stdout)
    assert rep["ranked"][1]["jobs"] == 3 and rep["ranked"][1]["examples"][0]["job"] == "job-0"
    assert "frobnicator" in rep["ranked"][1]["template"]
    p = subprocess.run(cli + [str(j) for j in jobs] + ["--format", "markdown", "-n", "1"], capture_output=True,
                       text=True)
    assert p.stdout.startswith("# Unexplained error lines") and "| 1 | 3 |" in p.stdout and "| 2 |" not in p.stdout
    out = tmp_path / "d.toml"
    p = subprocess.run(cli + [str(j) for j in jobs] + ["--draft", str(out), "-t", "2"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert "1 draft(s) written" in p.stderr and "frobnicator" in out.read_text()
    p = subprocess.run(cli, capture_output=True, text=True)
    assert p.returncode == 2 and "job directories or --db" in p.stderr
    p = subprocess.run(cli + [str(tmp_path / "nope")], capture_output=True, text=True)
    assert p.returncode == 2 and "no such file" in p.stderr and "Traceback" not in p.stderr
    p = subprocess.run(cli + [str(jobs[0]), "--draft", str(out), "-t", "99"], capture_output=True, text=True)
    assert p.returncode == 2 and "--template" in p.stderr
