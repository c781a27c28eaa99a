"""The pieces under the editor's author loop, with data: which documents are a job's logs,
the byte bound of a reading, a draft that overlaps an existing rule says which (with the
witness line), the project file's `store`, and the read-only statistics query refusing
every store it cannot read with a sentence (missing, a folder, not a database, another
schema, locked by a writer, over its time budget), never a traceback."""
from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from rulekit.analysis.storestats import StoreReadError, open_stats_ro, read_rule_stats, rule_stats
from rulekit.diagnostics import RulekitError
from rulekit.rules.loader import load_corpus
from rulekit.rules.project import read_project
from rulekit_lsp.features import logs

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def corpus(tmp_path):
    rules = tmp_path / "rules"
    rules.mkdir()
    shutil.copy(REPO / "bundled_rules" / "error_lines.py", rules / "errors.py")
    (rules / "shard.toml").write_text('''[[symptom]]
name = "FROB_SHARD_SEVEN"
outcome = "infrastructure"
sub_domain = "storage"
rank = 500
blame = "node"
docs = "shard 7 is the one that breaks"

[[extractor]]
name = "FrobShardSeven"
match_re = 'lost quorum on shard 7\\b'
docs = "shard 7 only"
emit = { type = "bad_node", symptom = "FROB_SHARD_SEVEN" }

[[extractor.test]]
line = "ERROR frobnicator lost quorum on shard 7 after 1 retries"
symptom = "FROB_SHARD_SEVEN"

[[extractor.test]]
line = "ERROR frobnicator lost quorum on shard 8 after 1 retries"
expect = "nothing"
''')
    res = load_corpus([rules])
    assert res.engine is not None, res.diagnostics
    return rules, res.engine


def test_which_documents_are_a_jobs_logs(tmp_path):
    job = tmp_path / "j"
    for d in ("applog/sub", "syslog", "fr"):
        (job / d).mkdir(parents=True)
    (job / "job.toml").write_text('[job]\nid = "j"\n')
    for f in ("applog/train.log", "applog/sub/rank0.out", "syslog/node1.log", "fr/dump.txt", "observations.jsonl"):
        (job / f).write_text("x\n")
    assert logs.is_job_log(str(job / "applog" / "train.log"), "plaintext")
    assert logs.is_job_log(str(job / "applog" / "sub" / "rank0.out"), None)
    assert logs.is_job_log(str(job / "syslog" / "node1.log"), None)
    assert not logs.is_job_log(str(job / "job.toml"), "toml")
    assert not logs.is_job_log(str(job / "observations.jsonl"), None)
    assert not logs.is_job_log(str(job / "fr" / "dump.txt"), None)  # a flight-recorder dump, not lines
    assert not logs.is_job_log(str(tmp_path / "loose.log"), "plaintext")
    assert logs.is_job_log(str(tmp_path / "loose.log"), "log")  # the editor says it is a log
    p = logs.place_of(str(job / "syslog" / "node1.log"))
    assert (p.job_id, p.source, p.node, p.label) == ("j", "syslog", "node1", "syslog/node1.log")


def test_a_reading_is_bounded_in_bytes_and_lines(corpus, tmp_path):
    _, engine = corpus
    path = tmp_path / "j" / "applog" / "train.log"
    path.parent.mkdir(parents=True)
    (tmp_path / "j" / "job.toml").write_text('[job]\nid = "j"\n')
    head = "".join(f"2026-06-01T03:10:11 ERROR gizmo {i} melted\n" for i in range(5))
    text = head + "2026-06-01T03:00:00 INFO nominal\n" * 40_000 + "2026-06-01T03:20:00 ERROR gizmo 99 melted\n"
    got = logs.unexplained(engine, str(path), text, cap=3, max_bytes=1 << 20)
    note, *rest = got.diagnostics
    assert note.code == "RK641" and "3 of 5 unexplained error lines shown" in note.message
    assert "only the first 1 MiB of this log were read" in note.message
    assert [d.span.line for d in rest] == [1, 2, 3] and all(d.code == "RK640" for d in rest)
    assert "gizmo <NUM> melted" in rest[0].message  # the template the line reads as
    whole = logs.unexplained(engine, str(path), text, cap=100, max_bytes=8 << 20)
    assert [d.code for d in whole.diagnostics].count("RK640") == 6 and "RK641" not in [d.code for d in whole.diagnostics]
    assert logs.unexplained(engine, str(path), text, 100, 8 << 20, stop=lambda: True) is None  # superseded


