"""The bundled corpus's extractors: every rule of the corpus files has a positive and a
near-miss (`expect = "nothing"`) inline test, every inline test passes, the Xid
catalog covers REFERENCE.md, and the symptoms keep the corpus's rank bands."""
from __future__ import annotations

from pathlib import Path

import pytest

from rulekit.rules.model import AccumulatorRule, ExtractorRule
from rulekit.analysis.testing import run_inline_tests

RULES = Path(__file__).resolve().parent.parent / "bundled_rules"
CORPUS_FILES = {"xid_catalog.toml", "xid_offbus.toml", "fabric.toml", "host.toml", "nccl.toml", "nccl_ib.toml",
                "cuda_pytorch.toml", "slurm.toml", "pyxis.toml", "kubernetes.toml", "nvrx_faults.toml",
                "versions.toml", "python_traceback.py", "elastic.py"}

# every Xid named in REFERENCE.md (catalog table, bodies, immediate-action list)
REFERENCE_XIDS = [8, 11, 13, 25, 31, 32, 38, 39, 40, 41, 43, 44, 45, 46, 48, 54, 61, 62, 63, 64, 68, 69, 70, 71, 72,
                  73, 74, 75, 76, 77, 79, 80, 85, 92, 93, 94, 95, 109, 119, 120, 121, 122, 123, 126, 127, 128, 129,
                  130, 131, 132, 133, 134, 135, 136, 137, 140, 143, 144, 145, 146, 147, 148, 149, 150, 151, 154, 155,
                  156, 157, 158, 159, 160, 161, 162, 163, 164, 165, 166, 167, 168, 169, 170, 171, 172]


def _mine(rule) -> bool:
    return Path(rule.span.file).name in CORPUS_FILES


def _units(engine):
    """Rules grouped as authored: a catalog is one unit, every other rule its own."""
    units: dict[str, list] = {}
    for r in (*engine.extractors, *engine.accumulators):
        if not _mine(r):
            continue
        origin = getattr(r, "origin", None) or ""
        key = origin.split("[")[0] if origin.startswith("catalog:") else r.name
        units.setdefault(key, []).append(r)
    return units


def test_corpus_files_are_loaded(bundled):
    files = {Path(r.span.file).name for r in bundled.rules}
    assert CORPUS_FILES <= files, CORPUS_FILES - files


def test_every_extractor_has_a_positive_and_a_near_miss_test(bundled):
    missing = []
    for name, rules in _units(bundled).items():
        tests = [t for r in rules for t in r.tests]
        if not any(t.expect != "nothing" for t in tests):
            missing.append(f"{name}: no positive test")
        if not any(t.expect == "nothing" for t in tests):
            missing.append(f"{name}: no near-miss test")
    assert not missing, "\n".join(missing)


def test_every_corpus_inline_test_passes(bundled):
    results = [r for r in run_inline_tests(bundled) if r.span and Path(r.span.file).name in CORPUS_FILES]
    assert len(results) > 350
    failed = [f"{r.name}: {r.mismatches or r.error} {r.actual}" for r in results if not r.passed]
    assert not failed, "\n".join(failed)


def test_xid_catalog_covers_reference(bundled):
    names = {r.name for r in bundled.extractors if (getattr(r, "origin", "") or "").startswith("catalog:XidCatalog")}
    assert len(names) >= 45
    missing = [x for x in REFERENCE_XIDS if f"XidCatalog[{x}]" not in names]
    assert not missing, missing


@pytest.mark.parametrize("xid,name", [(144, "NVLINK_SAW_ERROR"), (145, "NVLINK_RLW_ERROR"), (146, "NVLINK_TLW_ERROR"),
                                      (147, "NVLINK_TREX_ERROR"), (148, "NVLINK_NVLPW_CTRL_ERROR"),
                                      (149, "NVLINK_NETIR_ERROR"), (150, "NVLINK_MSE_ERROR"),
                                      (79, "FALLEN_OFF_THE_BUS"), (48, "GPU_ECC_DBE")])
def test_xid_symptom_names(bundled, xid, name):
    assert bundled.registry.info(f"XID-{xid}-{name}").outcome == "hardware"


