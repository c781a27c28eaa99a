"""Generate the benign-training sample: a long, healthy 4-node Megatron-style run
(NCCL INFO chatter, warnings, iterations, checkpoints, benign kernel noise) that
completes.  The corpus must find no bad node in it (false-positive guard).

Deterministic (fixed seed); run `python generate.py` to rewrite applog/ and syslog/.
Keeps the committed logs under 2 MB.
"""
from __future__ import annotations

import random
from pathlib import Path

HERE = Path(__file__).resolve().parent
NODES = ["node0101", "node0102", "node0103", "node0104"]
TPN = 8
ITERATIONS = 5200
rnd = random.Random(20260811)


def pre(rank: int) -> str:
    return f"{rank}: "


def applog() -> list[str]:
    out = ["+ srun -l --mpi=pmix --container-image=nvcr.io/nvidia/nemo:24.07 python pretrain_gpt.py",
           "0: using world size: 32, data-parallel size: 2, context-parallel size: 1, tensor-model-parallel size: 8, "
           "pipeline-model-parallel size: 2",
           "0: ------------------------ arguments ------------------------",
           "0:   tensor_model_parallel_size ...................... 8",
           "0:   pipeline_model_parallel_size .................... 2",
           "0:   exit_on_missing_checkpoint ...................... False",
           "0:   check_for_nan_in_loss_and_grad .................. True",
           "0:   distributed_timeout_minutes ..................... 10",
           "0:   log_memory_to_tensorboard ....................... False",
           "0: -------------------- end of arguments ---------------------",
           "0: PyTorch version: 2.3.0+cu121",
           "0: > initializing torch distributed ...",
           "0: [W init.cpp:767] Warning: nvfuser is no longer supported in torch script, use _set_nvfuser_enabled is "
           "deprecated and a no-op (function operator ())",
           "0: /usr/local/lib/python3.10/dist-packages/torch/distributed/c10d_logger.py:79: FutureWarning: "
           "`torch.distributed._all_gather_base` is a private function and will be deprecated.",
           "0: UserWarning: TORCH_NCCL_AVOID_RECORD_STREAMS=1 has no effect for point-to-point collectives.",
           "0: WARNING: Logging before flag parsing goes to stderr.",
           "0: INFO: NCCL error handling: TORCH_NCCL_ASYNC_ERROR_HANDLING=1, timeout 600000 ms",
           "0: > setting random seeds to 1234 ...",
           "0: checkpoint not found, starting from scratch: no error, no traceback needed"]
    for ni, node in enumerate(NODES):
        for lr in range(TPN):
            r = ni * TPN + lr
            pid = 31000 + r
            p = pre(r)
            out += [f"{p}{node}:{pid}:{pid} [{lr}] NCCL INFO Bootstrap : Using ib0:10.1.0.{ni + 11}<0>",
                    f"{p}{node}:{pid}:{pid} [{lr}] NCCL INFO NET/Plugin: No plugin found (libnccl-net.so)",
                    f"{p}{node}:{pid}:{pid} [{lr}] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB "
                    f"[2]mlx5_2:1/IB [3]mlx5_3:1/IB [RO]; OOB ib0:10.1.0.{ni + 11}<0>",
                    f"{p}{node}:{pid}:{pid} [{lr}] NCCL INFO Using network IB",
                    f"{p}{node}:{pid}:{pid} [{lr}] NCCL INFO cudaDriverVersion 12040",
                    f"{p}{node}:{pid}:{pid + 60} [{lr}] NCCL INFO comm 0x5581d0c0 rank {r} nRanks 32 nNodes 4 "
                    f"localRanks 8 localRank {lr} MNNVL 0",
                    f"{p}{node}:{pid}:{pid + 60} [{lr}] NCCL INFO Setting affinity for GPU {lr} to ffff,ffffffff",
                    f"{p}{node}:{pid}:{pid + 60} [{lr}] NCCL INFO NVLS multicast support is available on dev {lr}",
                    f"{p}{node}:{pid}:{pid + 60} [{lr}] NCCL INFO Channel 00/32 :    0   1   2   3   4   5   6   7",
                    f"{p}{node}:{pid}:{pid + 60} [{lr}] NCCL INFO Channel 00/0 : {r}[{lr}] -> {(r + 1) % 32}"
                    f"[{(lr + 1) % TPN}] [send] via NET/IB/{lr % 4}/GDRDMA",
                    f"{p}{node}:{pid}:{pid + 60} [{lr}] NCCL INFO Connected all rings",
                    f"{p}{node}:{pid}:{pid + 60} [{lr}] NCCL INFO Connected all trees",
                    f"{p}{node}:{pid}:{pid + 60} [{lr}] NCCL INFO threadThresholds 8/8/64 | 256/8/64 | 512 | 512",
                    f"{p}{node}:{pid}:{pid + 60} [{lr}] NCCL INFO comm 0x5581d0c0 rank {r} nranks 32 cudaDev {lr} "
                    f"nvmlDev {lr} busId {0x18 + lr * 0x10:x}000 commId 0x4e5a1b2c3d4e5f60 - Init COMPLETE"]
            if r == 0:
                out.append(f"{p}{node}:{pid}:{pid} [0] NCCL INFO NCCL version 2.21.5+cuda12.4")
    t = 0.0
    for it in range(1, ITERATIONS + 1):
        t += 0.81 + rnd.random() * 0.05
        loss = 1.9 + 2.2 / (1 + it / 300.0) + rnd.uniform(-0.02, 0.02)
        hh, mm, ss = int(t // 3600), int(t % 3600 // 60), int(t % 60)
        out.append(f"0:  [2026-08-11 {3 + hh:02d}:{mm:02d}:{ss:02d}] iteration {it:8d}/    5200 | consumed samples: "
                   f"{it * 512:12d} | elapsed time per iteration (ms): {810 + rnd.random() * 40:.1f} | learning rate: "
                   f"{1.5e-4 * min(1.0, it / 500):.6E} | global batch size:   512 | lm loss: {loss:.6E} | "
                   f"loss scale: 1.0 | grad norm: {0.8 + rnd.random() * 0.4:.3f} | number of skipped iterations:   0 | "
                   f"number of nan iterations:   0 |")
        if it % 100 == 0:
            out.append(f"0: [Rank 0] (after {it} iterations) memory (MB) | allocated: 31234.5 | max allocated: "
                       f"61234.8 | reserved: 64210.0 | max reserved: 64210.0")
            out.append(f"0: throughput per GPU (TFLOP/s/GPU): {402 + rnd.random() * 8:.1f}")
        if it % 500 == 0:
            out.append(f"0: saving checkpoint at iteration {it:7d} to /lustre/ckpt/gpt-8b")
            out.append(f"0:   successfully saved checkpoint from iteration {it:7d} to /lustre/ckpt/gpt-8b "
                       f"[ t 1/2, p 1/2 ]")
        if it % 1000 == 0:
            out.append(f"0: validation loss at iteration {it} | lm loss value: {loss + 0.05:.6E} | lm loss PPL: "
                       f"{2.718 ** (loss + 0.05):.6E} |")
        if it % 1300 == 0:
            out.append("0: WARNING:megatron.core.timers:no timer named 'forward-backward' was started, skipping")
    out += ["0: [after training is done] datetime: 2026-08-11 04:14:09",
            "0: Evaluating on 1000 samples; no errors found, exiting with status 0",
            "0: [I1218 04:14:12.0 ProcessGroupNCCL.cpp:1168] [PG 0 Rank 0] ProcessGroupNCCL destructor entered.",
            "0: [I1218 04:14:12.0 ProcessGroupNCCL.cpp:1184] [PG 0 Rank 0] ProcessGroupNCCL destroyed communicator"]
    return out


def syslog(node: str, i: int) -> list[str]:
    lines = [f"Aug 11 02:58:{10 + j:02d} {node} kernel: {text}" for j, text in enumerate([
        "NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024",
        "nvidia-peermem: loading out-of-tree module taints kernel.",
        "mlx5_core 0000:0c:00.0 ibp12s0: Link up",
        "mlx5_core 0000:0c:00.0: Port module event: module 0, Cable plugged",
        "pcieport 0000:00:01.0: AER: Corrected error received: 0000:3b:00.0",
        "nvidia 0000:3b:00.0: PCIe Bus Error: severity=Corrected, type=Physical Layer, (Receiver ID)",
        "EDAC MC0: 1 CE memory read error on CPU_SrcID#0_MC#0_Chan#1_DIMM#0",
        "NVRM: GPU at PCI:0000:3b:00: GPU-0a1b2c3d-4e5f-6071-8293-a4b5c6d7e8f9",
        "EXT4-fs (nvme0n1p1): mounted filesystem with ordered data mode. Quota mode: none.",
        "nvme nvme0: 64/0/0 default/read/poll queues",
    ])]
    for k in range(300):
        lines.append(f"Aug 11 {3 + k // 60:02d}:{k % 60:02d}:00 {node} slurmd[{1200 + i}]: debug:  "
                     f"_handle_node_reg_resp: slurmctld sent back 13 TRES.")
        if k % 50 == 0:
            lines.append(f"Aug 11 {3 + k // 60:02d}:{k % 60:02d}:30 {node} systemd[1]: Started Session {k} of user "
                         f"root.")
            lines.append(f"Aug 11 {3 + k // 60:02d}:{k % 60:02d}:31 {node} nv-hostengine[2211]: DCGM health check "
                         f"passed: no Xid, no ECC errors, NVLink OK")
    lines.append(f"Aug 11 04:14:20 {node} slurmd[{1200 + i}]: launch task StepId=884400.0 completed, exit code 0")
    return lines


def main() -> None:
    (HERE / "applog").mkdir(exist_ok=True)
    (HERE / "syslog").mkdir(exist_ok=True)
    (HERE / "applog" / "train.log").write_text("\n".join(applog()) + "\n")
    for i, n in enumerate(NODES):
        (HERE / "syslog" / f"{n}.log").write_text("\n".join(syslog(n, i)) + "\n")


if __name__ == "__main__":
    main()
