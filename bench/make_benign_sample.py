"""Regenerate rulekit/data/benign_sample.log: the small benign training-log sample
shipped in the package, used to rank prefilter key literals by rarity (and by lint
for broad/overlap checks).  Deterministic (seed 7, different from the benchmark
corpus seed).  Run: .venv/bin/python bench/make_benign_sample.py
Writes only that one file.
"""
from __future__ import annotations

import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import benign_line  # noqa: E402

TARGET_BYTES = 256 * 1024


def main() -> None:
    rng = random.Random(7)
    out = Path(__file__).resolve().parents[1] / "rulekit" / "data" / "benign_sample.log"
    lines, size = [], 0
    while size < TARGET_BYTES:
        line = benign_line(rng)
        lines.append(line)
        size += len(line.encode("utf-8")) + 1
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {out} ({size} bytes, {len(lines)} lines)")


if __name__ == "__main__":
    main()
