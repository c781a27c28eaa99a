"""A very long log line: read, scanned and attributed in memory bounded by about twice
the line (the chunk holding it, plus one working copy: RE2's own, or the line's text),
with the same hits, captures and verdict as on ordinary lines.

- `iter_chunks` gives the chunks it always gave (a block completed to its line's end)
  without joining pieces of a long line;
- the scanner confirms a long line in place (a view, and RE2's UTF-8 mode on its bytes
  when it is valid UTF-8) with exactly the naive loop's hits, whatever the backend;
- rules read the first `RULE_TEXT_BYTES` of a longer line as its text, and the result
  says so (`limits_hit`);
- `rulekit attribute` on a job with one 64 MiB line: peak RSS at most the same job's
  with the bytes in ordinary lines plus twice the line (a child process; its peak from
  `getrusage` of a fresh parent's children).
"""
from __future__ import annotations

import functools
import io
import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from rulekit.extract.accel import Accelerator, _lower, hyperscan_available
from rulekit.extract.scan import RULE_TEXT_BYTES, NaiveScanner, decode_line, iter_chunks, line_text, rule_text
from rulekit.extract.spans import LINE_STEP, LONG_LINE, span_is_utf8, span_isascii

ROOT = Path(__file__).resolve().parent.parent
FIX = Path(__file__).parent / "fixtures" / "accel"
PATTERNS = [p for p in (FIX / "patterns.txt").read_text("utf-8").split("\n") if p]
BACKENDS = ["re2"] + (["hyperscan"] if hyperscan_available() else [])
EXAMPLE = ROOT / "examples" / "xid149-nvlink"
MiB = 1 << 20


def _joined_chunks(data: bytes, size: int) -> list[bytes]:
    """The chunks as `iter_chunks` made them before: a block plus `readline()`."""
    f, out = io.BytesIO(data), []
    while True:
        b = f.read(size)
        if not b:
            return out
        if not b.endswith(b"\n"):
            b += f.readline()
        out.append(b)


@pytest.mark.parametrize("size", [1, 5, 4096, LINE_STEP - 1, LINE_STEP, 3 * LINE_STEP])
def test_chunks_of_long_lines_are_the_chunks_of_a_joined_read(size):
    data = b"a\n" + b"x" * (3 * LINE_STEP + 7) + b"\nb\n" + b"y" * (2 * LINE_STEP) + b"\n\n" + b"z" * LINE_STEP
    got = list(iter_chunks(io.BytesIO(data), size))
    assert got == _joined_chunks(data, size)
    assert b"".join(got) == data


