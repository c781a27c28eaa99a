"""The language server's warm re-lint after one edit, in process: what the server runs
after an edit (`Corpus.update`, its diagnostics, then `lint_job().run()`), timed in CPU
seconds (load-independent on a shared machine) and wall seconds, over the bundled corpus
plus N generated vendor-style rules (bench/vendor_corpus.py): the load, the first
(cold) lint, then three edits of one file (add a rule overlapping another, change it,
undo).  No lint memo on disk (a fresh cache folder).

    .venv/bin/python bench/lsp_relint.py N      (N: 500, 2000, 5000; corpora under bench/.data)
"""
import sys, time, os, tempfile
os.environ["RULEKIT_CACHE_DIR"] = tempfile.mkdtemp(prefix="rk-relint-")
from pathlib import Path
HERE = Path(__file__).resolve().parent
from rulekit_lsp.workspace import Corpus
from rulekit_lsp.settings import Settings
from rulekit.rules.loader import bundled_rules_path
sys.path.insert(0, str(HERE))
import corpus_scale
n = int(sys.argv[1])
gen = corpus_scale.vendor_corpus.generate(HERE / ".data" / f"vendor_{n}", n)
c0 = time.process_time(); t0 = time.perf_counter()
c = Corpus([str(gen)], Settings(), context=[str(bundled_rules_path())])
c.diagnostics_by_file()
print(f"load + first diagnostics: {time.process_time() - c0:.2f} cpu s ({time.perf_counter() - t0:.1f} s)", flush=True)
c0 = time.process_time(); t0 = time.perf_counter()
d1 = c.lint_job().run()
print(f"first lint: {time.process_time() - c0:.2f} cpu s ({time.perf_counter() - t0:.1f} s), {len(d1)} findings", flush=True)
f, rule = corpus_scale._overlapping_rule(gen, 1)
text = f.read_text()
for what, txt in [("add an overlapping rule", text + rule),
                  ("widen its tail", text + rule.replace("(?P<tail>.*)", "(?P<tail>.+)")),
                  ("undo", text)]:
    c0 = time.process_time(); t0 = time.perf_counter()
    c.update(str(f), txt, version=2)
    c.diagnostics_by_file()
    c1 = time.process_time()
    d2 = c.lint_job().run()
    print(f"edit ({what}): analysis {c1 - c0:.2f} cpu s, re-lint {time.process_time() - c1:.2f} cpu s "
          f"({time.perf_counter() - t0:.1f} s wall), {len(d2)} findings, "
          f"{sum('ScaleBenchOverlap1' in x.message for x in d2)} of the new rule", flush=True)
