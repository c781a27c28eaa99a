"""Every row of every catalog, in every spelling its tool prints: each catalog of the
bundled corpus is a data file with one row per authoritative entry (docs/catalogs.md);
this test walks the rows.  For each row and each spelling whose fields the row has, a
line built from the spelling's template must be read by that row's rule (through the
corpus's own scan plan, with every other rule present) and by no other row of the
catalog; the row's symptom must be registered with an outcome, sub_domain, rank,
blame and action; the near misses must be read by no row.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import pytest

from rulekit.rules.loader import load_corpus


@dataclass
class Spelling:
    needs: tuple[str, ...]  # the row fields the template uses (the row key is `key`)
    template: str
    source: str = "applog"


@dataclass
class Catalog:
    name: str
    spellings: list[Spelling]
    near_misses: list[tuple[str, str]] = field(default_factory=list)  # (line, source)


CATALOGS = [
    Catalog("CudaError", [
        Spelling(("message",), "[rank6]: torch.AcceleratorError: CUDA error: {message}"),
        Spelling(("message",), "[rank6]: RuntimeError: CUDA error: {message}\r"),
        Spelling(("message",), "node0005:9001:9002 [3] enqueue.cc:1556 NCCL WARN Cuda failure {key} '{message}'"),
        Spelling(("message",), "node0005:9001:9002 [3] misc/strongstream.cc:52 NCCL WARN Cuda failure '{message}'"),
        Spelling(("message",), "node0005: Test CUDA failure common.cu:1007 '{message}'"),
        Spelling(("message",), "RuntimeError: cuda runtime error (39) : {message} at /pytorch/aten/src/THC/x.cu:85"),
        Spelling(("message",), "RuntimeError: Triton Error [CUDA]: {message}"),
        Spelling(("runtime",), "cupy_backends.cuda.api.runtime.CUDARuntimeError: {runtime}: whatever it says"),
        Spelling(("runtime",), "merge_sort: failed to synchronize: {runtime}"),
        Spelling(("driver",), "jaxlib.xla_extension.XlaRuntimeError: INTERNAL: Failed to launch CUDA kernel: {driver}"),
        Spelling(("driver",), "E external/xla/stream_executor/cuda/cuda_event.cc:33] failed to query event: {driver}"),
        Spelling((), "node0005:9001:9002 [3] enqueue.cc:1556 NCCL WARN Cuda failure {key} ''"),
        Spelling((), "cudaGetDeviceCount returned {key}"),
    ], near_misses=[
        ("[rank6]: CUDA kernel errors might be asynchronously reported at some other API call", "applog"),
        ("For debugging consider passing CUDA_LAUNCH_BLOCKING=1", "applog"),
        ("CUDA error: invalid argumentation of the config", "applog"),
        ("Cuda failure 7000 'x'", "applog"),
        ("cudaErrorInvalidValueType is not a CUDA code", "applog"),
        ("logging system not yet initialized, buffering", "applog"),
        ("nvidia-container-cli: initialization error: nvml error: driver not loaded", "syslog"),
        ("CUDA_ERROR_IS_NOT_A_CODE happened", "applog"),
        ("job exited with code=1", "applog"),
    ]),
    Catalog("NcclResult", [
        Spelling(("message",), "[rank4]: torch.distributed.DistBackendError: NCCL error in: "
                               "../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970, {message} "
                               "(run with NCCL_DEBUG=INFO for details), NCCL version 2.21.5"),
        Spelling(("message",), "RuntimeError: NCCL error in: /pytorch/torch/lib/c10d/ProcessGroupNCCL.cpp:492, "
                               "{message}, NCCL version 2.4.8"),
        Spelling(("message",), "(EngineCore_5 pid=2353903) ERROR 04-25 16:14:44 [core.py:390] RuntimeError: "
                               "NCCL error: {message} (run with NCCL_DEBUG=WARN for details)"),
        Spelling(("message",), "RuntimeError: NCCL Error {key}: {message}"),
        Spelling(("message",), "node0001: Test NCCL failure common.cu:1279 '{message} / '"),
        Spelling(("message2",), "2024-01-01 12:00:00.000000: E external/xla/xla/service/gpu/nccl_api.cc:244: "
                                "NCCL operation ncclGroupEnd() failed: {message2}. Last NCCL warning(error) log entry"),
        Spelling(("enum",), "[rank2]: {enum}: whatever PyTorch explains after it."),
        Spelling(("enum",), "terminate called after throwing an instance of 'c10::DistBackendError' what(): {enum}"),
        Spelling((), "ncclCommInitRank failed: NCCL error {key}"),
    ], near_misses=[
        ("node0003:2211:2211 [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to ib0 (system default)", "applog"),
        ("ValueError: internal error in tokenizer", "applog"),
        ("ValueError: invalid argument for --tensor-model-parallel-size", "applog"),
        ("NCCL error handling is enabled: TORCH_NCCL_ASYNC_ERROR_HANDLING=1", "applog"),
        ("NCCL error 42 is not a code", "applog"),
        ("ncclCommInitRank: rank 3 of 8 ready", "applog"),
        ("NCCL error: timeout waiting for the store", "applog"),
        ("remote process group created on node0002", "applog"),
    ]),
    Catalog("EfaError", [
        Spelling((), "libfabric:451707:1708520807::efa:cq:efa_rdm_txe_handle_error():737<warn> err: 5, message: "
                     "something failed My EFA addr: fi_addr_efa://[fe80::a]:0:1 Peer host id: i-0002 ({key})"),
        Spelling((), "[1,13]<stderr>:libfabric:35:1668017255::efa:cq:rxr_cq_write_tx_error():243<warn> "
                     "rxr_cq_write_tx_error: err: 20, prov_err: whatever it says ({key})"),
        Spelling((), "libfabric:1:2::efa:ep_ctrl:efa_rdm_ep_post_handshake():10<warn> handshake failed, prov_errno: {key}, "
                     "retrying"),
        Spelling(("message",), "libfabric:451707:1708520807::efa:cq:efa_rdm_rxe_handle_error():737<warn> err: 5, message: "
                               "{message} My EFA addr: fi_addr_efa://[fe80::a]:0:1"),
        Spelling(("message",), "node0002:35:89 [5] ofi_process_cq:1039 NCCL WARN NET/OFI Request 0x7fbb944701b8 completed "
                               "with error. RC: 103. Error: {key} ({message}). Completed length: 0"),
        Spelling(("message_old",), "libfabric:1:2::efa:cq:rxr_cq_handle_tx_error():99<warn> err: 5, message: {message_old}"),
        Spelling(("message_old",), "[1,3]<stdout>:node0002:35:89 [5] ofi_process_cq:1039 NCCL WARN NET/OFI Request 0x7f "
                                   "completed with error. RC: 21. Error: {key} ({message_old}). Completed length: 0"),
    ], near_misses=[
        ("libfabric:12:1700000000::cxi:cq:cxip_cq_eq_progress():531<warn> err: 5, message: something (7)", "applog"),
        ("[rank3]: NET/OFI Request 0x7f14cc5b60c0 completed with error. RC: 113. Error: 2 (UNDELIVERABLE). "
         "Completed length: 0", "applog"),
        ("node0002:35:89 [5] NCCL INFO NET/OFI Selected Provider is efa (found 4 nics)", "applog"),
        ("RuntimeError: message: Out of memory", "applog"),
        ("libfabric:1:2::efa:core:efa_device_init():80<info> 4 EFA devices (4096 MiB)", "applog"),
    ]),
    Catalog("IbvWcStatus", [
        Spelling(("name",), "[node0002:01234] pml_ucx.c:419 Error: completion with {name} on the send queue"),
        Spelling(("name",), "gloo/transport/ibverbs/pair.cc:470] {name}"),
        Spelling((), "rdma_poll_completions: wc.status={key} for wr_id 0"),
        Spelling((), "ibv_poll_cq returned an error completion, wc status: {key}"),
        Spelling(("message",), "rdma_poll_completions get FAILURE: status \"{message}\" ({key}) for wr_id 0"),
        Spelling(("message",), "Failed status {message} ({key}) for wr_id 2"),
        Spelling(("message",), "E1205 03:10:40.123 client.cpp:88] RDMA completion failed: {message}"),
    ], near_misses=[
        ("node0003:2211:2290 [0] transport/net_ib.cc:1696 NCCL WARN NET/IB: Got completion from peer 10.0.0.2<51161> "
         "with status=IBV_WC_RETRY_EXC_ERR(12) opcode=IBV_WC_RECV(128)", "applog"),
        ("wc.status=0 ok", "applog"),
        ("the fatal error handler is installed", "applog"),
        ("IBV_WC_SUCCESS", "applog"),
        ("raise a general error for bad input", "applog"),
    ]),
    Catalog("Mlx5Syndrome", [
        Spelling((), "[1700000000.123456] [node0001:1234:0]   ib_mlx5_log.c:179  UCX  ERROR   something on mlx5_0:1/IB "
                     "(synd {key} vend 0x81 hw_synd 0/0)"),
        Spelling(("message",), "[1700000000.123456] [node0001:1234:0]   ib_mlx5_log.c:179  UCX  ERROR   {message} on "
                               "mlx5_0:1/IB (synd 0x0 vend 0x81 hw_synd 0/0)"),
        Spelling(("message",), "[1700000000.1] [node0001:1234:0]   ib_mlx5_log.c:186  UCX  ERROR Error on QP 0x1a2b wqe[17]: "
                               "{message} (synd 0x0 vend 0x0) opcode SEND"),
        Spelling(("message_old",), "[1583000000.1] [node0001:99:0]   ib_mlx5_log.c:139  UCX  ERROR   {message_old} on "
                                   "mlx5_1:1/RoCE (synd 0x0 vend 0x0 hw_synd 0/0)"),
    ], near_misses=[
        ("[1700000000.123456] [node0001:1234:0]   ib_iface.c:900  UCX  ERROR   mlx5_0: port 1 is down", "applog"),
        ("UCX  WARN  Local length of the buffer is 0", "applog"),
        ("synd 0x15 is the retry syndrome", "applog"),
    ]),
    Catalog("LsfTermReason", [
        Spelling((), "{key}: job killed after reaching the limit it names."),
        Spelling((), "Fri Jun  6 03:10:40 2026: Exited with exit code 143. The CPU time used is 12.3 seconds; {key}"),
        Spelling((), "Job <4711> exited, reason {key}", "scheduler"),
    ], near_misses=[
        ("export TERM_PROGRAM=xterm", "applog"),
        ("TERM=xterm-256color", "applog"),
        ("TERM_UNKNOWN", "applog"),
    ]),
    Catalog("BatchResourceLimit", [
        Spelling((), "=>> PBS: job killed: {key} 259217 exceeded limit 259200"),
        Spelling((), "PBS: job killed: {key} job total 1073741824 kb exceeded limit 1048576 kb"),
        Spelling((), "job 3132467 exceeded {key} usage hard limit (2528 > 1126)"),
        Spelling((), "MOAB_INFO:  job exceeded {key} limit"),
        Spelling((), "Job exceeded its {key} limit. Job was aborted"),
    ], near_misses=[
        ("the loss exceeded its limit", "applog"),
        ("=>> PBS: job killed: ssh 1 exceeded limit 0", "applog"),
        ("job exceeded expectations on walltime", "applog"),
    ]),
    Catalog("C10dSocketErrno", [
        Spelling((), "[W socket.cpp:401] [c10d] The server socket has failed to bind to [::]:29500 (errno: {key} - "
                     "whatever the C library says)."),
        Spelling((), "trainer/0 [1]:[W socket.cpp:558] [c10d] The client socket has failed to connect to "
                     "[::ffff:10.0.0.5]:40323 (errno: {key} - whatever)."),
        Spelling(("name",), "RuntimeError: The server socket has failed to listen on any local network address. port: 29500, "
                            "useIpv6: 0, code: -{key}, name: {name}, message: {message}"),
        Spelling(("name",), "[rank3]:[W1205 03:10:40.123 socket.cpp:752] [c10d] The client socket has failed to connect to "
                            "any network address of (node0001, 29500): code: -{key}, name: {name}"),
        Spelling(("message",), "[W socket.cpp:401] [c10d] The server socket has failed to bind to 0.0.0.0:29500 "
                               "(errno: 0 - {message})."),
        Spelling(("bare",), "RuntimeError: {bare}"),
        Spelling(("bare",), "[rank0]: RuntimeError: {bare}"),
    ], near_misses=[
        ("OSError: [Errno 98] Address already in use by the profiler", "applog"),
        ("PermissionError: [Errno 13] Permission denied: '/data/ckpt'", "applog"),
        ("RuntimeError: Permission denied", "applog"),
        ("RuntimeError: Connection refused", "applog"),
        ("[I socket.cpp:600] [c10d] The client socket has connected to [node0001]:29500 on [node0002]:41234.", "applog"),
    ]),
    Catalog("UcxStatus", [
        Spelling((), "ucp._libs.exceptions.UCXError: <stream_recv>: {key}"),
        Spelling((), "distributed.comm.ucx - status {status} ({key})"),
        Spelling(("message",), "[1700000000.1] [node0001:1234:0]  ucp_ep.c:1500 UCX  ERROR ucp_ep_create() failed: {message}"),
        Spelling(("message",), "[node0002:01234] pml_ucx.c:419 Error: ucp_ep_create(proc=3) failed: {message}"),
        Spelling(("message",), "[1700000000.1] [node0001:1234:0]  wireup.c:1100 UCX  ERROR   ep 0x7f12: {message}"),
    ], near_misses=[
        ("the job ran out of memory", "applog"),
        ("RuntimeError: Out of memory", "applog"),
        ("UCS_ERR_NO_MESSAGE", "applog"),
        ("[1700000000.1] [node0001:1234:0]  parser.c:1000 UCX  WARN  unused env variable: UCX_FOO", "applog"),
    ]),
]


@pytest.fixture(scope="module")
def engine():
    return load_corpus(None).engine


def _rows(engine, catalog: str) -> list:
    rows = [r for r in engine.extractors if r.origin == f"catalog:{catalog}"]
    assert rows, f"no catalog {catalog} in the bundled corpus"
    return rows


def _read_by(engine, line: str, source: str) -> set[str]:
    plan = engine.scan_plan(source, "text")
    return {plan.rules[h[2]].name for h in plan.scanner.scan((line + "\n").encode())}


def _cases():
    engine = load_corpus(None).engine
    for cat in CATALOGS:
        for rule in _rows(engine, cat.name):
            fields = dict(rule.lookup)
            fields["key"] = rule.catalog_key
            spelled = 0
            for sp in cat.spellings:
                if all(fields.get(f) for f in sp.needs):
                    spelled += 1
                    yield pytest.param(cat.name, rule.name, sp.template.format(**fields), sp.source,
                                       id=f"{rule.name}:{sp.template[:24]}")
            assert spelled, f"{rule.name}: no spelling covers it"


@pytest.mark.parametrize("catalog, rule, line, source", list(_cases()))
def test_every_row_reads_its_line(engine, catalog, rule, line, source):
    got = _read_by(engine, line, source)
    assert rule in got, f"{rule} does not read {line!r}"
    others = {g for g in got if g.startswith(catalog + "[") and g != rule}
    assert not others, f"{line!r} is read by other rows of {catalog}: {others}"


@pytest.mark.parametrize("catalog", [c.name for c in CATALOGS])
def test_every_row_has_a_registered_symptom_with_blame_and_action(engine, catalog):
    from rulekit.rules.model import ACTIONS, BLAMES, OUTCOMES

    for rule in _rows(engine, catalog):
        symptom = rule.emit.symptom
        assert symptom and "{" not in symptom, rule.name
        info = engine.registry.info(symptom)
        assert info.outcome in OUTCOMES and info.sub_domain and isinstance(info.rank, int), rule.name
        assert info.blame in BLAMES and info.action in ACTIONS, rule.name


@pytest.mark.parametrize("catalog", [c.name for c in CATALOGS])
def test_near_misses_are_read_by_no_row(engine, catalog):
    cat = next(c for c in CATALOGS if c.name == catalog)
    for line, source in cat.near_misses:
        got = {g for g in _read_by(engine, line, source) if g.startswith(catalog + "[")}
        assert not got, f"{line!r} is read by {got}"


def test_the_source_table_is_named_at_the_top_of_every_catalog_file():
    from rulekit.rules.loader import bundled_rules_path

    for path in sorted(bundled_rules_path().glob("catalog_*.toml")):
        head = path.read_text().split("[[", 1)[0]
        assert re.search(r"(?m)^# Source", head), f"{path.name} does not name its source table"
