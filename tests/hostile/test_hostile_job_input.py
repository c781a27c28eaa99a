"""Job input that asks for more memory than it is worth: an observations.jsonl record
too long or holding millions of tiny JSON values (RK511, skipped, the other records
kept), a JSON or pickled flight-recorder dump of millions of values (refused before
it is built), a zlib bomb through
the bounded inflater, and node names with no length limit."""
from __future__ import annotations

import json
import pickle
import resource
import zlib

import pytest

from rulekit.inputs import bounded, jobdir
from rulekit.inputs import flight_recorder as fr
from rulekit.inputs import fr_pickle
from rulekit.inputs.jobrecord import JobRecordError, parse_job_record


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def test_a_record_of_millions_of_tiny_values_is_skipped_with_rk511(tmp_path, monkeypatch):
    monkeypatch.setattr(jobdir, "MAX_RECORD_VALUES", 100_000)
    bomb = '{"source": "syslog", "node": "n1", "lines": [' + ",".join(["[]"] * 200_000) + "]}"
    good = json.dumps({"source": "syslog", "node": "n1", "line": "kernel: hello"})
    p = tmp_path / "observations.jsonl"
    p.write_text(bomb + "\n" + good + "\n")
    obs, diags = jobdir.read_observations_jsonl(p)
    assert [(d.code, d.span.line) for d in diags] == [("RK511", 1)]
    assert "values" in diags[0].message
    assert [o.node for o in obs] == ["n1"] and b"hello" in b"".join(obs[0].chunks())


def test_a_record_longer_than_its_limit_is_skipped_without_being_read_whole(tmp_path, monkeypatch):
    monkeypatch.setattr(jobdir, "MAX_RECORD_BYTES", 1 << 20)
    long_line = json.dumps({"source": "syslog", "node": "n1", "line": "x" * (8 << 20)})
    good = json.dumps({"source": "syslog", "node": "n2", "line": "kernel: ok"})
    p = tmp_path / "observations.jsonl"
    p.write_text(long_line + "\n" + good + "\n")
    obs, diags = jobdir.read_observations_jsonl(p)
    assert [(d.code, d.span.line) for d in diags] == [("RK511", 1)]
    assert [o.node for o in obs] == ["n2"]


def test_lines_capped_holds_one_capped_line_at_a_time():
    import io
    f = io.BytesIO(b"a\n" + b"y" * 1000 + b"\nb\n")
    assert list(bounded.lines_capped(f, 100)) == [(1, b"a\n"), (2, None), (3, b"b\n")]


def test_inflate_stops_at_its_cap():
    bomb = zlib.compress(b"\0" * (64 << 20), 9)  # ~64 KiB holding 64 MiB
    assert len(bomb) < 200_000
    with pytest.raises(bounded.LimitExceeded):
        bounded.inflate(bomb, 1 << 20)
    assert bounded.inflate(zlib.compress(b"abc"), 10) == b"abc"


def test_a_json_dump_of_millions_of_values_is_refused_before_parsing(monkeypatch):
    monkeypatch.setattr(fr, "MAX_JSON_VALUES", 50_000)
    data = ("[" + ",".join(["{}"] * 100_000) + "]").encode()
    with pytest.raises(fr.FRDumpError, match="values"):
        fr.parse_dump_bytes(data, "fr/rank0.json")


def test_a_pickled_dump_of_too_many_opcodes_is_refused_before_unpickling(monkeypatch):
    monkeypatch.setattr(fr_pickle, "MAX_PICKLE_OPS", 10_000)
    data = pickle.dumps({"entries": [[] for _ in range(20_000)], "version": "2.4"}, protocol=4)
    with pytest.raises(fr.FRDumpError, match="opcodes"):
        fr.parse_dump_bytes(data, "fr/rank0.pkl")


def test_node_names_have_a_length_limit():
    with pytest.raises(JobRecordError):
        parse_job_record({"id": "j", "nodes": ["n" * 1_000_000]})
    with pytest.raises(JobRecordError):
        parse_job_record({"id": "j", "nodes": ["n1"], "failed_node": "n" * 100_000})
    assert list(parse_job_record({"id": "j", "nodes": ["n1"]}).nodes) == ["n1"]
