"""CPU seconds of the attribution part (`Session.attribute()`: filters, refinement,
collection, report) against extraction, on the end-to-end benchmark's job
directories, optionally side by side with another checkout; and the store's own
cost per event: inserting the job's extracted events into a fresh store
(`EventManager.row` + `add` + `flush`, as extraction does) and reading them back
as one working set (the first read of an attribution).  A full collection after
`attribute()` is timed too (`attribute + gc`: what attribution leaves for the
collector), so that it lands in neither the attribution nor the insert figures.

    .venv/bin/python bench/attribution_cpu.py [--rates 20,realistic] [--size-mb 32] [--runs 3]
        [--baseline /other/checkout/.venv/bin/python]

Each measurement is a fresh interpreter (default settings: no RULEKIT_* variables)
that loads the bundled corpus, ingests the job directory (timed: extraction) and
attributes it (timed: attribution), in CPU seconds (`time.process_time`, which a
busy shared machine disturbs less than wall time).  With --baseline the other
interpreter (another checkout's venv: its own rulekit) runs the same job
directories interleaved with this one, and the result JSON of both must be the
same (a hash is compared).  Best of --runs per cell.  Job directories are the
ones `bench/attribute_vs_rg.py` builds (cached under bench/.data/vs_rg/).
Bounded: 2 rates x 3 runs x 2 interpreters of ~10 s each by default.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from attribute_vs_rg import DATA, REALISTIC_INJECT, build_job, corpus_material  # noqa: E402

MEASURE = r"""
import gc, hashlib, json, sys, time
import rulekit
from rulekit.api import setup_rules
from rulekit.engine.session import Session
from rulekit.engine.store import EventManager
from rulekit.inputs.jobdir import read_job_dir
engine = setup_rules()
jd = read_job_dir(sys.argv[1])
with Session(engine, jd.job) as s:
    t0 = time.process_time()
    s.ingest_batch(jd.observations)
    s.ingest_metrics(jd.metrics)
    t1 = time.process_time()
    result = s.attribute()
    t2 = time.process_time()
    gc.collect()  # what attribution left for the collector, counted (`attribute_gc`), not left to the insert below
    t2gc = time.process_time()
    events = s.manager.count(s.context_id)
    s.manager.restore(s.context_id)  # the extracted events again (attribution changed them)
    extracted = [(e.event_type, e.rule, e.timestamp, e.line_num, e.datum, e.node, e.symptom, dict(e.fields))
                 for e in s.manager.stream(s.context_id).all()]
# the store alone: the extracted events into a fresh store (default settings), then one working set
o = engine.options
m = EventManager(engine.rule_names(), buffer_size=o.buffer_size, spill_threshold=o.spill_rows,
                 spill_bytes=o.spill_bytes)
c = m.context("copy")
oc = m.observation_context(c, "applog", "text", None, None, "applog/copy.log")
t3 = time.process_time()
for etype, rule, ts, line, datum, node, symptom, fields in extracted:
    m.add(m.row(c, etype, rule, oc, ts, line, datum, node, symptom, fields))
m.flush()
t4 = time.process_time()
n = len(m.stream(c).all())
t5 = time.process_time()
assert n == len(extracted), (n, len(extracted))
m.close()
digest = hashlib.sha256(json.dumps(result, sort_keys=True, default=str).encode()).hexdigest()[:16]
print(json.dumps({"rulekit": rulekit.__file__, "extract": t1 - t0, "attribute": t2 - t1,
                  "attribute_gc": t2gc - t1, "events": events,
                  "result": digest, "stored": n, "insert_us": (t4 - t3) * 1e6 / max(n, 1),
                  "readback_us": (t5 - t4) * 1e6 / max(n, 1)}))
"""


def measure(python: str, job_dir: Path) -> dict:
    # -I: the interpreter's own rulekit, never one found in the current folder
    out = subprocess.run([python, "-I", "-c", MEASURE, str(job_dir.resolve())], capture_output=True, text=True,
                         timeout=600)
    if out.returncode != 0:
        raise SystemExit(f"{python} failed on {job_dir}:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def job_dir(rate: str, size_mb: float) -> Path:
    """The end-to-end benchmark's job directory for this rate (built and cached if missing)."""
    realistic = rate == "realistic"
    d = DATA / f"{'realistic' if realistic else 'rate' + rate}-{size_mb:g}MiB"
    if (d / ".complete").exists():
        return d
    return build_job(d.name, size_mb, REALISTIC_INJECT * 100 if realistic else float(rate), realistic,
                     corpus_material())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rates", default="20,realistic")
    ap.add_argument("--size-mb", type=float, default=32)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--baseline", help="another interpreter (checkout) to compare with, same run")
    args = ap.parse_args(argv)
    pythons = [("this", sys.executable)] + ([("baseline", args.baseline)] if args.baseline else [])
    print(f"attribution CPU seconds, best of {args.runs}; job dirs under {DATA}")
    print(f"{'rate':>10} {'events':>7} " + " ".join(f"{n + ' extract':>16} {n + ' attribute':>18}" for n, _ in pythons)
          + ("  attribute baseline/this" if args.baseline else ""))
    store_lines, gc_lines = [], []
    for rate in args.rates.split(","):
        d = job_dir(rate, args.size_mb)
        best: dict[str, dict] = {}
        for _ in range(args.runs):  # interleaved: both see the same machine state
            for label, py in pythons:
                m = measure(py, d)
                b = best.setdefault(label, m)
                for k in ("extract", "attribute", "attribute_gc", "insert_us", "readback_us"):
                    b[k] = min(b[k], m[k])
                if m["result"] != b["result"] or m["rulekit"] != b["rulekit"]:
                    raise SystemExit(f"{label}: results differ between runs on {d}")
        if args.baseline and best["this"]["rulekit"] == best["baseline"]["rulekit"]:
            raise SystemExit(f"the baseline imports the same rulekit ({best['this']['rulekit']})")
        if args.baseline and best["this"]["result"] != best["baseline"]["result"]:
            raise SystemExit(f"results differ from the baseline on {d}")
        cells = " ".join(f"{best[n]['extract']:>15.2f}s {best[n]['attribute']:>17.2f}s" for n, _ in pythons)
        ratio = f"  {best['baseline']['attribute'] / best['this']['attribute']:>10.2f}x" if args.baseline else ""
        print(f"{rate:>10} {best['this']['events']:>7} {cells}{ratio}")
        gc_lines.append(f"{rate:>10} " + " ".join(f"{n} {best[n]['attribute_gc']:.2f}s" for n, _ in pythons)
                        + (f"  {best['baseline']['attribute_gc'] / best['this']['attribute_gc']:.2f}x"
                           if args.baseline else ""))
        per = {n: best[n]["insert_us"] + best[n]["readback_us"] for n, _ in pythons}
        store_lines.append(f"{rate:>10} {best['this']['stored']:>7} " + " ".join(
            f"{best[n]['insert_us']:>11.2f} {best[n]['readback_us']:>13.2f} {per[n]:>9.2f}" for n, _ in pythons)
            + (f"  {per['baseline'] / per['this']:>10.2f}x" if args.baseline else ""))
    print("\nattribute + one full collection after it (what it left for the collector), CPU seconds")
    for line in gc_lines:
        print(line)
    print(f"\nstore CPU us per event (insert = row + add + flush; read back = one working set), best of {args.runs}")
    print(f"{'rate':>10} {'events':>7} " + " ".join(f"{n + ' insert':>11} {n + ' read back':>13} {'sum':>9}"
                                                  for n, _ in pythons)
          + ("  sum baseline/this" if args.baseline else ""))
    for line in store_lines:
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
