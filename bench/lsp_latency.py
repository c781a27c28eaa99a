"""Benchmark of the language server: edit-to-diagnostics latency (p50/p95/max)
and memory, on the bundled corpus and on a generated corpus of 5,000 rules.

Two measurements per corpus:
- in process: `Corpus.update(edited file)` + cross-file validation + conversion
  of every file's diagnostics to LSP objects (what the server does between a
  debounced `didChange` and `publishDiagnostics`);
- over stdio: a real LSP client (pygls) sends `didChange` to `rulekit_lsp.server`
  (debounce 0) and waits for the `publishDiagnostics` of that version.
Edits alternate between introducing and removing an error (an unregistered
symptom), so every edit changes the published diagnostics.

Over stdio the server runs with the settings a user gets by default (inline
tests on change, lint after 750 ms idle, debounce 200 ms, subtracted from the
latency; printed as `effective_settings`), with a pause between edits so
background tests do run.  The latency is to the FIRST publish of the edit's
version (tests and lint publish again later for the same version).  Also printed:
the server's CPU milliseconds per edit (load-independent: the edit's analysis plus
the background tests it starts), the load average before and after, the server's
RSS, and (on nccl.toml) seconds from an edit that adds an overlapping rule to the
publish of its RK306/RK307, first on a fresh server (the first lint is a full one)
and again after a second such edit (incremental).

Targets (issue 7, 14): p95 < 150 ms on the bundled corpus, < 1 s at 5,000 rules.

    .venv/bin/python bench/lsp_latency.py [--edits 60] [--rules 5000] [--no-stdio] [--bundled-only] [--fast-too]

Writes the generated corpus under bench/.data/lsp_corpus_<N>/ (not in git).
"""
from __future__ import annotations

import argparse
import asyncio
import dataclasses
import gc
import json
import os
import resource
import statistics
import sys
import time
import tracemalloc
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from rulekit.rules.loader import bundled_rules_path  # noqa: E402
from rulekit_lsp import convert  # noqa: E402
from rulekit_lsp.workspace import Corpus  # noqa: E402