def test_rank_bands(bundled):
    reg = bundled.registry
    r = reg.rank
    # hardware primaries in their order, victims below every primary
    assert r("XID-79-FALLEN_OFF_THE_BUS") > r("XID-171-UNCORRECTABLE_DRAM_ERROR") > r("XID-48-GPU_ECC_DBE") \
        > r("XID-95-UNCONTAINED_ERROR") > r("XID-74-NVLINK_ERROR") > r("XID-94-CONTAINED_ERROR") \
        > r("XID-64-DRAM_RETIREMENT_FAILURE") >= 900
    assert 800 <= r("IB_LINK_DOWN") < 900 and 800 <= r("HCA_FATAL") < 900
    assert 700 <= r("PYXIS_CONTAINER_START_FAILED") < 800 and 700 <= r("cudaErrorInsufficientDriver") < 800
    assert 600 <= r("PYTHON_EXCEPTION") < r("HOST_OOM_KILL") < r("cudaErrorIllegalAddress") < r("CUDA_OOM") < 700
    victims = ["NCCL_SYSTEM_ERROR", "NCCL_REMOTE_ERROR", "NCCL_WATCHDOG_TIMEOUT", "XID-43-RESETCHANNEL_VERIF",
               "XID-45-PREEMPTIVE_REMOVAL", "NCCL_IB_WR_FLUSH"]
    assert all(300 <= r(v) < 600 for v in victims)
    assert r("XID-154-RECOVERY_ACTION_CHANGED") < 300
    assert all(r(s) > r("NVRX_INJECTED_FAULT") for s in ("NVRX_INJECTED_GPU_ERROR", "NVRX_INJECTED_SIGNAL"))


def test_extractor_symptoms_are_registered(bundled):
    reg = bundled.registry
    for r in bundled.extractors:
        if _mine(r) and r.emit.symptom and "{" not in r.emit.symptom:
            assert reg.rank(r.emit.symptom) >= 0, r.name


def _line_events(engine, line: str, source: str = "applog"):
    """Every event the whole corpus extracts from one line (no filters)."""
    from rulekit.inputs.jobinfo import JobInfoBuilder
    from rulekit.inputs.observation import Observation
    from rulekit.engine.session import Session

    job = JobInfoBuilder("t", None, ("node0001", "node0002")).build()
    with Session(engine, job) as s:
        s.ingest(Observation(source=source, format="text", lines=[line], label="t"))
        return [(e.symptom, e.event_type) for e in s.manager.stream(s.context_id).all()]