def test_a_draft_that_overlaps_a_rule_names_it_and_the_witness(corpus):
    rules, engine = corpus
    u = logs.Unexplained("j", None, "applog/train.log", 3,
                         "2026-06-01T03:10:11 ERROR frobnicator lost quorum on shard 12 after 4 retries",
                         "program", "level", "applog")
    d = logs.draft_for(u, engine, [str(rules)])
    assert d.text is not None and d.overlaps and d.overlaps[0]["rule"] == "FrobShardSeven"
    assert d.text.startswith("# OVERLAPS `FrobShardSeven`") and "shard 7" in d.text.split("\n")[0]
    # a line the corpus's rule does not touch drafts clean
    clean = logs.draft_for(logs.Unexplained("j", None, "applog/train.log", 4,
                                            "2026-06-01T03:10:11 ERROR spindle 3 jammed in bay 2", "program", "level",
                                            "applog"), engine, [str(rules)])
    assert clean.text is not None and not clean.overlaps and not clean.text.startswith("# OVERLAPS")
    assert 'line = "2026-06-01T03:10:11 ERROR spindle 3 jammed in bay 2"' in clean.text


def test_the_project_file_names_a_store(tmp_path):
    f = tmp_path / "rulekit.toml"
    f.write_text('store = "results/bp.db"\n')
    assert read_project(f).store == (tmp_path / "results" / "bp.db").resolve()
    f.write_text("store = 3\n")
    with pytest.raises(RulekitError) as e:
        read_project(f)
    (d,) = e.value.diagnostics
    assert d.code == "RK008" and "`store`" in d.message and d.span.line == 1


def _minimal_store(path: Path, rows: int = 0) -> None:
    con = sqlite3.connect(path)
    con.executescript("CREATE TABLE results (key TEXT PRIMARY KEY, end_ts REAL, result_json TEXT);"
                      "CREATE TABLE evidence (key TEXT, rule TEXT, symptom TEXT);"
                      "CREATE TABLE feedback (id INTEGER PRIMARY KEY, key TEXT, verdict TEXT, judged_rule TEXT);")
    con.executemany("INSERT INTO results VALUES (?, ?, ?)",
                    [(f"j{i}#1", float(i), '{"verdict": {"root_cause": {"rule": "R%d"}}}' % (i % 50))
                     for i in range(rows)])
    con.executemany("INSERT INTO evidence VALUES (?, ?, ?)", [(f"j{i}#1", f"R{i % 50}", "S") for i in range(rows)])
    con.commit()
    con.close()


def test_the_stats_query_refuses_a_store_it_cannot_read(tmp_path):
    with pytest.raises(StoreReadError, match="no such result store"):
        read_rule_stats(tmp_path / "none.db")
    with pytest.raises(StoreReadError, match="is a folder"):
        read_rule_stats(tmp_path)
    (tmp_path / "junk.db").write_bytes(b"not sqlite at all" * 64)
    with pytest.raises(StoreReadError, match="cannot be read"):
        read_rule_stats(tmp_path / "junk.db")
    sqlite3.connect(tmp_path / "other.db").execute("CREATE TABLE results (key TEXT)").connection.commit()
    with pytest.raises(StoreReadError, match="table `results` lacks end_ts, result_json"):
        read_rule_stats(tmp_path / "other.db")
    big = tmp_path / "big.db"
    _minimal_store(big, 20_000)
    st = read_rule_stats(big)
    assert st["attempts"] == 20_000 and {r["rule"]: r["fired"] for r in st["rules"]}["R7"] == 400
    assert read_rule_stats(big, since=19_990.0)["attempts"] == 10  # the window
    with pytest.raises(StoreReadError, match="time budget"):
        read_rule_stats(big, budget_ms=0)
    # locked by a writer: a bounded wait, then a sentence
    w = sqlite3.connect(big)
    w.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(StoreReadError, match="locked by a writer"):
            read_rule_stats(big, busy_ms=50)
    finally:
        w.rollback()
        w.close()
    # read-only: the connection cannot write
    con = open_stats_ro(big)
    with pytest.raises(sqlite3.OperationalError, match="readonly"):
        con.execute("DELETE FROM results")
    assert rule_stats(con)["attempts"] == 20_000
    con.close()
