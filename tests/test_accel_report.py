"""rulekit.extract.accel_report and Accelerator.analysis: the data lint renders as
RK303 (unfilterable), RK304 (weak key), RK305 (broad), RK306 (overlap),
RK307 (subsumed) and RK308 (cost)."""
from __future__ import annotations

from rulekit.extract.accel import Accelerator
from rulekit.extract.accel_report import analyze, pattern_costs, sample_report

SAMPLE = (
    b"iteration 10 | lm loss: 2.0 | number of nan iterations: 0 |\n" * 40
    + b"torch.distributed init timeout=0:30:00\n" * 5
    + b"RuntimeError: CUDA error: out of memory\n"
    + b"UserWarning: deprecated\n"
)
PATTERNS = [
    r"number of nan iterations: +[1-9]\d*",  # 0 weak key
    r"^[EF]\d{4} ",  # 1 unfilterable
    r"(?i)\btimed? ?out\b",  # 2 broad
    r"\bRuntimeError: (?P<msg>.*)",  # 3
    r"\w+Error:",  # 4 co-fires with 3 and subsumes it on this sample
    r"CUDA error: out of memory",  # 5
    r"NVRM: Xid \(PCI:[0-9a-f:.]+\): 79,",  # 6 never hit
]


def test_analysis_flags():
    acc = Accelerator(PATTERNS, sample=SAMPLE, backend="re2")
    a = acc.analysis
    assert a[0].weak_key and a[0].key_sample_rate > 0.5 and a[0].prefilterable
    assert not a[1].prefilterable and a[1].key is None and "literal" in a[1].reason
    assert a[6].key_text == "nvrm: xid (pci:" and not a[6].weak_key and a[6].engine == "re2"
    assert all(x.gate_form for x in a)


def test_sample_report():
    rep = sample_report(PATTERNS, SAMPLE, extra_lines=["E1130 12:00:00 boom"])
    assert rep.sample_lines == 47 and rep.lines == 48
    assert rep.hits[1] == 1 and rep.sample_hits[1] == 0
    assert rep.broad() == [2, 3, 4, 5]  # 1/47 > 0.1 %: on a tiny sample one line is broad
    assert rep.broad(0.05) == [2]
    pairs = {(o.a, o.b): o for o in rep.overlaps}
    assert pairs[(3, 4)].lines == 1 and pairs[(3, 4)].witness == "RuntimeError: CUDA error: out of memory"
    assert (3, 4) in rep.subsumed and (4, 3) in rep.subsumed and (5, 3) in rep.subsumed
    assert rep.never_hit == [0, 6]


def test_analyze_fills_broad_rate():
    got = analyze(PATTERNS, SAMPLE)
    assert abs(got[2].broad_rate - 5 / 47) < 1e-9 and got[6].broad_rate == 0.0


def test_costs_rank_a_slow_pattern_higher():
    slow = r"(?:\w+\s*){1,20}:\s*(?:[a-z]+\s*){1,20}=\s*\d+"
    costs = pattern_costs([r"Xid 79", slow], SAMPLE * 20)
    assert costs[1] > costs[0] > 0


def test_broad_rate_measured_at_construction():
    acc = Accelerator(PATTERNS, sample=SAMPLE, backend="re2")
    assert abs(acc.analysis[2].broad_rate - 5 / 47) < 1e-9 and acc.analysis[6].broad_rate == 0.0
    assert Accelerator(PATTERNS, sample=b"", backend="re2").analysis[2].broad_rate is None
