"""Extraction benchmark: the acceleration structure against naive loops, ripgrep and grep.

    .venv/bin/python bench/extraction.py [--size-mb 200] [--slice-mb 4] [--seed 42]

Generates (once, cached under bench/.data/, git-ignored) a reproducible corpus of
realistic benign training-log lines with ~0.1 % signal lines, takes the bundled
rules' extractor patterns (through rulekit.rules.loader when it loads; else the raw
`match_re` strings of bundled_rules/*.toml; else none, and says which) plus 604
generated extractor-like rules, and in one run measures on one core:

- naive Python `re` (every rule on every line) on a slice, extrapolated;
- naive pyre2 (scan.NaiveScanner, the differential reference) on the slice;
- the fast path: pyre2 gate + Aho-Corasick (and Hyperscan when importable);
- `rg --no-unicode -c -f` and `LC_ALL=C grep -E -c -f` over the same patterns
  (translated to their syntax; ripgrep installed with apt-get when missing and root);

prints MB/s (MiB/s) with ratios vs rg and vs naive, checks the fast path's hits
equal NaiveScanner's on the slice, and that rg/grep count the same matching lines
as the fast path over the whole corpus.  Not part of `make test`.
"""
from __future__ import annotations

import argparse
import io
import json
import os
import re
import shutil
import subprocess
import sys
import time
import tomllib
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))

from corpus import generated_rules, write_corpus  # noqa: E402
from rulekit.extract import literals as L  # noqa: E402
from rulekit.extract.scan import NaiveScanner, iter_chunks, iter_lines, decode_line  # noqa: E402

MiB = 1 << 20


# ---- patterns -------------------------------------------------------------------------

def bundled_patterns() -> tuple[list[str], str]:
    try:
        from rulekit.rules.loader import load_corpus
        from rulekit.rules.model import ExtractorRule

        res = load_corpus()
        pats = [r.match_re for r in res.ruleset.rules if isinstance(r, ExtractorRule)]
        if pats:
            return pats, f"rulekit.rules.loader ({len(pats)} extractor patterns, corpus {'ok' if res.ok else 'with errors'})"
        raise RuntimeError("loader returned no extractors")
    except Exception as e:  # the loader may not exist yet or may fail on a work-in-progress corpus
        why = f"{type(e).__name__}: {str(e)[:80]}"
    pats: list[str] = []

    def walk(o):
        if isinstance(o, dict):
            for k, v in o.items():
                if k == "match_re" and isinstance(v, str):
                    pats.append(v)
                else:
                    walk(v)
        elif isinstance(o, list):
            for v in o:
                walk(v)
    for f in sorted((ROOT / "bundled_rules").glob("*.toml")):
        if f.name.endswith(".test.toml"):
            continue
        try:
            walk(tomllib.loads(f.read_text("utf-8")))
        except Exception:
            continue
    from rulekit.extract.regex import check_pattern
    pats = [p for p in pats if "${" not in p and not check_pattern(p)]
    if pats:
        return pats, f"raw match_re of bundled_rules/*.toml ({len(pats)}; loader unavailable: {why})"
    return [], f"none (loader unavailable: {why}; no raw patterns)"


# ---- syntax translation for grep -E / rg ------------------------------------------------

