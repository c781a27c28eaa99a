"""How rulekit scales with the corpus: check, lint (cold and with its memo), test,
attribute (cold and warm) and the language server's first diagnostics, at several
corpus sizes, with the growth exponent between sizes.

The corpus at each size is the bundled one plus N generated vendor-style
extractors (`bench/vendor_corpus.py`: many components, families, catalogs, some
overlapping rules on purpose).  Every command runs as its own process, as a user
runs it, with a fresh cache folder where the column says cold:

- check        `rulekit check BUNDLED GEN` (cold: nothing cached)
- lint cold    `rulekit lint BUNDLED GEN --no-tests --no-cost` (cold: no lint memo, no scan cache)
- lint memo    the same again, with the memo the cold run left on disk
- test         `rulekit test BUNDLED GEN` (warm corpus cache): every inline test, job test, example
- attr cold    `rulekit attribute examples/xid149-nvlink --rules BUNDLED --rules GEN` (nothing cached:
               the acceleration structure is built, Hyperscan compiled)
- attr warm    the same again
- lsp publish  a language server started on the two folders: seconds to its first diagnostics
- lsp lint     ... to the publish of its first lint findings (its first lint, cold)
- lsp relint   the warm one-edit re-lint: once the server has published its first lint and
               been quiet for 3 s, an edit of one file that adds a rule overlapping
               another, seconds from the didChange to the publish of its RK306/RK307 (the
               server's lint delay, 750 ms by default or --lint-delay-ms, included)

Also printed: CPU seconds of each command (user + system, `[.. cpu]`: on a shared
machine the load-independent cost; its exponent on the `k cpu` rows), the ratio of
the largest size to the smallest, peak RSS of each command (MiB), the lint's findings per code (so a
before/after run shows the same findings), and the exponent k of t ~ N^k between
consecutive sizes, N = the extractors the lint sees (bundled + generated).  A
command that exceeds --timeout is reported as `>T`; its exponent is a lower bound.

    .venv/bin/python bench/corpus_scale.py [--sizes 500,2000,5000] [--timeout 1800]
        [--code DIR] [--only lint_cold,lsp] [--json FILE] [--lint-delay-ms MS]

--code DIR runs the rulekit of another checkout (a `git worktree` or `git archive`
of an older commit, with `rulekit_lsp` linked to its `lsp/`): the before of a
before/after comparison, on the same generated corpora.  Generated corpora go to
bench/.data/vendor_<N>/ (not in git).  Timings on a shared machine are noisy:
compare ratios within one run.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

import vendor_corpus  # noqa: E402

EXAMPLE = ROOT / "examples" / "xid149-nvlink"
QUIET_S = 3.0  # the language server is settled: no diagnostics published for this long
COLUMNS = ["check", "lint_cold", "lint_memo", "test", "attr_cold", "attr_warm", "lsp_publish", "lsp_lint", "lsp_relint"]


def _env(code: Path | None, cache: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["RULEKIT_CACHE_DIR"] = str(cache)
    if code is not None:
        env["PYTHONPATH"] = str(code) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


_CODE: list[Path] = []  # the --code checkout, when given
_DELAY: list[int] = []  # --lint-delay-ms, when given (else the server's default)


def _cwd(env: dict[str, str]) -> str:
    """Run from the checkout whose code runs (`python -c` puts the working folder first)."""
    return str(_CODE[0]) if _CODE else str(ROOT)


def run(cmd: list[str], env: dict[str, str], timeout: float) -> dict:
    """Run one rulekit command; wall seconds, peak RSS (MiB), exit status, stdout."""
    out = tempfile.TemporaryFile()
    start = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=out, stderr=subprocess.DEVNULL, env=env, cwd=_cwd(env))
    deadline = start + timeout
    status, rss, ru = None, 0, None
    while True:
        pid, st, ru = os.wait4(p.pid, os.WNOHANG)
        if pid:
            status, rss = os.waitstatus_to_exitcode(st), ru.ru_maxrss / 1024
            break
        if time.perf_counter() > deadline:
            p.kill()
            _pid, st, ru = os.wait4(p.pid, 0)
            status, rss = "timeout", ru.ru_maxrss / 1024
            break
        time.sleep(0.02)
    secs = time.perf_counter() - start
    out.seek(0)
    text = out.read().decode("utf-8", "replace")
    cpu = ru.ru_utime + ru.ru_stime if ru is not None else None
    return {"s": round(secs, 2), "cpu_s": round(cpu, 2) if cpu is not None else None, "rss_mb": round(rss, 1),
            "status": status, "stdout": text}


def rulekit(*args: str) -> list[str]:
    return [sys.executable, "-c", "import sys; from rulekit.cli import main; sys.exit(main())", *args]


def lint_summary(stdout: str) -> dict:
    try:
        diags = json.loads(stdout)
    except ValueError:
        return {}
    items = diags.get("diagnostics", diags) if isinstance(diags, dict) else diags
    by: dict[str, int] = {}
    keys = []
    for d in items:
        by[d["code"]] = by.get(d["code"], 0) + 1
        keys.append((d["code"], d.get("file") or d.get("span", {}).get("file"), d.get("line") or d.get("span", {}).get("line"),
                     d["message"]))
    import hashlib

    return {"by_code": dict(sorted(by.items())),
            "digest": hashlib.sha256(json.dumps(sorted(map(str, keys))).encode()).hexdigest()[:16]}


# ---- the language server -----------------------------------------------------------------------------

OVERLAP = """
[[extractor]]
name = "ScaleBenchOverlap{n}"
match_re = '{pattern}'
source = "syslog"
emit = {{ type = "bad_node", symptom = "{symptom}" }}
[[extractor.test]]
line = "{line}"
symptom = "{symptom}"
"""


def _overlapping_rule(gen: Path, n: int) -> tuple[Path, str]:
    """A generated file and a rule to append to it that overlaps one of its rules (the
    first rule's pattern with a wider tail): its lint finding names the new rule."""
    import re
    import tomllib

    f = sorted(gen.glob("vendor_0*.toml"))[1]
    data = tomllib.loads(f.read_text())
    ex = next(e for e in data["extractor"] if "test" in e and e.get("source") == "syslog")
    pattern = ex["match_re"] + r"(?P<tail>.*)"
    line = ex["test"][0]["line"]
    assert re.search(pattern, line)
    return f, OVERLAP.format(n=n, pattern=pattern, line=line.replace("\\", "\\\\").replace('"', '\\"'),
                             symptom=ex["emit"]["symptom"])


async def _lsp(folders: list[Path], gen: Path, env: dict[str, str], timeout: float) -> dict:
    from lsprotocol import types as T
    from pygls.lsp.client import LanguageClient

    client = LanguageClient("corpus-scale", "0")
    events: list[tuple[float, T.PublishDiagnosticsParams]] = []

    @client.feature(T.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def on_diags(params: T.PublishDiagnosticsParams):
        events.append((time.perf_counter(), params))

    @client.feature(T.WORKSPACE_CODE_LENS_REFRESH)
    def _refresh(params):
        return None

    await client.start_io(sys.executable, "-m", "rulekit_lsp.server", env=env, cwd=_cwd(env))
    start = time.perf_counter()
    await client.initialize_async(T.InitializeParams(
        capabilities=T.ClientCapabilities(), root_uri=gen.as_uri(),
        initialization_options={"ruleFolders": [str(f) for f in folders],
                                **({"lintDelayMs": _DELAY[0]} if _DELAY else {})}))
    client.initialized(T.InitializedParams())

    async def until(pred, since: float) -> float | None:
        end = time.perf_counter() + timeout
        seen = 0
        while time.perf_counter() < end:
            while seen < len(events):
                t, p = events[seen]
                seen += 1
                if t >= since and pred(p):
                    return round(t - since, 2)
            await asyncio.sleep(0.02)
        return None

    lint_codes = {"RK303", "RK304", "RK305", "RK306", "RK307"}
    out: dict = {}
    out["lsp_publish"] = await until(lambda p: True, start)
    out["lsp_lint"] = await until(lambda p: any(str(d.code) in lint_codes for d in p.diagnostics), start)
    if out["lsp_lint"] is not None:
        f, rule = _overlapping_rule(gen, 1)
        uri = f.resolve().as_uri()
        text = f.read_text()
        # the first lint's findings are published file by file: the edit comes once the
        # server has been quiet for QUIET_S (an editing user meets a settled server)
        while events and time.perf_counter() - events[-1][0] < QUIET_S:
            await asyncio.sleep(0.1)
        client.text_document_did_open(T.DidOpenTextDocumentParams(text_document=T.TextDocumentItem(
            uri=uri, language_id="toml", version=1, text=text)))
        await asyncio.sleep(1.0)
        t0 = time.perf_counter()
        client.text_document_did_change(T.DidChangeTextDocumentParams(
            text_document=T.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[T.TextDocumentContentChangeWholeDocument(text=text + rule)]))
        out["lsp_relint"] = await until(lambda p: p.uri == uri and any(
            str(d.code) in ("RK306", "RK307") and "ScaleBenchOverlap1" in d.message for d in p.diagnostics), t0)
    else:
        out["lsp_relint"] = None
    try:
        await asyncio.wait_for(client.shutdown_async(None), 30)
        client.exit(None)
        await asyncio.wait_for(client.stop(), 30)
    except Exception:  # noqa: BLE001 - a server busy past the timeout: stop it
        pass
    return out


def lsp(folders: list[Path], gen: Path, env: dict[str, str], timeout: float) -> dict:
    return asyncio.run(_lsp(folders, gen, env, timeout))


# ---- one size ------------------------------------------------------------------------------------------

def measure(n: int, code: Path | None, timeout: float, only: set[str]) -> dict:
    from rulekit.rules.loader import bundled_rules_path

    gen = vendor_corpus.generate(HERE / ".data" / f"vendor_{n}", n)
    bundled = Path(bundled_rules_path()) if code is None else code / "bundled_rules"
    paths = [str(bundled), str(gen)]
    row: dict = {"generated": n}
    cold = Path(tempfile.mkdtemp(prefix="rulekit-scale-"))
    try:
        def want(c: str) -> bool:
            return not only or c in only or c.split("_")[0] in only

        if want("check"):
            r = run(rulekit("check", *paths), _env(code, cold / "check"), timeout)
            row["check"] = r
        if want("lint_cold") or want("lint_memo"):
            env = _env(code, cold / "lint")
            r = run(rulekit("lint", *paths, "--no-tests", "--no-cost", "--format", "json"), env, timeout)
            row["lint_cold"] = r
            row["lint_findings_cold"] = lint_summary(r["stdout"])
            if r["status"] != "timeout":
                r2 = run(rulekit("lint", *paths, "--no-tests", "--no-cost", "--format", "json"), env, timeout)
                row["lint_memo"] = r2
                row["lint_findings_memo"] = lint_summary(r2["stdout"])
        if want("test"):
            env = _env(code, cold / "check")
            row["test"] = run(rulekit("test", *paths), env, timeout)
        if want("attr_cold") or want("attr_warm"):
            env = _env(code, cold / "attr")
            args = ["attribute", str(EXAMPLE), "--rules", paths[0], "--rules", paths[1], "--format", "json"]
            row["attr_cold"] = run(rulekit(*args), env, timeout)
            row["attr_warm"] = run(rulekit(*args), env, timeout)
            try:
                res = json.loads(row["attr_warm"]["stdout"])
                if isinstance(res, list):  # `attribute --format json` prints one result per job folder
                    res = res[0] if res else {}
                row["attr_verdict"] = [res.get("outcome"), (res.get("root_cause") or {}).get("symptom")]
            except ValueError:
                row["attr_verdict"] = None
        if want("lsp"):
            t = time.perf_counter()
            row.update(lsp([bundled, gen], gen, _env(code, cold / "lsp"), timeout))
            row["lsp_total_s"] = round(time.perf_counter() - t, 1)
    finally:
        shutil.rmtree(cold, ignore_errors=True)
    for r in row.values():
        if isinstance(r, dict):
            r.pop("stdout", None)
    return row


def _secs(v) -> float | None:
    if isinstance(v, dict):
        return None if v.get("status") == "timeout" else v.get("s")
    return v


def _cpu(v) -> float | None:
    """CPU seconds (user + system) of a command: what it costs, however loaded the machine."""
    if isinstance(v, dict) and v.get("status") != "timeout":
        return v.get("cpu_s")
    return None


def table(rows: list[dict], bundled_n: int, timeout: float) -> str:
    head = ["N (bundled+gen)"] + COLUMNS
    lines = [" | ".join(head), " | ".join("---" for _ in head)]
    prev = None
    for row in rows:
        n = bundled_n + row["generated"]
        cells = [f"{n:,} ({row['generated']:,})"]
        for c in COLUMNS:
            v = row.get(c)
            if v is None and c not in row:
                cells.append("")
                continue
            s = _secs(v)
            cell = f">{timeout:g}" if s is None else f"{s:.2f}"
            if isinstance(v, dict) and v.get("cpu_s") is not None and s is not None:
                cell += f" [{v['cpu_s']:.1f} cpu]"
            if isinstance(v, dict) and v.get("rss_mb"):
                cell += f" ({v['rss_mb']:.0f} MiB)"
            cells.append(cell)
        lines.append(" | ".join(cells))
        if prev is not None:
            pn = bundled_n + prev["generated"]
            ex = [f"k {pn:,}->{n:,}"]
            for c in COLUMNS:
                a, b = _secs(prev.get(c)), _secs(row.get(c))
                if a and b and a > 0:
                    ex.append(f"{math.log(b / a) / math.log(n / pn):.2f}")
                elif a and c in row and b is None:
                    ex.append(f">={math.log(timeout / a) / math.log(n / pn):.2f}")
                else:
                    ex.append("")
            lines.append(" | ".join(ex))
            ex = [f"k cpu {pn:,}->{n:,}"]
            for c in COLUMNS:
                a, b = _cpu(prev.get(c)), _cpu(row.get(c))
                ex.append(f"{math.log(b / a) / math.log(n / pn):.2f}" if a and b else "")
            lines.append(" | ".join(ex))
        prev = row
    if len(rows) > 1:
        first, last = rows[0], rows[-1]
        ratio = [f"ratio {bundled_n + last['generated']:,}/{bundled_n + first['generated']:,}"]
        for c in COLUMNS:
            a, b = _secs(first.get(c)), _secs(last.get(c))
            ca, cb = _cpu(first.get(c)), _cpu(last.get(c))
            cell = f"{b / a:.1f}x" if a and b else ""
            if ca and cb:
                cell += f" [{cb / ca:.1f}x cpu]"
            ratio.append(cell)
        lines.append(" | ".join(ratio))
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="500,2000,5000")
    ap.add_argument("--timeout", type=float, default=1800.0)
    ap.add_argument("--code", type=Path, default=None, help="the checkout whose rulekit to run (default: this one)")
    ap.add_argument("--only", default="", help="comma-separated columns (check, lint, test, attr, lsp)")
    ap.add_argument("--json", type=Path, default=None, help="also write the rows as JSON here")
    ap.add_argument("--lint-delay-ms", type=int, default=None,
                    help="the language server's lint delay after an edit (default: the server's, 750 ms)")
    args = ap.parse_args()
    if args.lint_delay_ms is not None:
        _DELAY.append(args.lint_delay_ms)
    only = {c for c in args.only.split(",") if c}
    if args.code is not None:
        _CODE.append(args.code.resolve())
    from rulekit.analysis.lint import _lint_rules
    from rulekit.rules.loader import bundled_rules_path, load_corpus

    bundled_n = len(_lint_rules(load_corpus([bundled_rules_path()] if args.code is None
                                            else [args.code / "bundled_rules"])))
    rows = []
    for n in (int(x) for x in args.sizes.split(",")):
        t = time.perf_counter()
        rows.append(measure(n, args.code.resolve() if args.code else None, args.timeout, only))
        print(f"# {n} generated rules measured in {time.perf_counter() - t:.0f} s: "
              + json.dumps(rows[-1]), file=sys.stderr, flush=True)
    print(f"corpus_scale: code {args.code or ROOT}, load average {os.getloadavg()[0]:.2f}, {os.cpu_count()} CPUs, "
          f"bundled extractors {bundled_n}, lsp lint delay "
          f"{str(args.lint_delay_ms) + ' ms' if args.lint_delay_ms is not None else 'the default (750 ms)'}")
    print(table(rows, bundled_n, args.timeout))
    for row in rows:
        for k in ("lint_findings_cold", "lint_findings_memo"):
            if row.get(k):
                print(f"{row['generated']:>5} {k}: {row[k]}")
        if row.get("lint_findings_cold") and row.get("lint_findings_memo"):
            same = row["lint_findings_cold"] == row["lint_findings_memo"]
            print(f"{row['generated']:>5} lint findings cold == memo: {'yes' if same else 'NO: they differ'}")
        if row.get("attr_verdict"):
            print(f"{row['generated']:>5} attribute verdict: {row['attr_verdict']}")
    if args.json:
        args.json.write_text(json.dumps({"bundled": bundled_n, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
