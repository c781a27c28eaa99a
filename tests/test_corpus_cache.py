"""The compiled-corpus cache (`rulekit.rules.corpus_cache` over
`rulekit.extract.diskcache`): a warm load equals a cold one, and an entry that
is corrupt, stale or half-written is rebuilt, never trusted."""
from __future__ import annotations

import multiprocessing
import os
from pathlib import Path

import pytest

from rulekit.extract import diskcache
from rulekit.extract.accel import Accelerator
from rulekit.rules.loader import load_corpus

CORPUS = {
    "a.toml": """
        [[symptom]]
        name = "DISK_FULL"
        rank = 50
        outcome = "infrastructure"
        sub_domain = "storage"
        blame = "node"

        [[extractor]]
        name = "DiskFull"
        match_re = 'No space left on (?P<dev>\\w+)'
        emit = { type = "bad_node", symptom = "DISK_FULL" }
    """,
    "f.rule": """
        filter KeepDisk LATE {
          docs "a filter compiled from the DSL"
          demote "DISK_FULL"
        }
    """,
}


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    d = tmp_path / "cache"
    monkeypatch.setenv("RULEKIT_CACHE_DIR", str(d))
    return d


def _summary(res):
    return ([r.name for r in res.ruleset.rules], [(d.code, d.message, str(d.span)) for d in res.diagnostics],
            res.engine is not None)


def _entries(d: Path, kind: str) -> list[Path]:
    return sorted(d.glob(f"{kind}-*.pkl"))


def test_warm_load_equals_cold_and_uses_the_entry(make_corpus, cache_dir, monkeypatch):
    root = make_corpus(CORPUS)
    cold = load_corpus([root])
    assert cold.engine is not None, cold.diagnostics
    assert len(_entries(cache_dir, "corpus")) == 1
    # a warm load must not parse DSL nor validate: make both fail loudly
    import rulekit.rules.loader as loader_mod
    from rulekit.rules import dsl

    monkeypatch.setattr(loader_mod, "validate", lambda *a, **k: pytest.fail("validated on a warm load"))
    monkeypatch.setattr(dsl, "parse_ast", lambda *a, **k: pytest.fail("parsed DSL on a warm load"))
    warm = load_corpus([root])
    assert _summary(warm) == _summary(cold)
    assert [r.name for r in warm.engine.filters] == ["KeepDisk"]


def test_a_stale_entry_is_never_found(make_corpus, cache_dir):
    root = make_corpus(CORPUS)
    assert load_corpus([root]).engine is not None
    # an edit that makes the corpus invalid: the old verdict ("no errors") must not be reused
    (root / "a.toml").write_text((root / "a.toml").read_text().replace("DISK_FULL\" }", "NOT_REGISTERED\" }"))
    res = load_corpus([root])
    assert res.engine is None
    assert "RK203" in {d.code for d in res.diagnostics}
    assert len(_entries(cache_dir, "corpus")) == 2


