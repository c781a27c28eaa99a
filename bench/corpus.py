"""Reproducible benchmark material: realistic benign training-log lines, injected
signal lines, and a generated set of extractor-like rules (>= 600) with an example
line for each.

Used by bench/extraction.py (the big corpus under bench/.data/) and by
bench/make_benign_sample.py (the small sample shipped as rulekit/data/benign_sample.log).
Deterministic for a given seed.  Writes files only where its caller says.
"""
from __future__ import annotations

import random
import re
from dataclasses import dataclass


@dataclass(frozen=True)
class GenRule:
    pattern: str
    example: str  # a line the pattern matches


def _hostname(rng: random.Random) -> str:
    return f"node{rng.randrange(1, 512):03d}"


def _ts(rng: random.Random) -> str:
    return f"2026-11-{rng.randrange(1, 29):02d} {rng.randrange(24):02d}:{rng.randrange(60):02d}:{rng.randrange(60):02d}"


def benign_line(rng: random.Random) -> str:
    r = rng.random()
    if r < 0.30:
        it = rng.randrange(1, 500000)
        return (f" [{_ts(rng)}] iteration {it:>8d}/  500000 | consumed samples: {it * 1024:>12d} | "
                f"elapsed time per iteration (ms): {rng.uniform(3000, 9000):.1f} | learning rate: "
                f"{rng.uniform(1e-5, 3e-4):.3E} | global batch size:  1024 | lm loss: {rng.uniform(1.5, 4):.6E} | "
                f"loss scale: 1.0 | grad norm: {rng.uniform(0.1, 3):.3f} | number of skipped iterations:   0 | "
                f"number of nan iterations:   0 |")
    if r < 0.48:
        step = rng.randrange(100000)
        return (f"{_ts(rng)},{rng.randrange(1000):03d} - INFO - trainer.py:{rng.randrange(100, 900)} - "
                f"step {step} loss={rng.uniform(1.5, 4):.4f} lr={rng.uniform(1e-5, 3e-4):.2e} "
                f"tokens/s={rng.randrange(50000, 400000)}")
    if r < 0.66:
        h = _hostname(rng)
        a = rng.randrange(8)
        kinds = [f"Channel {rng.randrange(32):02d}/0 : {a}[{a}] -> {(a + 1) % 8}[{(a + 1) % 8}] via P2P/IPC/read",
                 f"Connected all rings", f"Connected all trees",
                 f"comm 0x{rng.getrandbits(40):x} rank {a} nranks 64 cudaDev {a} busId {rng.randrange(16, 250):x}000 - Init COMPLETE",
                 f"Using network IB", f"NET/IB : Using [0]mlx5_{a}:1/IB ; OOB ib0:10.0.{rng.randrange(256)}.{rng.randrange(256)}<0>",
                 f"Setting affinity for GPU {a} to ffff,ffffffff", f"threadThresholds 8/8/64 | 512/8/64 | 512 | 512",
                 f"{rng.randrange(1, 32)} coll channels, {rng.randrange(1, 32)} nvls channels, 16 p2p channels, 2 p2p channels per peer"]
        # steady state is dominated by channel/ring set-up lines; init lines (network,
        # comm init, affinity) appear once per rank and communicator
        kind = kinds[0] if rng.random() < 0.85 else rng.choice(kinds[1:])
        return f"{h}:{rng.randrange(1000, 99999)}:{rng.randrange(1000, 99999)} [{a}] NCCL INFO {kind}"
    if r < 0.74:
        name = rng.choice(["forward-backward", "forward-compute", "backward-compute", "optimizer",
                           "batch-generator", "grads-all-reduce", "params-all-gather", "optimizer-copy-to-main-grad"])
        return f"    {name} {'.' * (40 - len(name))}: ({rng.uniform(1, 9000):.2f}, {rng.uniform(1, 9000):.2f})"
    if r < 0.79:
        it = rng.randrange(1000, 500000, 1000)
        return rng.choice([f"saving checkpoint at iteration {it:>7d} to /lustre/ckpt/run{rng.randrange(20)}",
                           f"  successfully saved checkpoint from iteration {it:>7d} to /lustre/ckpt/run{rng.randrange(20)} [ t 1/8, p 1/4 ]",
                           f" loading checkpoint from /lustre/ckpt/run{rng.randrange(20)} at iteration {it}"])
    if r < 0.88:
        pct = rng.randrange(101)
        bar = "\u2588" * (pct // 10) + ("\u258c" if pct % 10 >= 5 else "") + " " * (10 - pct // 10)
        return (f"Epoch {rng.randrange(10)}: {pct:3d}%|{bar[:10]}| {pct * 10}/1000 "
                f"[{rng.randrange(60):02d}:{rng.randrange(60):02d}<{rng.randrange(60):02d}:{rng.randrange(60):02d}, "
                f"{rng.uniform(1, 9):.2f}it/s, loss={rng.uniform(1.5, 4):.3f}]")
    if r < 0.93:
        return rng.choice([
            "/usr/lib/python3/dist-packages/torch/utils/data/dataloader.py:557: UserWarning: This DataLoader will create 16 worker processes in total.",
            "  warnings.warn(_create_warning_msg(",
            f"[{_ts(rng)}] torch.distributed init: backend=nccl world_size=64 rank={rng.randrange(64)} timeout=0:30:00",
            "> setting tensorboard ...",
            f"building GPT model ... number of parameters on (tensor, pipeline) model parallel rank ({rng.randrange(8)}, {rng.randrange(4)}): {rng.randrange(10**8, 10**9)}",
            "WARNING: overriding default argument use_distributed_optimizer:False with use_distributed_optimizer:True",
            f"> compiling dataset index builder ... done ({rng.uniform(0.01, 1):.3f} s)",
            "Loading extension module fused_adam...",
            f"{_ts(rng)} slurmstepd: task/affinity: task 0 bound to cpus 0-{rng.randrange(8, 128)}",
            "INFO:root:no error found in health check; all 8 GPUs nominal",
        ])
    return (f"{_ts(rng)} [Rank {rng.randrange(64)}] data loader: fetched batch {rng.randrange(10**6)} "
            f"in {rng.uniform(0.1, 40):.1f} ms from shard {rng.randrange(4096):05d}.bin")


# ---- generated rule set ---------------------------------------------------------------

_CUDA = ["an illegal memory access was encountered", "misaligned address", "unspecified launch failure",
         "device-side assert triggered", "out of memory", "invalid device ordinal", "uncorrectable ECC error encountered",
         "initialization error", "an illegal instruction was encountered", "launch timed out and was terminated",
         "system not yet initialized", "operation not permitted when stream is capturing", "invalid argument",
         "the launch timed out and was terminated", "invalid device function", "peer access is not supported between these two devices",
         "unknown error", "no kernel image is available for execution on the device", "CUDA driver version is insufficient for CUDA runtime version",
         "all CUDA-capable devices are busy or unavailable"]
_CUBLAS = ["NOT_INITIALIZED", "ALLOC_FAILED", "INVALID_VALUE", "ARCH_MISMATCH", "MAPPING_ERROR", "EXECUTION_FAILED",
           "INTERNAL_ERROR", "NOT_SUPPORTED", "LICENSE_ERROR"]
_CUDNN = ["NOT_INITIALIZED", "ALLOC_FAILED", "BAD_PARAM", "INTERNAL_ERROR", "INVALID_VALUE", "ARCH_MISMATCH",
          "MAPPING_ERROR", "EXECUTION_FAILED", "NOT_SUPPORTED", "LICENSE_ERROR", "RUNTIME_PREREQUISITE_MISSING",
          "RUNTIME_IN_PROGRESS", "RUNTIME_FP_OVERFLOW", "VERSION_MISMATCH"]
_PYEXC = ["RuntimeError", "ValueError", "KeyError", "IndexError", "TypeError", "AssertionError", "AttributeError",
          "ImportError", "ModuleNotFoundError", "FileNotFoundError", "PermissionError", "OSError", "IOError",
          "MemoryError", "RecursionError", "ZeroDivisionError", "OverflowError", "FloatingPointError", "StopIteration",
          "NotImplementedError", "ConnectionError", "ConnectionResetError", "ConnectionRefusedError", "BrokenPipeError",
          "TimeoutError", "EOFError", "UnicodeDecodeError", "KeyboardInterrupt", "SystemExit", "ChildProcessError",
          "ProcessLookupError", "IsADirectoryError", "NotADirectoryError", "BlockingIOError", "InterruptedError",
          "torch.OutOfMemoryError", "torch.cuda.OutOfMemoryError", "OutOfMemoryError", "torch.distributed.DistBackendError",
          "DistBackendError", "DistStoreError", "DistNetworkError", "torch.distributed.elastic.multiprocessing.errors.ChildFailedError",
          "ChildFailedError", "SignalException", "RendezvousTimeoutError", "RendezvousClosedError", "RendezvousError",
          "NCCLError", "CudaError", "CUDAError", "DataLoaderError", "pickle.UnpicklingError", "UnpicklingError",
          "json.decoder.JSONDecodeError", "JSONDecodeError", "yaml.YAMLError", "safetensors.SafetensorError",
          "huggingface_hub.utils.HfHubHTTPError", "requests.exceptions.ConnectionError", "requests.exceptions.ReadTimeout",
          "urllib3.exceptions.MaxRetryError", "botocore.exceptions.ClientError", "s3fs.errors.S3Error",
          "apex.transformer.Error", "megatron.core.Error", "deepspeed.runtime.zero.ZeroError", "triton.CompilationError",
          "torch._dynamo.exc.BackendCompilerFailed", "torch._dynamo.exc.Unsupported", "torch.jit.Error",
          "transformer_engine.Error", "flash_attn.Error", "nvfuser.Error", "sentencepiece.Error", "tokenizers.Error",
          "datasets.builder.DatasetGenerationError", "wandb.errors.CommError", "mlflow.exceptions.MlflowException",
          "ray.exceptions.RayTaskError", "grpc.RpcError", "zmq.error.ZMQError"]
_ERRNO = [(5, "Input/output error"), (12, "Cannot allocate memory"), (13, "Permission denied"), (28, "No space left on device"),
          (110, "Connection timed out"), (111, "Connection refused"), (104, "Connection reset by peer"), (32, "Broken pipe"),
          (113, "No route to host"), (116, "Stale file handle"), (122, "Disk quota exceeded"), (24, "Too many open files"),
          (2, "No such file or directory"), (17, "File exists"), (30, "Read-only file system"), (98, "Address already in use"),
          (99, "Cannot assign requested address"), (101, "Network is unreachable"), (107, "Transport endpoint is not connected"),
          (11, "Resource temporarily unavailable")]
_KERNEL = ["mce: \\[Hardware Error\\]: Machine check events logged", "EDAC MC\\d+: \\d+ UE ", "EDAC MC\\d+: \\d+ CE ",
           "Out of memory: Killed process (?P<pid>\\d+)", "oom-kill:constraint=CONSTRAINT_\\w+", "BUG: soft lockup - CPU#(?P<cpu>\\d+) stuck",
           "INFO: task (?P<task>\\S+):\\d+ blocked for more than \\d+ seconds", "NMI watchdog: Watchdog detected hard LOCKUP",
           "Kernel panic - not syncing", "general protection fault", "segfault at (?P<addr>[0-9a-f]+) ip",
           "mlx5_core (?P<pci>[0-9a-f:.]+): mlx5_health_check_fatal", "mlx5_core (?P<pci>[0-9a-f:.]+): .*link down",
           "pcieport (?P<pci>[0-9a-f:.]+): AER: Uncorrected \\(Fatal\\) error", "pcieport (?P<pci>[0-9a-f:.]+): AER: Corrected error",
           "nvidia-peermem: .*failed", "ib0: transmit timeout", "XFS \\((?P<dev>\\w+)\\): metadata I/O error",
           "EXT4-fs error \\(device (?P<dev>\\w+)\\)", "Lustre: .*evicting client", "LustreError: .*(?P<code>-\\d+)",
           "nfs: server (?P<server>\\S+) not responding", "blk_update_request: I/O error, dev (?P<dev>\\w+)",
           "thermal_sys: .*critical temperature reached", "CPU(?P<cpu>\\d+): Core temperature above threshold",
           "power_meter: .*capping", "ipmi_si: .*BMC .*not responding", "watchdog: BUG: soft lockup",
           "rcu: INFO: rcu_sched detected stalls", "hung_task: blocked tasks"]


def generated_rules() -> list[GenRule]:
    """>= 600 extractor-like rules, each with a line it matches."""
    out: list[GenRule] = []
    for xid in list(range(1, 160))[:100]:
        out.append(GenRule(rf"NVRM: Xid \(PCI:(?P<pci>[0-9a-f:.]+)\): {xid},(?P<body>.*)",
                           f"[ 1234.567890] NVRM: Xid (PCI:0000:3b:00): {xid}, pid=4242, name=python, Ch 00000008"))
    for m in _CUDA:
        out.append(GenRule(rf"CUDA error: (?P<msg>{re.escape(m)})", f"RuntimeError: CUDA error: {m}"))
        out.append(GenRule(rf"cudaError\w* .*{re.escape(m)}", f"cudaErrorLaunchFailure (code 719): {m}"))
    for s in _CUBLAS:
        out.append(GenRule(rf"CUBLAS_STATUS_{s}\b", f"RuntimeError: CUDA error: CUBLAS_STATUS_{s} when calling `cublasGemmEx`"))
        out.append(GenRule(rf"cuBLAS error: .*{s.lower()}", f"cuBLAS error: status {s.lower()} in gemm"))
    for s in _CUDNN:
        out.append(GenRule(rf"CUDNN_STATUS_{s}\b", f"RuntimeError: cuDNN error: CUDNN_STATUS_{s}"))
    for s in _CUDNN[:12]:
        out.append(GenRule(rf"CUDA_ERROR_{s}\b", f"CUDA_ERROR_{s}: driver call failed"))
    nccl_warn = ["NET/IB : Got completion from peer", "Call to ibv_create_qp failed", "Call to ibv_reg_mr failed",
                 "Cuda failure 'out of memory'", "Cuda failure 'an illegal memory access was encountered'",
                 "NET/Socket : Connection closed by remote peer", "Net : Connection closed by remote peer",
                 "Error : ring 0 does not loop back", "bootstrap.cc:\\d+ NCCL WARN Bootstrap : no socket interface found",
                 "Timeout waiting for", "NCCL_IB_TIMEOUT", "unhandled system error", "unhandled cuda error",
                 "remote process exited or there was a network error", "invalid usage", "internal error",
                 "Abort COMPLETE", "Aborting communicator", "proxy.cc:\\d+ NCCL WARN \\[Proxy Service \\d+\\] Failed",
                 "IB : Got async event : port error", "IB : Got async event : GID table change",
                 "Failed to open libibverbs", "NET/IB : No device found", "misc/ibvwrap.cc:\\d+ NCCL WARN",
                 "transport/net_ib.cc:\\d+ NCCL WARN", "socket.cc:\\d+ NCCL WARN", "init.cc:\\d+ NCCL WARN",
                 "enqueue.cc:\\d+ NCCL WARN", "channel.cc:\\d+ NCCL WARN", "group.cc:\\d+ NCCL WARN",
                 "transport/p2p.cc:\\d+ NCCL WARN", "transport/shm.cc:\\d+ NCCL WARN", "graph/search.cc:\\d+ NCCL WARN",
                 "Could not find real path of", "Cuda failure 'unspecified launch failure'", "Cuda failure 'uncorrectable ECC error encountered'"]
    for w in nccl_warn:
        example_tail = re.sub(r"\\d\+", "123", w).replace("\\[", "[").replace("\\]", "]").replace("\\", "")
        out.append(GenRule(rf"(?P<host>[\w.-]+):\d+:\d+ \[(?P<dev>\d+)\] .*NCCL WARN .*{w}",
                           f"node017:2213:2290 [3] misc.cc:1 NCCL WARN {example_tail}"))
    for kind in ["unhandled system error", "unhandled cuda error", "invalid usage", "internal error", "remote process exited",
                 "invalid argument", "timeout", "in progress", "system error"]:
        out.append(GenRule(rf"NCCL error in: (?P<file>\S+):(?P<line>\d+), {kind}",
                           f"torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1275, {kind} (run with NCCL_DEBUG=INFO for details)"))
        out.append(GenRule(rf"ncclCommInitRank failed: {kind}", f"ncclCommInitRank failed: {kind}"))
        out.append(GenRule(rf"ProcessGroupNCCL.*{kind}", f"[E ProcessGroupNCCL.cpp:474] {kind}"))
    slurm = ["\\*\\*\\* JOB (?P<job>\\d+) ON (?P<node>\\S+) CANCELLED AT", "\\*\\*\\* STEP (?P<step>[\\d.]+) ON (?P<node>\\S+) CANCELLED AT",
             "DUE TO TIME LIMIT", "DUE TO NODE FAILURE", "DUE TO PREEMPTION", "task (?P<task>\\d+): Exited with exit code (?P<code>\\d+)",
             "task (?P<task>\\d+): Killed", "task (?P<task>\\d+): Segmentation fault", "task (?P<task>\\d+): Aborted",
             "Node failure on (?P<node>\\S+)", "Job step aborted: Waiting up to \\d+ seconds", "Detected \\d+ oom[_-]kill events? in StepId",
             "Unable to create step for job", "Job allocation (?P<job>\\d+) has been revoked", "Prolog failure",
             "Epilog failure", "launch failed requeued held", "slurm_receive_msg: Socket timed out", "Communication connection failure",
             "Kill task failed", "StepId=(?P<step>\\S+) exceeded memory limit", "Exceeded job memory limit",
             "error: Munge decode failed", "error: Unable to contact slurm controller", "error: Node (?P<node>\\S+) not responding",
             "forward_thread: failed to", "_rpc_launch_tasks: .*error", "execve\\(\\): (?P<prog>\\S+): No such file",
             "srun: error: (?P<node>\\S+): tasks? (?P<tasks>[\\d,-]+): Exited", "srun: error: (?P<node>\\S+): tasks? (?P<tasks>[\\d,-]+): Killed",
             "srun: Job step aborted", "srun: forcing job termination", "srun: error: Timed out waiting for job step to complete",
             "slurmstepd: error: Detected \\d+ oom", "slurmstepd: error: container_p_join", "slurmstepd: error: pyxis:",
             "pyxis: importing docker image .*failed", "enroot-.*: \\[ERROR\\]", "slurmd\\[\\d+\\]: error: .*health check",
             "NHC: Health check failed", "Reason=(?P<reason>[^\\s]+) \\[", "State=DRAIN", "State=DOWN",
             "requeue of JobId=(?P<job>\\d+)", "JobState=NODE_FAIL", "JobState=TIMEOUT", "JobState=OUT_OF_MEMORY",
             "JobState=PREEMPTED", "ExitCode=(?P<exit>\\d+):(?P<sig>\\d+)"]
    for s in slurm:
        ex = (s.replace("(?P<exit>\\d+)", "1").replace("(?P<sig>\\d+)", "0").replace("(?P<job>\\d+)", "12345").replace("(?P<node>\\S+)", "node017").replace("(?P<step>[\\d.]+)", "12345.0")
              .replace("(?P<task>\\d+)", "3").replace("(?P<code>\\d+)", "1").replace("\\d+", "7").replace("(?P<step>\\S+)", "12345.0")
              .replace("(?P<prog>\\S+)", "python").replace("(?P<tasks>[\\d,-]+)", "0-7").replace("tasks?", "tasks")
              .replace("(?P<reason>[^\\s]+)", "Kill_task_failed").replace("(?P<exit>\\d+)", "1").replace("(?P<sig>\\d+)", "0")
              .replace(".*", " x ").replace("\\*", "*").replace("\\[", "[").replace("\\]", "]").replace("\\(", "(").replace("\\)", ")")
              .replace("oom[_-]kill events?", "oom-kill events"))
        out.append(GenRule(s, f"slurmstepd: error: {ex}"))
    for e in _PYEXC:
        out.append(GenRule(rf"\b{re.escape(e)}: (?P<msg>.*)", f"{e}: something went wrong in rank 3"))
    for n, text in _ERRNO:
        out.append(GenRule(rf"\[Errno {n}\] {re.escape(text)}", f"OSError: [Errno {n}] {text}: '/lustre/ckpt/x'"))
        out.append(GenRule(rf"errno:? {n}\b.*{re.escape(text.split()[0])}", f"failed to connect (errno: {n} - {text})"))
    for k in _KERNEL:
        ex = (k.replace("(?P<pid>\\d+)", "4242").replace("(?P<cpu>\\d+)", "12").replace("(?P<task>\\S+)", "python").replace("\\d+", "3")
              .replace("(?P<addr>[0-9a-f]+)", "7f00dead").replace("(?P<pci>[0-9a-f:.]+)", "0000:3b:00.0").replace("\\w+", "MEMCG")
              .replace("(?P<dev>MEMCG)", "sda").replace("(?P<server>\\S+)", "nfs01").replace("(?P<code>-3)", "-5").replace(".*", " x ")
              .replace("\\[", "[").replace("\\]", "]").replace("\\(", "(").replace("\\)", ")").replace("\\S+", "x"))
        out.append(GenRule(rf"kernel: .*{k}", f"Nov 30 02:00:00 node017 kernel: [1234.5] {ex}"))
        out.append(GenRule(rf"\[\s*\d+\.\d+\] {k}", f"[ 1234.567890] {ex}"))
    tdist = ["Watchdog caught collective operation timeout: WorkNCCL\\(SeqNum=(?P<seq>\\d+), OpType=(?P<op>\\w+)",
             "Some NCCL operations have failed or timed out", "To avoid data inconsistency, we are taking the entire process down",
             "Rank (?P<rank>\\d+) is not responding", "Timed out waiting \\d+ms for", "store->get\\(.*\\) timed out",
             "torch.distributed.elastic.multiprocessing.api:.*failed \\(exitcode: (?P<code>-?\\d+)\\)",
             "Sending process (?P<pid>\\d+) closing signal SIGTERM", "Received (?P<sig>\\d+) death signal, shutting down workers",
             "ProcessGroupNCCL's watchdog got stuck for", "Heartbeat monitor timed out", "Socket Timeout",
             "Connection reset by peer.*TCPStore", "Failed to recv, got 0 bytes", "The server socket has failed to listen",
             "RendezvousConnectionError", "Detected mismatch between collectives on ranks", "Ranks (?P<ranks>[\\d, ]+) failed to pass monitoredBarrier",
             "NCCL watchdog thread terminated with exception", "Exception raised from checkTimeout",
             "c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout", "CUDA kernel errors might be asynchronously reported",
             "Compile with `TORCH_USE_CUDA_DSA`", "device-side assertions", "elastic_agent: .*restart", "worker group failure",
             "WorkerGroupFailureException", "Closing process (?P<pid>\\d+) via signal SIGKILL", "FAILED_PRECONDITION",
             "barrier\\(\\) timed out", "all_reduce.*timed out", "all_gather.*timed out", "reduce_scatter.*timed out",
             "broadcast.*timed out", "send.*timed out", "recv.*timed out", "Connection closed by peer \\[(?P<peer>[\\d.]+)\\]:(?P<port>\\d+)",
             "Stop waiting for (?P<n>\\d+) ranks", "ncclRemoteError", "ncclSystemError"]
    for t in tdist:
        ex = (t.replace("(?P<seq>\\d+)", "1234").replace("(?P<op>\\w+)", "ALLREDUCE").replace("(?P<rank>\\d+)", "7").replace("\\d+", "5")
              .replace("(?P<code>-?5)", "-6").replace("(?P<pid>5)", "4242").replace("(?P<sig>5)", "15").replace("(?P<ranks>[\\d, ]+)", "1, 2")
              .replace("(?P<peer>[\\d.]+)", "10.0.0.1").replace("(?P<port>5)", "29500").replace("(?P<n>5)", "3").replace("(?P<pid>5)", "1")
              .replace(".*", " x ").replace("\\(", "(").replace("\\)", ")").replace("\\[", "[").replace("\\]", "]"))
        out.append(GenRule(t, f"[rank7]:[E1130 02:00:00.000] {ex}"))
    storage = ["Input/output error.*\\.pt", "checkpoint .*corrupt", "failed to save checkpoint", "failed to load checkpoint",
               "torch.save.*No space left", "PytorchStreamReader failed reading zip archive", "unexpected EOF, expected \\d+ more bytes",
               "safetensors_rust.SafetensorError", "Lustre .*-108", "s3://.*AccessDenied", "SlowDown: Please reduce your request rate",
               "gcsfs.*503", "HDF5-DIAG: Error detected", "zarr.*ReadOnlyError", "fsync failed", "dataset shard (?P<shard>\\d+) is truncated",
               "Could not read index file", "index file .*mismatch", "bad magic number in", "CRC mismatch", "short read on",
               "async checkpoint writer failed", "checkpoint upload .*timed out", "manifest .*missing", "stale NFS handle"]
    for s in storage:
        ex = (s.replace("\\d+", "4").replace("(?P<shard>4)", "12").replace(".*", " x ").replace("\\.", "."))
        out.append(GenRule(s, f"[{'2026-11-30'}] storage: {ex}"))
    health = ["lm loss: (?:nan|inf|-inf)\\b", "grad norm: (?:nan|inf)\\b", "number of nan iterations: +[1-9]\\d*",
              "number of skipped iterations: +[1-9]\\d{2,}", "loss scale: 0\\.0", "Loss is NaN", "loss=nan", "found inf in grads",
              "Gradient overflow\\. Skipping step", "overflow detected, skipping step", "loss spike detected", "NaN detected in",
              "Inf detected in", "training diverged", "learning rate became 0", "grad_norm=inf", "Detected NaN in gradient",
              "FloatingPointError: Minimum loss scale reached", "Attempting to unscale FP16 gradients", "throughput dropped by (?P<pct>\\d+)%",
              "straggler detected: rank (?P<rank>\\d+)", "iteration time (?P<t>[\\d.]+)s exceeds", "GPU (?P<gpu>\\d+) utilization 0%",
              "hang detected after (?P<s>\\d+) s", "no progress for (?P<s>\\d+) s"]
    health_ex = ["lm loss: nan |", "grad norm: inf |", "number of nan iterations:   3 |", "number of skipped iterations: 150 |",
                 "loss scale: 0.0 |", "Loss is NaN", "loss=nan", "found inf in grads", "Gradient overflow. Skipping step",
                 "overflow detected, skipping step", "loss spike detected", "NaN detected in layer 12", "Inf detected in layer 3",
                 "training diverged", "learning rate became 0", "grad_norm=inf", "Detected NaN in gradient", "FloatingPointError: Minimum loss scale reached",
                 "Attempting to unscale FP16 gradients", "throughput dropped by 40%", "straggler detected: rank 12",
                 "iteration time 35.2s exceeds", "GPU 3 utilization 0%", "hang detected after 600 s", "no progress for 900 s"]
    for p, ex in zip(health, health_ex):
        out.append(GenRule(p, f" [2026-11-30 02:00:00] {ex}"))
    net = ["Name or service not known", "Temporary failure in name resolution", "SSL: CERTIFICATE_VERIFY_FAILED", "HTTP Error 429",
           "HTTP Error 50[0-4]", "Read timed out\\. \\(read timeout=(?P<t>\\d+)\\)", "Max retries exceeded with url",
           "hf_hub_download .*failed", "huggingface.co.*timed out", "Connection aborted", "RemoteDisconnected", "ProxyError",
           "getaddrinfo failed", "wandb: ERROR", "wandb: Network error", "mlflow.*503", "grpc.*UNAVAILABLE", "DEADLINE_EXCEEDED",
           "ECONNRESET", "ETIMEDOUT"]
    net_ex = ["Name or service not known", "Temporary failure in name resolution", "SSL: CERTIFICATE_VERIFY_FAILED", "HTTP Error 429",
              "HTTP Error 503", "Read timed out. (read timeout=10)", "Max retries exceeded with url", "hf_hub_download x failed",
              "huggingface.co x timed out", "Connection aborted", "RemoteDisconnected", "ProxyError", "getaddrinfo failed",
              "wandb: ERROR", "wandb: Network error", "mlflow x 503", "grpc x UNAVAILABLE", "DEADLINE_EXCEEDED", "ECONNRESET", "ETIMEDOUT"]
    for p, ex in zip(net, net_ex):
        out.append(GenRule(p, f"requests: {ex}"))
    broad = [("(?i)error.*timeout", "ERROR: operation timeout"), ("(?i)\\bwarn(?:ing)?\\b", "warning: something"),
             ("(?i)\\btimed? ?out\\b", "request timed out"), ("(?i)\\bfatal\\b", "FATAL: disk"), ("(?i)\\bfailed\\b", "call failed"),
             ("\\w+Error:", "WeirdError: x"), ("(?i)exception", "Exception in thread"), ("(?i)\\babort(?:ed|ing)?\\b", "Aborted (core dumped)"),
             ("(?i)\\bkilled\\b", "Killed"), ("(?i)traceback \\(most recent call last\\)", "Traceback (most recent call last):")]
    for p, ex in broad:
        out.append(GenRule(p, ex))
    noliteral = [("^[EF]\\d{4} \\d\\d:\\d\\d:\\d\\d\\.\\d+ +\\d+ \\S+:\\d+\\]", "E1130 02:00:00.123456  4242 foo.cc:12] boom"),
                 ("\\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\\b", "req 1b4e28ba-2fa1-11d2-883f-0016d3cca427 x"),
                 ("\\b\\d+\\.\\d+\\.\\d+\\.\\d+:\\d+\\b", "peer 10.1.2.3:29500"), ("^\\s*File \"[^\"]+\", line \\d+", '  File "/x.py", line 12, in f'),
                 ("^[A-Z]{2,}\\d{2,}: ", "AB12: x"), ("^\\s+\\^+$", "      ^^^^")]
    for p, ex in noliteral:
        out.append(GenRule(p, ex))
    return out


def signal_line(rng: random.Random, rules: list[GenRule]) -> str:
    return rng.choice(rules).example


def write_corpus(path, size_bytes: int, seed: int = 42, signal_rate: float = 0.001,
                 rules: list[GenRule] | None = None) -> int:
    """Write benign lines with ~signal_rate injected signal lines until size_bytes; returns lines written."""
    rng = random.Random(seed)
    rules = rules if rules is not None else generated_rules()
    written = 0
    lines = 0
    with open(path, "wb") as f:
        buf: list[str] = []
        while written < size_bytes:
            for _ in range(10000):
                buf.append(signal_line(rng, rules) if rng.random() < signal_rate else benign_line(rng))
            data = ("\n".join(buf) + "\n").encode("utf-8")
            f.write(data)
            written += len(data)
            lines += len(buf)
            buf.clear()
    return lines