class _Ere:
    """Exact translation of a rule regex (parse tree) to POSIX ERE (GNU grep) or
    Rust regex (rg) syntax; case-insensitivity is spelled out as [aA]."""

    def __init__(self, dialect: str):
        self.rust = dialect == "rust"

    def pattern(self, p: str) -> str | None:
        tree = L.parse(p)
        if tree is None:
            return None
        self.icase = bool(tree.state.flags & re.IGNORECASE)
        self.dotall = bool(tree.state.flags & re.DOTALL)
        try:
            return self.seq(list(tree))
        except ValueError:
            return None

    def seq(self, items):
        return "".join(self.item(op, av) for op, av in items)

    def lit(self, c: int) -> str:
        ch = chr(c)
        if self.icase and ch.isascii() and ch.isalpha():
            return "[" + ch.lower() + ch.upper() + "]"
        if ch in ".[]()*+?{}|^$\\":
            return "\\" + ch
        if not ch.isascii():
            if self.rust:
                return ch
            raise ValueError("non-ASCII")
        return ch

    def item(self, op, av):
        if op is L.LITERAL:
            return self.lit(av)
        if op is L.NOT_LITERAL:
            return self.klass([(L.NEGATE, None), (L.LITERAL, av)])
        if op is L.ANY:
            return "(?s:.)" if (self.dotall and self.rust) else "."
        if op is L.IN:
            return self.klass(av)
        if op is L.BRANCH:
            return "(" + "|".join(self.seq(a) for a in av[1]) + ")"
        if op is L.SUBPATTERN:
            _g, add, dele, p = av
            saved = self.icase
            if add & re.IGNORECASE:
                self.icase = True
            if dele & re.IGNORECASE:
                self.icase = False
            try:
                return "(" + self.seq(p) + ")"
            finally:
                self.icase = saved
        if op in (L.MAX_REPEAT, L.MIN_REPEAT):
            lo, hi, p = av
            inner = "(" + self.seq(p) + ")"
            if hi is L.sre_parse.MAXREPEAT:
                return inner + ("*" if lo == 0 else "+" if lo == 1 else "{%d,}" % lo)
            return inner + ("?" if (lo, hi) == (0, 1) else "{%d}" % lo if lo == hi else "{%d,%d}" % (lo, hi))
        if op is L.AT:
            name = str(av)
            return {"AT_BEGINNING": "^", "AT_BEGINNING_STRING": "^", "AT_END": "$", "AT_END_STRING": "$",
                    "AT_BOUNDARY": r"\b", "AT_NON_BOUNDARY": r"\B"}[name]
        raise ValueError(str(op))

    def klass(self, items):
        neg = False
        singles: set[str] = set()
        ranges: list[tuple[str, str]] = []
        named: list[str] = []
        special: list[str] = []
        for op, av in items:
            if op is L.NEGATE:
                neg = True
            elif op is L.LITERAL:
                ch = chr(av)
                if not ch.isascii():
                    raise ValueError("non-ASCII in class")
                singles.add(ch)
                if self.icase and ch.isalpha():
                    singles.add(ch.swapcase())
            elif op is L.RANGE:
                lo, hi = av
                if hi > 127:
                    raise ValueError("non-ASCII range")
                ranges.append((chr(lo), chr(hi)))
                if self.icase:
                    for a, z in ((97, 122), (65, 90)):
                        s, e = max(lo, a), min(hi, z)
                        if s <= e:
                            ranges.append((chr(s).swapcase(), chr(e).swapcase()))
            elif op is L.CATEGORY:
                name = str(av)
                m = {"CATEGORY_DIGIT": "[:digit:]", "CATEGORY_WORD": "[:alnum:]_", "CATEGORY_SPACE": "[:space:]"}
                if name in m:
                    named.append(m[name])
                else:
                    special.append({"CATEGORY_NOT_DIGIT": "[^0-9]", "CATEGORY_NOT_WORD": "[^[:alnum:]_]",
                                    "CATEGORY_NOT_SPACE": "[^[:space:]]"}[name])
            else:
                raise ValueError(str(op))
        if special:
            if neg:
                raise ValueError("negated class with negated category")
            if singles or ranges or named:
                special.insert(0, self.klass([x for x in items if not (x[0] is L.CATEGORY and "NOT" in str(x[1]))]))
            return special[0] if len(special) == 1 else "(" + "|".join(special) + ")"
        singles.discard("\n")  # lines never hold a newline: [^\n] is `.`
        if not (singles or ranges or named):
            if neg:
                return "."
            raise ValueError("class of only newline")
        if self.rust:
            esc = lambda c: "\\" + c if c in "[]\\-^&~" else ("\\x%02x" % ord(c) if ord(c) < 32 else c)  # noqa: E731
            body = "".join(esc(a) + "-" + esc(b) for a, b in ranges) + "".join(named) + "".join(esc(c) for c in sorted(singles))
        else:
            first = "]" if "]" in singles else ""
            last = "-" if "-" in singles else ""
            caret = "^" if "^" in singles else ""
            rest = "".join(sorted(singles - {"]", "-", "^"}))
            body = first + "".join(a + "-" + b for a, b in ranges) + "".join(named) + rest + caret + last
            if body == "^":
                return "\\^" if not neg else "[^^]"
        return "[" + ("^" if neg else "") + body + "]"


def translate(patterns: list[str], dialect: str) -> list[str]:
    tr = _Ere(dialect)
    out = []
    for p in patterns:
        t = tr.pattern(p)
        if t is None:
            raise SystemExit(f"cannot translate for {dialect}: {p!r}")
        out.append(t)
    return out