@pytest.mark.parametrize("damage", ["truncate", "flip", "garbage", "empty", "foreign-key"])
def test_a_corrupt_entry_is_rebuilt(make_corpus, cache_dir, damage):
    root = make_corpus(CORPUS)
    cold = load_corpus([root])
    [entry] = _entries(cache_dir, "corpus")
    data = entry.read_bytes()
    if damage == "truncate":
        entry.write_bytes(data[: len(data) // 2])
    elif damage == "flip":
        entry.write_bytes(data[:-10] + bytes([data[-10] ^ 0xFF]) + data[-9:])
    elif damage == "garbage":
        entry.write_bytes(os.urandom(len(data)))
    elif damage == "empty":
        entry.write_bytes(b"")
    else:  # a well-formed entry of another key renamed into place
        header, body = data.split(b"\n", 1)
        parts = header.split()
        parts[2] = b"0" * len(parts[2])
        entry.write_bytes(b" ".join(parts) + b"\n" + body)
    assert diskcache.load("corpus", entry.name[len("corpus-"):-4]) is None
    again = load_corpus([root])
    assert _summary(again) == _summary(cold)
    assert entry.read_bytes() == data  # rewritten whole


def test_disabled_by_an_empty_cache_dir(make_corpus, tmp_path, monkeypatch):
    monkeypatch.setenv("RULEKIT_CACHE_DIR", "")
    root = make_corpus(CORPUS)
    assert load_corpus([root]).engine is not None
    assert diskcache.cache_dir() is None
    assert not diskcache.store("corpus", "k", {"x": 1})


def _writer(args):
    folder, n = args
    os.environ["RULEKIT_CACHE_DIR"] = folder
    ok = 0
    for i in range(n):
        ok += diskcache.store("race", "samekey", {"payload": list(range(2000)), "i": 0})
        got = diskcache.load("race", "samekey")
        ok += got is not None and got["payload"][-1] == 1999
    return ok


def test_concurrent_writers_leave_a_valid_entry(tmp_path):
    folder = str(tmp_path / "c")
    with multiprocessing.get_context("fork").Pool(4) as pool:
        results = pool.map(_writer, [(folder, 25)] * 4)
    assert results == [50] * 4  # every read saw a complete entry
    assert [p.name for p in Path(folder).iterdir()] == ["race-samekey.pkl"]  # no temporary files left


def test_scanner_analysis_cache_is_validated(cache_dir):
    patterns = [r"Xid \(PCI:(?P<pci>[0-9a-f:.]+)\): (?P<xid>\d+)", r"NCCL WARN (?P<msg>.*)", r"(?i)segfault"]
    data = b"a\nNVRM: Xid (PCI:0000:3b:00): 79, pid=1\nx NCCL WARN oops\nSEGFAULT here\n"
    want = Accelerator(patterns).scan(data)
    [entry] = _entries(cache_dir, "scan")
    warm = Accelerator(patterns)
    assert warm.scan(data) == want
    entry.write_bytes(entry.read_bytes()[:100])  # corrupt: rebuilt, same hits, entry whole again
    assert Accelerator(patterns).scan(data) == want
    assert diskcache.load("scan", entry.name[len("scan-"):-4]) is not None
    assert [a.key_text for a in warm.analysis] == [a.key_text for a in Accelerator(patterns).analysis]


def test_the_same_files_named_differently_do_not_share_diagnostics(make_corpus, cache_dir, monkeypatch):
    root = make_corpus({**CORPUS, "bad.toml": '[[symptom]]\nname = "X"\nrank = 1\noutcome = "nope"\nsub_domain = "s"\n'})
    absolute = load_corpus([root])
    monkeypatch.chdir(root.parent)
    relative = load_corpus([Path(root.name)])
    assert absolute.diagnostics and {str(d.span.file) for d in absolute.diagnostics} == {str(root / "bad.toml")}
    assert {str(d.span.file) for d in relative.diagnostics} == {str(Path(root.name) / "bad.toml")}


PLUGIN_CORPUS = {
    **CORPUS,
    "p.py": '''
        from rulekit.plugin import register_symptom

        register_symptom("BAR_FAULT", outcome="hardware", sub_domain="gpu", rank=5, blame="node")
    ''',
    "a.test.toml": '''
        [[case]]
        name = "a full disk"
        job = { id = "t1", state = "FAILED", nodes = ["n1"] }
        [[case.observation]]
        source = "syslog"
        node = "n1"
        lines = ["No space left on sda1"]
        [case.expect]
        root_cause = "DISK_FULL"
    ''',
}


def _full(res):
    return (_summary(res), sorted(s.name for s in res.ruleset.symptoms),
            [(c.name, dict(c.expect)) for c in res.engine.job_tests])


def test_a_warm_load_runs_plugins_from_cached_bytecode_and_reuses_job_tests(make_corpus, cache_dir, monkeypatch):
    import rulekit.rules.loader as loader_mod

    root = make_corpus(PLUGIN_CORPUS)
    cold = load_corpus([root])
    assert cold.engine is not None, cold.diagnostics
    assert "BAR_FAULT" in {s.name for s in cold.ruleset.symptoms}
    assert [c.name for c in cold.engine.job_tests] == ["a full disk"]
    # warm: the plugin still runs (it yields the symptom) but is not compiled; job tests are not parsed
    monkeypatch.setattr(loader_mod, "compile", lambda *a, **k: pytest.fail("compiled a plugin on a warm load"),
                        raising=False)
    import rulekit.rules.toml_frontend as toml_mod  # the loader imports it only to parse

    monkeypatch.setattr(toml_mod, "parse_job_tests", lambda *a, **k: pytest.fail("parsed job tests on a warm load"))
    monkeypatch.setattr(toml_mod, "parse_rules", lambda *a, **k: pytest.fail("parsed a TOML file on a warm load"))
    warm = load_corpus([root])
    assert _full(warm) == _full(cold)


@pytest.mark.parametrize("damage", ["other-text", "other-python", "not-code"])
def test_cached_plugin_bytecode_is_used_only_for_the_same_text_and_python(make_corpus, cache_dir, damage):
    import marshal

    from rulekit.rules.corpus_cache import CorpusCache

    c = CorpusCache("k")
    text = "X = 1\n"
    code = compile(text, "/r/p.py", "exec")
    c.keep_code("/r/p.py", text, code)
    assert c.plugin_code("/r/p.py", text) is not None
    assert c.plugin_code("/r/q.py", text) is None  # another file
    magic, digest, body = c.codes["/r/p.py"]
    if damage == "other-text":
        assert c.plugin_code("/r/p.py", "X = 2\n") is None
    elif damage == "other-python":
        c.codes["/r/p.py"] = (b"\x00\x00\r\n", digest, body)
        assert c.plugin_code("/r/p.py", text) is None
    else:
        c.codes["/r/p.py"] = (magic, digest, marshal.dumps(("not", "code")))
        assert c.plugin_code("/r/p.py", text) is None
    # a plugin whose cached code is refused is compiled again: the load is unchanged
    root = make_corpus(PLUGIN_CORPUS)
    cold = load_corpus([root])
    assert _full(load_corpus([root])) == _full(cold)


def test_the_code_fingerprint_covers_every_source_file_of_the_package(monkeypatch):
    """A changed .py anywhere in the package (or the grammar) is a new fingerprint."""
    import rulekit

    pkg = Path(rulekit.__file__).resolve().parent
    deep = sorted(pkg.glob("*/*/*.py"))[0]  # (a file two folders down)
    grammar = sorted([*pkg.parent.glob("grammar/*.lark"), *pkg.rglob("*.lark")])[0]
    monkeypatch.setattr(diskcache, "_CODE", None)
    before = diskcache.code_fingerprint()
    for f in (deep, grammar):
        st = f.stat()
        try:
            os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
            monkeypatch.setattr(diskcache, "_CODE", None)
            assert diskcache.code_fingerprint() != before, f
        finally:
            os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
    monkeypatch.setattr(diskcache, "_CODE", None)
    assert diskcache.code_fingerprint() == before