def test_line_text_and_helpers_agree_with_the_copying_forms():
    line = ("█▌ step 1 " * (LONG_LINE // 5)).encode() + b"\r"
    assert line_text(line, 0, len(line)) == decode_line(line)
    assert line_text(b"ab\r", 0, 3) == "ab"
    bad = line[:-1] + b"\xff\xc3"
    assert line_text(bad, 0, len(bad)) == bad.decode("utf-8", "replace")
    assert span_is_utf8(line, 0, len(line)) and not span_is_utf8(bad, 0, len(bad))
    assert not span_is_utf8(line, 1, len(line))  # (starts inside a character)
    assert span_isascii(b"x" * (3 * LINE_STEP), 0, 3 * LINE_STEP)
    assert not span_isascii(b"x" * (3 * LINE_STEP) + "é".encode(), 0, 3 * LINE_STEP + 2)
    mixed = b"AbC" * LONG_LINE
    assert _lower(mixed, 1, len(mixed) - 1) == mixed[1:-1].lower()
    long = b"x" * (RULE_TEXT_BYTES + 10)
    assert rule_text(long, 0, len(long)) == "x" * RULE_TEXT_BYTES
    assert rule_text(b"short\r", 0, 6) == "short"


PADS = {
    "utf8": "█▌ prog ".encode() * (LONG_LINE // 12 + 1),  # valid UTF-8 (RE2's UTF-8 mode on the bytes)
    "ascii": b"plain ascii " * (LONG_LINE // 12 + 1),  # ASCII (the bytes twin on a view)
    "invalid": b"\xff\xfe bad " * (LONG_LINE // 10 + 1),  # invalid UTF-8 (decoded with replacement)
}


@functools.lru_cache(maxsize=None)
def _long_case(pad: str, crlf: bool) -> tuple[bytes, list]:
    """Each fixture line made longer than LONG_LINE, at its end or at its start (anchors,
    `$`), and the naive loop's hits on them."""
    lines = (FIX / "edge.log").read_bytes().split(b"\n")
    body = PADS[pad]
    data = b"\n".join(ln + b" " + body if k % 2 else body + b" " + ln for k, ln in enumerate(lines)) + b"\n"
    if crlf:
        data = data.replace(b"\n", b"\r\n")
    return data, NaiveScanner(PATTERNS).scan(data)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("pad,crlf", [("utf8", False), ("ascii", False), ("invalid", False), ("utf8", True)])
def test_long_lines_have_the_naive_hits(backend, pad, crlf):
    data, want = _long_case(pad, crlf)
    assert len({h[2] for h in want}) > 20  # most of the fixture patterns fire on the long lines
    assert Accelerator(PATTERNS, backend=backend).scan(data) == want


def _job(dest: Path, size: int, one_line: bool) -> Path:
    """The example with `size` bytes before its application log: one line, or the same
    text in ordinary lines.  The text is a progress bar with rank and loss counters
    (non-ASCII: its str would take twice its bytes), ending in an error word (the
    generic error-line rule reads that line)."""
    shutil.copytree(EXAMPLE, dest)
    unit = ("3: 42%|████▌     | 420/1000 [00:42<00:58, loss=2.0] " * 40).encode()
    sep = b" " if one_line else b"\n"
    piece = sep.join([unit] * 64) + sep
    tail = b"3: step 420 retry failed once\n"
    reps = (size - len(tail)) // len(piece)
    with open(dest / "applog" / "train.log", "wb") as out:
        for _ in range(reps):
            out.write(piece)
        out.write(b"x" * (size - len(tail) - reps * len(piece)) + tail)
        out.write((EXAMPLE / "applog" / "train.log").read_bytes())
    return dest


_MEASURE = textwrap.dedent("""
    import json, resource, subprocess, sys
    p = subprocess.run([sys.argv[1], "attribute", sys.argv[2], "--format", "json"], capture_output=True, text=True)
    print(json.dumps([p.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, p.stdout, p.stderr]))
""")


def _attribute(job: Path) -> tuple[float, dict]:
    """(peak RSS in MiB of `rulekit attribute` on `job`, its result): run from a fresh
    parent, whose children are that command alone."""
    out = subprocess.run([sys.executable, "-c", _MEASURE, str(ROOT / ".venv" / "bin" / "rulekit"), str(job)],
                         capture_output=True, text=True, check=True, timeout=600)
    rc, maxrss, stdout, stderr = json.loads(out.stdout)
    assert rc in (0, 1), stderr[-2000:]
    return maxrss / 1024, json.loads(stdout)[0]


def test_a_64_mib_line_costs_at_most_twice_its_size(tmp_path):
    size = 64 * MiB
    base_peak, base = _attribute(_job(tmp_path / "lines", size, one_line=False))
    peak, got = _attribute(_job(tmp_path / "one", size, one_line=True))
    assert got["root_cause"]["symptom"] == base["root_cause"]["symptom"] == "XID-149-NVLINK_SIGNAL_INTEGRITY"
    assert got["root_cause"]["node"] == "node-02" and got["outcome"] == base["outcome"]
    cut = [x for x in got.get("limits_hit", []) if x["limit"] == "line_text_bytes"]
    assert cut and "applog/train.log:1" in cut[0]["what"], got.get("limits_hit")
    assert not [x for x in base.get("limits_hit", []) if x["limit"] == "line_text_bytes"]
    # before: 5-8 times the line over the baseline (readline and join, a copy per candidate
    # rule, the decoded text and pyre2's UTF-8 copy of it, a decode per hit)
    assert peak - base_peak <= 2 * size / MiB, (peak, base_peak)


def test_a_line_opening_with_thousands_of_digits_is_no_rank(tmp_path):
    """`12: ` is an `srun -l` rank prefix; 5,000 digits are none (they made `int()` raise,
    and `rulekit attribute` stop with an internal error)."""
    from rulekit.extract.hitfacts import chunk_facts
    from rulekit.extract.linectx import rank_of, rank_of_raw

    digits = "1" * 5000
    assert rank_of(digits + ": x") is None and rank_of_raw(digits.encode() + b": x") is None
    assert rank_of("12: x") == 12 and rank_of_raw(b"[rank7]: x") == 7
    chunk = b"00:00:01 clock\n" + digits.encode() + b": 00:00:02 error\n"
    assert chunk_facts(chunk, [(15, len(chunk) - 1, 0, {})], None)[1][0][2] is None
    job = shutil.copytree(EXAMPLE, tmp_path / "job")
    app = job / "applog" / "train.log"
    app.write_bytes(digits.encode() + b": RuntimeError: CUDA error: an illegal memory access was encountered\n"
                    + app.read_bytes())
    p = subprocess.run([str(ROOT / ".venv" / "bin" / "rulekit"), "attribute", str(job), "--format", "json"],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode in (0, 1), p.stderr[-2000:]
    assert json.loads(p.stdout)[0]["root_cause"]["symptom"] == "XID-149-NVLINK_SIGNAL_INTEGRITY"
