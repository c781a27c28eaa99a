"""rulekit.executors.allocator: after `keep_chunk_memory()` a process that reads log-sized
chunks one after another reuses their pages instead of faulting in new ones; the
user's own malloc settings stand.  Each case runs in a fresh interpreter (the
setting is the process's)."""
from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import textwrap

import pytest

glibc = pytest.mark.skipif(platform.system() != "Linux" or not platform.libc_ver()[0] == "glibc",
                           reason="mallopt's thresholds are glibc's")

PROBE = textwrap.dedent("""
    import json, os, resource, sys
    from rulekit.executors.allocator import keep_chunk_memory
    tuned = keep_chunk_memory() if sys.argv[1] == "tune" else None
    again = keep_chunk_memory() if sys.argv[1] == "tune" else None
    path = sys.argv[2]
    def faults():
        return resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    def chunk(f):  # what extraction does: a 4 MiB read, completed to a line end
        block = f.read(4 << 20)
        if len(block) < 4 << 20:
            f.seek(0)
            return
        block += f.readline()
    with open(path, "rb") as f:
        chunk(f)  # (the first one is new memory either way)
        before = faults()
        for _ in range(24):
            chunk(f)
        print(json.dumps({"tuned": tuned, "again": again, "faults": faults() - before}))
""")


def run(mode: str, path: str, **env: str) -> dict:
    e = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    e.update(env)
    out = subprocess.run([sys.executable, "-c", PROBE, mode, path], capture_output=True, text=True, env=e, check=True)
    return json.loads(out.stdout)


@pytest.fixture(scope="module")
def log(tmp_path_factory) -> str:
    p = tmp_path_factory.mktemp("alloc") / "train.log"
    line = b"[rank3]: 2026-12-02T10:00:00 step 1200 loss 2.3141 lr 3.0e-4 tokens/s 81234\n"
    p.write_bytes(line * ((9 << 20) // len(line)))  # 9 MiB: two full chunks and a short one
    return str(p)


@glibc
def test_chunks_reuse_their_pages(log):
    plain = run("plain", log)
    tuned = run("tune", log)
    assert tuned["tuned"] is True and tuned["again"] is True
    pages = (24 * (4 << 20)) // 4096  # what the chunks read are, in 4 KiB pages
    assert plain["faults"] > pages // 2  # the default: fresh pages for every chunk
    assert tuned["faults"] < pages // 10  # kept: the first chunks fault, the rest reuse them


@glibc
@pytest.mark.parametrize("name", ["MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_"])
def test_the_users_setting_stands(log, name):
    got = run("tune", log, **{name: "131072"})
    assert got["tuned"] is False and got["again"] is False  # (decided once per process)
    assert got["faults"] > (24 * (4 << 20)) // 4096 // 2