@pytest.mark.parametrize("line", [
    "[rank6]: CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below "
    "might be incorrect.",
    "[rank6]: For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
    "[rank6]: Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.",
    "pcieport 0000:00:01.0: AER: Corrected error received: 0000:3b:00.0",
    "        SW Power Cap                      : Active",
    "node0001:2211:2211 [0] NCCL INFO Channel 00/32 :    0   1   2   3   4   5   6   7",
    'Successfully installed torch-2.3.0 nvidia-nccl-cu12-2.20.5 triton-2.3.0',
    'Some weights of the model checkpoint at bert-base-uncased were not used when initializing BertModel',
    '/usr/local/lib/python3.10/dist-packages/torch/_utils.py:831: UserWarning: TypedStorage is deprecated. It will be removed in the future and UntypedStorage will be the only storage class.',
    '[W ProcessGroupNCCL.cpp:1856] Warning: Environment variable NCCL_BLOCKING_WAIT is deprecated; use TORCH_NCCL_BLOCKING_WAIT instead (function operator())',
    'node0001:2211:2290 [0] NCCL WARN NET/IB : mlx5_0:1 Got async event : GID table change',
    'node0001:2211:2211 [0] NCCL WARN Could not find real path of /sys/class/net/ib0/device',
    'node0001:2211:2211 [0] NCCL INFO Failed to open libibverbs.so[.1]',
    'node0001:2211:2211 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>',
    '| N/A   34C    P0    62W / 400W |      0MiB / 81920MiB |      0%      Default |',
    '|   0  NVIDIA A100-SXM4-80GB  On   | 00000000:07:00.0 Off |                    0 |',
    '|  GPU  Name        Persistence-M| Bus-Id        Disp.A | Volatile Uncorr. ECC |',
    '        SW Power Cap                      : Active',
    '        HW Slowdown                       : Not Active',
    '    Retired Pages',
    '        Single Bit ECC                    : 0',
    '        Double Bit ECC                    : 0',
    '        Pending Page Blacklist            : No',
    '    Remapped Rows',
    '        Correctable Error                 : 0',
    '        Uncorrectable Error               : 0',
    '        Pending                           : No',
    '        Remapping Failure Occurred        : No',
    'wandb: Run summary: train/loss 1.234, OOM retries 0',
    '[rank0]: Epoch 1: 100%|██████████| 500/500 [10:00<00:00, loss=1.23, v_num=0]',
    'INFO:root:Checkpoint saved; no space issues (free 12 TiB)',
    'WARNING: Logging before flag parsing goes to stderr.',
    '[2024-05-01 10:00:00,123] [INFO] [real_accelerator.py:203:get_accelerator] Setting ds_accelerator to cuda (auto detect)',
    '[2024-05-01 10:00:00,124] [WARNING] [runner.py:202:fetch_hostfile] Unable to find hostfile, will proceed with training with local resources only.',
    'torch.cuda.memory_summary(): CUDA OOMs: 0 | cudaMalloc retries: 0',
    '[rank3]:[W1218 20:27:21.0 ProcessGroupNCCL.cpp:4561] [PG ID 0 PG GUID 0 Rank 3]  using GPU 3 to perform barrier as devices used by this process are currently unknown. This can potentially cause a hang if this rank to GPU mapping is incorrect.',
    'Aug 11 03:14:22 node0001 kernel: nvidia-nvswitch0: SXid (PCI:0000:c3:00.0): 20009, Non-fatal, Link 04 RX Short Error Rate',
    'Aug 11 03:14:22 node0001 kernel: mlx5_core 0000:0c:00.0: mlx5_fw_tracer_handle_traces:754:(pid 12): FWTracer: Events were lost',
    'Aug 11 03:14:22 node0001 kernel: NVRM: GPU at PCI:0000:3b:00: GPU-509665ad-3c1f-4a2b-9d1e-0f7e5a3b2c10',
    'Aug 11 03:14:22 node0001 kernel: Memory cgroup stats for /slurm/uid_1000/job_1234: anon 1234',
    'Aug 11 03:14:22 node0001 slurmd[1201]: error: _rpc_terminate_job: No space reserved for job 1234 logs, continuing',
    'Aug 11 03:14:22 node0001 kernel: EXT4-fs (nvme0n1p1): mounted filesystem with ordered data mode. Quota mode: none.',
    'Aug 11 03:14:22 node0001 kernel: pcieport 0000:00:01.0: AER: Corrected error received: 0000:3b:00.0',
    'Aug 11 03:14:22 node0001 kernel: nvme nvme0: 64/0/0 default/read/poll queues',
    'Aug 11 03:14:22 node0001 kernel: NETDEV WATCHDOG: disabled for eth9',
    'Aug 11 03:14:22 node0001 kernel: watchdog: Watchdog detected hard LOCKUP on cpu 12 disabled',
])
def test_advice_and_noise_lines_are_not_evidence(bundled, line):
    """Healthy-run chatter (advice lines, nvidia-smi tables, benign NCCL warnings, corrected AER,
    non-fatal SXids ...) never yields a bad-node event."""
    events = _line_events(bundled, line)
    assert [e for e in events if e[1] == "Attribution.node.bad"] == []


def test_every_corpus_symptom_is_produced_by_some_test(bundled):
    """Each symptom the corpus registers is produced by an inline test, a job case or an
    example job (no dead registrations)."""
    from rulekit.analysis.testing import run_examples, run_job_tests

    produced: set[str] = set()
    for res in (*run_inline_tests(bundled), *run_job_tests(bundled),
                *run_examples(bundled, [RULES.parent / "examples"])):
        produced |= set(res.symptoms or ())
    mine = [s.name for s in bundled.ruleset.symptoms if s.span and Path(s.span.file).name in CORPUS_FILES | {
        "cascade_filters.py", "cascade_refiners.py", "collectors.py"}]
    assert len(mine) > 200
    missing = [s for s in mine if s not in produced]
    assert not missing, missing
