"""Regenerate this example's inputs (job.toml, applog/, syslog/, fr/) with the test
suite's flight-recorder generator (tests/frgen.py): 16 ranks on 4 nodes, tensor
parallel 4 (one group per node), data parallel 4; at step 5 rank 6 (node0002) stops
issuing collectives with no error of its own, and rank 13 (node0004) dies after its
GPU falls off the bus, leaving no dump.  Every other rank times out in the NCCL
watchdog.  Run: `python examples/nccl-hang-flight-recorder/generate.py`.
"""
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent / "tests"))

from frgen import Fault, Sim, write_job  # noqa: E402

NODES = ["node0001", "node0002", "node0003", "node0004"]
XID = ("Aug 11 03:31:23 node0004 kernel: [ 7321.442190] NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', "
       "name=<unknown>, GPU has fallen off the bus.")
APP = [
    "[rank0]: node0001:2000:2000 [0] NCCL INFO NCCL version 2.21.5+cuda12.4",
    "[rank13]: [E0811 03:31:24.118000 ProcessGroupNCCL.cpp:1895] [PG ID 2 PG GUID 4(TENSOR_MODEL_PARALLEL_GROUP) Rank 1] "
    "Process group watchdog thread terminated with exception: CUDA error: unspecified launch failure",
]


def main() -> None:
    for sub in ("applog", "syslog", "fr"):
        shutil.rmtree(HERE / sub, ignore_errors=True)
    sim = Sim(world=16, tp=4, steps=8, faults={6: Fault("hang", 5), 13: Fault("dead", 5)})
    write_job(HERE, sim, NODES, applog_extra=APP, syslog={"node0004": [
        "Aug 11 03:00:02 node0004 kernel: mlx5_core 0000:0c:00.0 ibp12s0: Link up", XID]})
    (HERE / "job.toml").write_text(
        "# 16 ranks hang; the flight-recorder dumps (fr/) name rank 6 (node0002, no error of its own:\n"
        "# suspected) and rank 13 (node0004, no dump, its GPU fell off the bus: hardware).\n"
        + (HERE / "job.toml").read_text().replace('id = "nccl-hang-flight-recorder"', 'id = "hang-fr-1"'))


if __name__ == "__main__":
    main()
