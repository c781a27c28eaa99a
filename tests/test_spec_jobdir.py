"""The job directory reader and node/time resolution of evidence lines."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from rulekit.diagnostics import RulekitError
from rulekit.engine.jobrun import attribute_dir
from rulekit.inputs.jobdir import read_job_dir
from rulekit.extract.linectx import line_context
from rulekit.rules.loader import load_corpus

RULES = {
    "r.toml": """
[[symptom]]
name = "BOOM"
outcome = "hardware"
sub_domain = "gpu"
rank = 900
blame = "node"

[[extractor]]
name = "Boom"
match_re = 'BOOM(?: on (?P<where>\\S+))?'
emit = { type = "bad_node", symptom = "BOOM" }
""",
}


@pytest.fixture
def engine(make_corpus):
    return load_corpus([make_corpus(RULES)]).engine


def job(tmp_path: Path, toml: str | None, files: dict[str, bytes | str]) -> Path:
    root = tmp_path / "job"
    root.mkdir()
    if toml is not None:
        (root / "job.toml").write_text(toml)
    for rel, data in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data if isinstance(data, bytes) else data.encode())
    return root


def bad_nodes(result: dict) -> list[str]:
    return [b["node"] for b in result["bad_nodes"]]


@pytest.mark.parametrize("prefix, node", [("12: ", "node-02"), ("[rank12]:", "node-02"), ("[default3]:", "node-01"),
                                          ("31: ", "node-04")])
def test_rank_prefixes_map_to_nodes_by_block_distribution(tmp_path, engine, prefix, node):
    root = job(tmp_path, '[job]\nid = "1"\nstate = "FAILED"\nnodes = ["node-01","node-02","node-03","node-04"]\n'
                         'tasks_per_node = 8\n', {"applog/train.log": f"{prefix} BOOM\n"})
    assert bad_nodes(attribute_dir(engine, root)) == [node]


def test_explicit_rank_map_wins_over_block_distribution(tmp_path, engine):
    root = job(tmp_path, '[job]\nid = "1"\nnodes = ["a","b"]\ntasks_per_node = 8\n[job.ranks]\n0 = "b"\n',
               {"applog/x.log": "0: BOOM\n"})
    assert bad_nodes(attribute_dir(engine, root)) == ["b"]


def test_host_printed_in_nccl_lines_names_the_node(tmp_path, engine):
    root = job(tmp_path, '[job]\nid = "1"\nnodes = ["node0001","node0003"]\ntasks_per_node = 8\n',
               {"applog/x.log": "0: node0003:2211:2290 [0] transport/net_ib.cc:1296 NCCL WARN BOOM\n"})
    assert bad_nodes(attribute_dir(engine, root)) == ["node0003"]


def test_syslog_file_names_the_node_and_timestamps_are_parsed(tmp_path, engine):
    root = job(tmp_path, '[job]\nid = "1"\nnodes = ["n1"]\nstart = 2026-08-11T00:00:00Z\n', {
        "syslog/n1.log": "Aug 11 03:14:22 n1 kernel: BOOM\n"})
    r = attribute_dir(engine, root)
    assert bad_nodes(r) == ["n1"]
    assert r["root_cause"]["evidence"][0]["timestamp"] == "2026-08-11T03:14:22"


@pytest.mark.parametrize("line, ts, uptime", [
    ("[ 5120.118843] NVRM: x", None, 5120.118843),
    ("[Tue Aug 11 03:14:22 2026] NVRM: x", "2026-08-11T03:14:22", None),
    ("2026-08-11T03:14:22.118843+00:00 node0001 kernel: x", "2026-08-11T03:14:22.118843+00:00", None),
    ("[2026-03-03 12:11:38] node0007:185303:186751 [1] x", "2026-03-03T12:11:38", None),
    ("[rank3]:[E1218 20:27:21.426415540 ProcessGroupNCCL.cpp:629] x", "2026-12-18T20:27:21.426415", None),
    ("E0813 08:21:22.980000 1245483 torch/distributed/elastic/multiprocessing/api.py:984] failed", "2026-08-13T08:21:22.980000", None),
    ("Aug 11 03:14:22 node0001 kernel: x", "2026-08-11T03:14:22", None),
    ("no timestamp at all", None, None),
])
def test_common_timestamp_prefixes(line, ts, uptime):
    ctx = line_context(line, 2026)
    assert ctx.timestamp == ts and ctx.uptime == uptime


def test_observations_jsonl_and_bad_records(tmp_path, engine):
    recs = [json.dumps({"source": "syslog", "node": "n2", "line": "BOOM"}), "{not json", json.dumps({"line": "x"})]
    root = job(tmp_path, '[job]\nid = "1"\nnodes = ["n1","n2"]\n', {"observations.jsonl": "\n".join(recs) + "\n"})
    r = attribute_dir(engine, root)
    assert bad_nodes(r) == ["n2"]
    assert [n["code"] for n in r["notes"]] == ["RK503", "RK503"]
    assert r["notes"][0]["span"]["line"] == 2


def test_non_utf8_bytes_and_ten_megabyte_lines_are_processed(tmp_path, engine):
    big = b"x" * (10 * 1024 * 1024) + b" BOOM on big\n"
    root = job(tmp_path, '[job]\nid = "1"\nnodes = ["n1"]\n', {
        "applog/a.log": b"\xff\xfe garbage \x80 BOOM on bytes\n" + big + b"tail without newline BOOM"})
    r = attribute_dir(engine, root)
    lines = sorted(e["line_num"] for e in r["evidence"])
    assert lines == [1, 2, 3]
    assert any("\ufffd" in (e["datum"] or "") for e in r["evidence"])


def test_unknown_files_are_noted_and_ignored(tmp_path, engine):
    root = job(tmp_path, '[job]\nid = "1"\nnodes = ["n1"]\n', {"applog/core.bin": b"\x00", "random.csv": "a,b",
                                                              "syslog/n1.log": "BOOM\n"})
    r = attribute_dir(engine, root)
    assert bad_nodes(r) == ["n1"]
    assert sorted(n["code"] for n in r["notes"]) == ["RK504", "RK504"]


def test_empty_folder_is_unknown_with_a_note(tmp_path, engine):
    root = job(tmp_path, None, {})
    r = attribute_dir(engine, root)
    assert r["outcome"] == "unknown" and r["job_id"] == "job"
    assert [n["code"] for n in r["notes"]] == ["RK505"]


def test_missing_job_toml_infers_nodes_from_syslog(tmp_path, engine):
    root = job(tmp_path, None, {"syslog/nodeA.log": "BOOM\n", "syslog/nodeB.log": "fine\n"})
    assert read_job_dir(root).job.nodes == ("nodeA", "nodeB")


@pytest.mark.parametrize("toml, words, line", [
    ("[job\nid=1", "not valid TOML", 1),
    ('[job]\nstate = "EXPLODED"\n', "unknown job state", 2),
    ('[job]\nnodes = "n1"\n', "list of node names", 2),
    ('[job]\nnodes = ["a"]\n[job.ranks]\n0 = "zzz"\n', "not in `nodes`", 4),
    ('[job]\nbogus = 1\n', "unknown key", 2),
    ('[job]\nid = "1"\n[execution_cancellation]\nrecord_id = "1"\ncancelled_by = "x"\nsource_time = "2026-01-01T00:00:00"\n',
     "with an offset", 6),
    ('[job]\nid = "1"\nstate = 12\n', "`state`", 3),
    ('[job]\nid = "1"\nfailed_node = 7\n', "`failed_node`", 3),
    ('[job]\nid = "1"\n\nexit_code = [1, 2]\n', "`exit_code`", 4),
    ('[job]\ntasks_per_node = -3\n', "positive integer", 2),
    ('[job]\nstart = "yesterday"\n', "RFC 3339", 2),
    ('[job]\nstart = 2026-01-02T00:00:00Z\nend = 2026-01-01T00:00:00Z\n', "before `start`", 3),
    ('[job]\nid = "1"\n[allocation_failure]\nallocation_id = "a"\nstate = "NODE_FAIL"\ntime = "soon"\n', "allocation_failure.time", 6),
])
def test_bad_job_toml_is_a_clear_error_at_the_key(tmp_path, toml, words, line):
    root = job(tmp_path, toml, {})
    with pytest.raises(RulekitError) as exc:
        read_job_dir(root)
    assert words in str(exc.value)
    assert len(exc.value.diagnostics) == 1
    span = exc.value.diagnostics[0].span
    assert span.file.endswith("job.toml") and span.line == line


def test_job_toml_start_and_end_reach_the_job(tmp_path):
    root = job(tmp_path, '[job]\nid = "1"\nstart = 2026-01-02T00:00:00Z\nend = "2026-01-02T01:00:00+01:00"\n'
                         'exit_code = "1:0"\n', {})
    j = read_job_dir(root).job
    assert j.start.year == 2026 and j.end.utcoffset().total_seconds() == 3600 and j.exit_code == "1:0"


def test_job_toml_that_is_a_directory_is_a_clear_error(tmp_path):
    root = job(tmp_path, None, {})
    (root / "job.toml").mkdir()
    with pytest.raises(RulekitError) as exc:
        read_job_dir(root)
    assert "RK509" in str(exc.value) and "is a folder, not a file" in str(exc.value)


def test_missing_dir_is_rk501(tmp_path):
    with pytest.raises(RulekitError) as exc:
        read_job_dir(tmp_path / "nope")
    assert exc.value.diagnostics[0].code == "RK501"


def test_lines_of_a_node_log_carry_the_declared_node(tmp_path, engine):
    from rulekit.inputs.jobinfo import JobInfo
    from rulekit.inputs.observation import Observation
    from rulekit.engine.session import Session

    with Session(engine, JobInfo(id="j", nodes=("n1", "n2"))) as s:
        s.ingest(Observation(source="syslog", node="n2", lines=["BOOM"]))
        s.ingest(Observation(source="applog", lines=["BOOM"]))
        events = s.manager.stream(s.context_id).bad_events()
    assert [(e.node, e.fields.get("declared_node")) for e in events] == [("n2", "n2"), (None, None)]


def test_observations_jsonl_that_is_a_directory_is_a_note(tmp_path):
    root = job(tmp_path, '[job]\nid = "1"\n', {"applog/a.log": "hello\n"})
    (root / "observations.jsonl").mkdir()
    jd = read_job_dir(root)
    assert [(d.code, "is a folder, not a file" in d.message) for d in jd.notes] == [("RK509", True)]