def generate_corpus(folder: Path, n_rules: int, per_file: int = 100) -> Path:
    """n_rules extractors over n_rules/per_file TOML files, each with one inline test;
    symptoms registered in one file.  Deterministic."""
    if (folder / ".complete").exists():
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    n_files = (n_rules + per_file - 1) // per_file
    sym = ["author = \"bench\"\n"]
    for i in range(n_rules // 10 + 1):
        sym.append(f'[[symptom]]\nname = "GEN_SYMPTOM_{i:04d}"\noutcome = "hardware"\nsub_domain = "gpu"\n'
                   f'rank = {100 + i % 800}\ndocs = "generated symptom {i}"\n')
    (folder / "000_symptoms.toml").write_text("\n".join(sym))
    k = 0
    for f in range(n_files):
        parts = ['author = "bench"\n']
        for _ in range(per_file):
            if k >= n_rules:
                break
            word = f"gen{k:05d}"
            parts.append(
                f'[[extractor]]\nname = "GenRule{k:05d}"\nmatch_re = \'component {word} failed with code (?P<code>\\d+)\'\n'
                f'emit = {{ type = "bad_node", symptom = "GEN_SYMPTOM_{k // 10:04d}" }}\n'
                f'[[extractor.test]]\nline = "component {word} failed with code 7"\n'
                f'symptom = "GEN_SYMPTOM_{k // 10:04d}"\n')
            k += 1
        (folder / f"gen_{f:03d}.toml").write_text("\n".join(parts))
    (folder / ".complete").write_text("")
    return folder


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def edits_for(text: str, n: int) -> list[str]:
    """Alternate: break one symptom reference, then restore it.  Every text is new
    (a numbered name, a numbered comment), as typing gives: no cache keyed by text
    (parse, inline-test results) can answer an edit from an earlier one."""
    anchor = text.index('symptom = "') + len('symptom = "')
    return [text[:anchor] + f"UNREGISTERED_{i}_" + text[anchor:] if i % 2 == 0 else text + f"\n# edit {i}\n"
            for i in range(n)]


def in_process(folder: Path, edited: str, n_edits: int) -> dict:
    gc.collect()
    tracemalloc.start()  # memory of the index: traced once, on a separate load (tracing slows Python down)
    kept = Corpus([folder])
    kept.diagnostics_by_file()
    kept.index()
    index_mb, index_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del kept
    gc.collect()
    t0 = time.perf_counter()
    c = Corpus([folder])
    c.diagnostics_by_file()
    load_s = time.perf_counter() - t0
    path = str((folder / edited).resolve())
    texts = edits_for(c.files[path].text, n_edits)
    lat, cpu = [], []
    for t in texts:
        s, sc = time.perf_counter(), time.process_time()
        c.update(path, t)
        by_file = c.diagnostics_by_file()
        for p, ds in by_file.items():  # what the server converts (it publishes only changed files)
            if p == path:
                [convert.diagnostic(d, lambda q: c.files[q].text if q in c.files else None) for d in ds]
        lat.append((time.perf_counter() - s) * 1000)
        cpu.append((time.process_time() - sc) * 1000)
    return {"rules": len(c.analyze().ruleset.rules), "files": len(c.files), "initial_load_s": round(load_s, 3),
            "edits": len(lat), "p50_ms": round(statistics.median(lat), 1), "p95_ms": round(pct(lat, 95), 1),
            "cpu_p50_ms": round(statistics.median(cpu), 1), "cpu_p95_ms": round(pct(cpu, 95), 1),
            "max_ms": round(max(lat), 1), "index_heap_mb": round(index_mb / 2**20, 1),
            "index_heap_peak_mb": round(index_peak / 2**20, 1)}


FAST = {"debounceMs": 0, "runTestsOnChange": False, "lint": False}  # the old measurement: analysis alone


OVERLAP_RULE = """
[[extractor]]
name = "BenchOverlap{n}"
author = "bench"
match_re = '(?:socket(?:[A-Z]\\w*|\\.(?:h|cc)\\b)|NET/Socket)[^\\n]*?Connection closed by peer{n}'
emit = {{ type = "bad_node", symptom = "NCCL_CONNECTION_CLOSED" }}
[[extractor.test]]
line = "NET/Socket : Connection closed by peer{n}"
"""


async def _lint_after_edit(client, uri: str, text: str, version: int, published, first_n: int = 1) -> dict:
    """Seconds from an edit that adds an overlapping rule to the publish of its RK306/RK307:
    first right after start-up (the first lint is a full one), then again after a second
    such edit (incremental)."""
    from lsprotocol import types as T

    out = {}
    for label, n in (("first_lint_s", first_n), ("incremental_lint_s", first_n + 1)):
        version += 1
        new = text + OVERLAP_RULE.format(n=n)
        start = time.perf_counter()
        client.text_document_did_change(T.DidChangeTextDocumentParams(
            text_document=T.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[T.TextDocumentContentChangeWholeDocument(text=new)]))
        name = f"BenchOverlap{n}"
        end = start + 240
        found = None
        while time.perf_counter() < end and found is None:
            for t, p in list(published):
                if t >= start and p.uri == uri and any(
                        str(getattr(d, "code", "")) in ("RK306", "RK307") and name in d.message for d in p.diagnostics):
                    found = t
                    break
            await asyncio.sleep(0.05)
        out[label] = round(found - start, 2) if found else None
        text = new
    return out


async def over_stdio(folder: Path, edited: str, n_edits: int, settings: dict | None = None,
                     pause_s: float = 0.0, measure_lint: bool = False, lint_rule_n: int = 1) -> dict:
    """settings: initializationOptions beyond ruleFolders (None: what a user gets by default).
    Latency is from didChange to the publish of that version, minus the debounce the
    settings ask for (the wait the user configured, not work)."""
    settings = dict(settings or {})
    debounce_ms = settings.get("debounceMs", 200)
    from lsprotocol import types as T
    from pygls.lsp.client import LanguageClient

    client = LanguageClient("bench", "0")
    published: dict[tuple[str, int | None], float] = {}
    events: dict[str, asyncio.Event] = {}

    published_diags: list[tuple[float, T.PublishDiagnosticsParams]] = []

    @client.feature(T.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def on_diags(params: T.PublishDiagnosticsParams):
        # the FIRST publish of a version: later ones (tests, lint) must not overwrite its time
        published.setdefault((params.uri, params.version), time.perf_counter())
        published_diags.append((time.perf_counter(), params))
        ev = events.get(f"{params.uri}#{params.version}")
        if ev:
            ev.set()

    @client.feature(T.WORKSPACE_CODE_LENS_REFRESH)
    def _refresh(params):
        return None

    await client.start_io(sys.executable, "-m", "rulekit_lsp.server")
    pid = getattr(getattr(client, "_server", None), "pid", None)
    load_before = os.getloadavg()
    t0 = time.perf_counter()
    await client.initialize_async(T.InitializeParams(
        capabilities=T.ClientCapabilities(), root_uri=folder.as_uri(),
        initialization_options={"ruleFolders": [str(folder)], **settings}))
    client.initialized(T.InitializedParams())
    path = (folder / edited).resolve()
    uri = path.as_uri()
    text = path.read_text()
    ev = events[f"{uri}#1"] = asyncio.Event()
    client.text_document_did_open(T.DidOpenTextDocumentParams(text_document=T.TextDocumentItem(
        uri=uri, language_id="toml", version=1, text=text)))
    await asyncio.wait_for(ev.wait(), 120)
    ready_s = time.perf_counter() - t0
    cpu0 = _cpu_s(pid)
    lat = []
    for i, t in enumerate(edits_for(text, n_edits), start=2):
        ev = events[f"{uri}#{i}"] = asyncio.Event()
        s = time.perf_counter()
        client.text_document_did_change(T.DidChangeTextDocumentParams(
            text_document=T.VersionedTextDocumentIdentifier(uri=uri, version=i),
            content_changes=[T.TextDocumentContentChangeWholeDocument(text=t)]))
        await asyncio.wait_for(ev.wait(), 60)
        lat.append((published[(uri, i)] - s) * 1000 - debounce_ms)
        if pause_s:
            await asyncio.sleep(pause_s)  # a user pausing: lets background tests and lint run
    cpu_edits = _cpu_s(pid) - cpu0
    load_after = os.getloadavg()
    lint = await _lint_after_edit(client, uri, text, n_edits + 2, published_diags, lint_rule_n) if measure_lint else None
    rss = {}
    if pid:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith(("VmRSS", "VmHWM")):
                    rss[line.split(":")[0]] = round(int(line.split()[1]) / 1024, 1)
        except OSError:
            pass
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    from rulekit_lsp.settings import parse_settings

    effective = dataclasses.asdict(parse_settings(settings)[0])
    return {"settings": "defaults" if not settings else settings, "effective_settings": effective,
            "load_average_before_after": [round(load_before[0], 2), round(load_after[0], 2)],
            "server_cpu_ms_per_edit": round(cpu_edits * 1000 / max(len(lat), 1), 1),
            "debounce_ms_subtracted": debounce_ms, "pause_s": pause_s,
            "startup_to_first_publish_s": round(ready_s, 3), "edits": len(lat),
            "p50_ms": round(statistics.median(lat), 1), "p95_ms": round(pct(lat, 95), 1),
            "max_ms": round(max(lat), 1),
            "server_rss_mb": rss.get("VmRSS"), "server_peak_rss_mb": rss.get("VmHWM"),
            **({"lint_after_edit": lint} if lint else {})}


def _cpu_s(pid: int | None) -> float:
    """CPU seconds (user + system) the server process has used so far (0 when unknown):
    what an edit costs, independent of how loaded the machine is."""
    if not pid:
        return 0.0
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return 0.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--edits", type=int, default=60)
    ap.add_argument("--rules", type=int, default=5000)
    ap.add_argument("--no-stdio", action="store_true")
    ap.add_argument("--bundled-only", action="store_true", help="skip the generated corpus")
    ap.add_argument("--pause", type=float, default=0.3, help="seconds between edits over stdio (default 0.3)")
    ap.add_argument("--fast-too", action="store_true", help="also measure with tests and lint off (the old setup)")
    args = ap.parse_args()
    # a cold start: the servers' on-disk caches (scanner analysis, lint memo) in a fresh
    # folder; the second server on nccl.toml then starts with what the first one left
    import tempfile

    os.environ["RULEKIT_CACHE_DIR"] = tempfile.mkdtemp(prefix="rulekit-bench-cache-")
    big = None if args.bundled_only else generate_corpus(HERE / ".data" / f"lsp_corpus_{args.rules}", args.rules)
    cases = [("bundled", bundled_rules_path(), "nccl.toml", 150),
             ("bundled-xid", bundled_rules_path(), "xid_catalog.toml", 150)]
    if not args.bundled_only:
        cases.append((f"generated-{args.rules}", big, "gen_025.toml" if args.rules > 2500 else "gen_000.toml", 1000))
    report = {}
    for name, folder, edited, target in cases:
        r = {"in_process": in_process(Path(folder), edited, args.edits)}
        if not args.no_stdio:
            r["stdio"] = asyncio.run(over_stdio(Path(folder), edited, args.edits, None, args.pause,
                                                measure_lint=edited == "nccl.toml"))
            if edited == "nccl.toml":  # a restarted server: its first lint reads the memo on disk
                warm = asyncio.run(over_stdio(Path(folder), edited, 4, None, args.pause, measure_lint=True,
                                              lint_rule_n=3))
                r["stdio_restarted_lint_after_edit"] = warm["lint_after_edit"]
            if args.fast_too:
                r["stdio_tests_and_lint_off"] = asyncio.run(over_stdio(Path(folder), edited, args.edits, FAST))
        worst = max(r["in_process"]["p95_ms"], r.get("stdio", {}).get("p95_ms", 0))
        r["target_p95_ms"] = target
        r["meets_target"] = worst < target
        report[name] = r
    report["max_rss_mb_this_process"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    report["cpu_count"] = os.cpu_count()
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
