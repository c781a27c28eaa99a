"""A bus error inside NCCL, read from the crash backtrace that follows it.

UCX / HPC-X (`[host:pid:0:tid] Caught signal 7 (Bus error: nonexistent physical
address)` then `==== backtrace (tid: N) ====` and numbered frames) and glibc-style
handlers print the frames of the faulting thread.  SIGBUS with NCCL frames
(`ncclGroupEnd`, `libnccl.so`) is NCCL touching a shared-memory segment that
/dev/shm could not back: in a container, a too-small `--shm-size`.  Must not read a
bus error without NCCL frames (PROCESS_SIGBUS rules speak for those).
"""
import re

from rulekit.plugin import Accumulator, EventSpec, accumulator_def, register_symptom

from .common.pytrace import strip_prefix

AUTHOR = "rulekit corpus"

register_symptom("NCCL_SHM_BUS_ERROR", blame="environment", outcome="infrastructure", sub_domain="container", rank=764,
                 docs="A bus error (SIGBUS) with NCCL frames in its backtrace (`Caught signal 7 (Bus error ...)` ... "
                      "`ncclGroupEnd()`): NCCL's shared-memory segment was not backed by /dev/shm, typically a "
                      "container's default 64 MB (raise --shm-size or use --ipc=host).")

_FRAME = re.compile(r"^\s*(?:#?\d+\s+0x[0-9a-fA-F]+|\[\s*\d+\]|frame #\d+:|\d+\s+\S+\s+0x)")
_NCCL = re.compile(r"\bnccl[A-Z]\w*|libnccl|\brccl\w*|librccl")


@accumulator_def(
    name="NcclBusErrorBacktrace", author=AUTHOR, trigger_re=r"Caught signal 7 \(Bus error",
    sources=("applog",), max_lines=40, symptoms=("NCCL_SHM_BUS_ERROR",),
    tests=[
        {"line": "[8d6bf97c3bf4:3039 :0:3095] Caught signal 7 (Bus error: nonexistent physical address)\n"
                 "==== backtrace (tid:   3095) ====\n 0 0x0000000000043090 killpg()  ???:0\n"
                 " 1 0x000000000018bb41 __nss_database_lookup()  ???:0\n 2 0x000000000007587d ncclGroupEnd()  ???:0\n"
                 "=================================\n", "symptom": "NCCL_SHM_BUS_ERROR",
         "captures": {"frame": "ncclGroupEnd"}},
        {"line": "[node0001:3039 :0:3095] Caught signal 7 (Bus error: nonexistent physical address)\n"
                 "==== backtrace (tid:   3095) ====\n 0 0x0000000000043090 killpg()  ???:0\n"
                 " 1 0x000000000018bb41 memcpy()  ???:0\n 2 0x0000000000001234 load_batch()  loader.c:88\n"
                 "=================================\n", "expect": "nothing"},
    ],
)
class NcclBusErrorBacktrace(Accumulator):
    """Reads the backtrace after a UCX-style `Caught signal 7 (Bus error` line."""

    def __init__(self, ctx, line, match):
        super().__init__(ctx, line, match)
        self.frame = None
        self.seen_frames = 0

    def feed(self, line):
        text = strip_prefix(line)
        stripped = text.strip()
        if stripped.startswith("==="):
            return self.seen_frames == 0  # the header opens the frames, the closing rule ends them
        if not _FRAME.match(text):
            return False
        self.seen_frames += 1
        m = _NCCL.search(text)
        if m and self.frame is None:
            self.frame = m.group(0)
        return True

    def finalize(self):
        if self.frame is None:
            return []
        return [EventSpec(type="bad_node", symptom="NCCL_SHM_BUS_ERROR", fields={"frame": self.frame})]