# ---- runners --------------------------------------------------------------------------

def run_naive_re(patterns, data: bytes) -> tuple[float, set]:
    comp = [re.compile(p) for p in patterns]
    hits = set()
    t = time.process_time()
    for s, e in iter_lines(data):
        line = decode_line(data[s:e])
        for i, rx in enumerate(comp):
            if rx.search(line):
                hits.add((s, i))
    return time.process_time() - t, hits


def run_scanner(scanner, path: Path | None = None, data: bytes | None = None, chunk=4 * MiB):
    """(CPU seconds, result): CPU time, not wall time, so that other processes on a
    shared machine do not distort the comparison (all runs are single-threaded)."""
    hits = 0
    lines: set = set()
    out = []
    t = time.process_time()
    if data is not None:
        off = 0
        for ch in iter_chunks(io.BytesIO(data), chunk):
            for s, e, i, gd in scanner.scan(ch):
                out.append((s + off, i, tuple(sorted(gd.items(), key=lambda kv: kv[0]))))
            off += len(ch)
        return time.process_time() - t, out
    off = 0
    with open(path, "rb") as f:
        for ch in iter_chunks(f, chunk):
            for s, e, i, gd in scanner.scan(ch):
                hits += 1
                lines.add(s + off)
            off += len(ch)
    return time.process_time() - t, (hits, len(lines))


def ensure_rg() -> str | None:
    rg = shutil.which("rg")
    if rg:
        return rg
    if os.geteuid() == 0 and shutil.which("apt-get"):
        print("ripgrep missing: apt-get install -y ripgrep", flush=True)
        subprocess.run(["apt-get", "install", "-y", "-q", "ripgrep"], stdout=subprocess.DEVNULL)
        if not shutil.which("rg"):
            subprocess.run(["apt-get", "update", "-q"], stdout=subprocess.DEVNULL)
            subprocess.run(["apt-get", "install", "-y", "-q", "ripgrep"], stdout=subprocess.DEVNULL)
    return shutil.which("rg")


def run_cli(cmd: list[str], env=None) -> tuple[float, int]:
    """(CPU seconds of the child, count printed)."""
    import resource
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run(["taskset", "-c", "0", *cmd] if shutil.which("taskset") else cmd,
                       capture_output=True, text=True, env=env)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    dt = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if p.returncode not in (0, 1):
        raise RuntimeError(f"{cmd[0]} failed: {p.stderr[:300]}")
    return dt, int(p.stdout.strip() or 0)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size-mb", type=int, default=200)
    ap.add_argument("--slice-mb", type=float, default=4.0, help="slice for the naive loops and the exactness check")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--repeat", type=int, default=2, help="runs per engine over the corpus; the best is kept")
    ap.add_argument("--json", type=Path, help="also write the results as JSON")
    args = ap.parse_args(argv)

    data_dir = HERE / ".data"
    data_dir.mkdir(exist_ok=True)
    size = args.size_mb * MiB
    gen = generated_rules()
    corpus = data_dir / f"corpus-{args.size_mb}MiB-seed{args.seed}.log"
    if not corpus.exists() or corpus.stat().st_size < size:
        t = time.perf_counter()
        n = write_corpus(corpus.with_suffix(".tmp"), size, seed=args.seed, rules=gen)
        corpus.with_suffix(".tmp").rename(corpus)
        print(f"generated {corpus.name}: {n:,} lines in {time.perf_counter() - t:.1f} s")
    total = corpus.stat().st_size
    with open(corpus, "rb") as f:
        slice_data = f.read(int(args.slice_mb * MiB))
    slice_data = slice_data[: slice_data.rfind(b"\n") + 1]

    bundled, source = bundled_patterns()
    patterns = bundled + [r.pattern for r in gen]
    print(f"rules: {len(bundled)} bundled from {source} + {len(gen)} generated = {len(patterns)}")
    print(f"corpus: {total / MiB:.0f} MiB; slice for naive loops: {len(slice_data) / MiB:.1f} MiB; one core")

    from rulekit.extract.accel import Accelerator, hyperscan_available

    results: dict[str, dict] = {}
    t = time.perf_counter()
    fast_re2 = Accelerator(patterns, backend="re2")
    build_re2 = time.perf_counter() - t
    backends = [("fast path: pyre2 gate + Aho-Corasick", fast_re2, build_re2)]
    if hyperscan_available():
        t = time.perf_counter()
        fast_hs = Accelerator(patterns, backend="hyperscan")
        backends.append(("fast path: Hyperscan (+pyre2 rest)", fast_hs, time.perf_counter() - t))
    unfilt = [a for a in fast_re2.analysis if not a.prefilterable]
    print(f"accelerator build: " + ", ".join(f"{n.split(': ')[1]} {b:.2f} s" for n, _s, b in backends)
          + f"; {len(unfilt)} rules not prefilterable on pyre2")

    # exactness on the slice: fast == NaiveScanner (pyre2 per line per rule)
    t_ref, ref = run_scanner(NaiveScanner(patterns), data=slice_data)
    results["naive pyre2 (NaiveScanner, slice)"] = {"mbps": len(slice_data) / MiB / t_ref}
    for name, sc, _b in backends:
        _t, got = run_scanner(sc, data=slice_data, chunk=1 * MiB)
        ok = got == ref
        print(f"exactness on slice ({len(ref)} hits): {name}: {'identical' if ok else 'DIFFERENT'}")
        if not ok:
            print("  missing:", sorted(set(ref) - set(got))[:5], " extra:", sorted(set(got) - set(ref))[:5])
            return 1
    t_re, re_hits = run_naive_re(patterns, slice_data)
    results["naive re (every rule, every line; slice, extrapolated)"] = {"mbps": len(slice_data) / MiB / t_re}
    if {(s, i) for s, i, _g in ref} != re_hits:
        print("note: Python re and RE2 disagree on the slice:", len(re_hits ^ {(s, i) for s, i, _ in ref}), "hits")

    fast_lines = None
    rg = ensure_rg()
    pat_rg = data_dir / "patterns_rg.txt"
    pat_ere = data_dir / "patterns_ere.txt"
    pat_rg.write_text("\n".join(translate(patterns, "rust")) + "\n")
    pat_ere.write_text("\n".join(translate(patterns, "ere")) + "\n")
    env = dict(os.environ, LC_ALL="C")
    runs = [(name, lambda sc=sc: run_scanner(sc, path=corpus)) for name, sc, _b in backends]
    if rg:
        runs.append(("rg --no-unicode -c -f", lambda: run_cli([rg, "--no-unicode", "-c", "-f", str(pat_rg), str(corpus)])))
    else:
        print("ripgrep not available (not root or no apt-get): rg column skipped")
    runs.append(("LC_ALL=C grep -E -c -f", lambda: run_cli(["grep", "-E", "-c", "-f", str(pat_ere), str(corpus)], env=env)))
    for _round in range(args.repeat):  # interleaved rounds, best kept: fair on a shared machine
        for name, fn in runs:
            dt, res = fn()
            if isinstance(res, tuple):
                nh, nl = res
                fast_lines = nl
            else:
                nh, nl = None, res
            prev = results.get(name)
            if prev is None or dt < prev["seconds"]:
                results[name] = {"mbps": total / MiB / dt, "seconds": dt, "hits": nh, "hit_lines": nl}

    rg_mbps = results.get("rg --no-unicode -c -f", {}).get("mbps")
    naive_mbps = results["naive re (every rule, every line; slice, extrapolated)"]["mbps"]
    print()
    print("MiB/s = corpus MiB per CPU second (one core; best of the interleaved rounds)")
    print(f"{'approach':58s} {'MiB/s':>9s} {'x naive':>9s} {'x rg':>7s} {'hit lines':>10s}")
    for name, r in results.items():
        xr = f"{r['mbps'] / rg_mbps:7.2f}" if rg_mbps else "      -"
        hl = r.get("hit_lines")
        print(f"{name:58s} {r['mbps']:9.1f} {r['mbps'] / naive_mbps:9.0f} {xr} {hl if hl is not None else '':>10}")
    for k in ("rg --no-unicode -c -f", "LC_ALL=C grep -E -c -f"):
        if k in results and fast_lines is not None and results[k]["hit_lines"] != fast_lines:
            print(f"note: {k} counted {results[k]['hit_lines']} matching lines, the fast path {fast_lines}")
    if args.json:
        args.json.write_text(json.dumps({"rules": len(patterns), "bundled_source": source, "bytes": total,
                                         "results": results}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
