"""The `bad_pairs` collector, one test per sentence of the spec's Phase 4 paragraph
on NCCL "Got completion from peer" errors (seeds/how-attribution-works.txt)."""
from __future__ import annotations

from rulekit.inputs.jobinfo import JobInfoBuilder
from rulekit.inputs.observation import Observation
from rulekit.engine.session import Session

NODES = ("node0002", "node0003", "node0007")
GEN1 = ("{host}transport/net_ib.cc:1296 NCCL WARN NET/IB : Got completion from peer {peer}<33092> with error {status}, "
        "opcode 0, len 0, vendor err 129 (Recv) localGid ::ffff:{local} remoteGids::ffff:{peer}")
GEN2 = ("{host}transport/net_ib.cc:2453 NCCL WARN NET/IB: Got completion from peer {peer}<51161> with status={status} "
        "opcode=0 len=0 vendor err 129 (Recv) localGid ::ffff:{local} remoteGids::ffff:{peer} hca {hca}")


def line(host=None, peer="10.0.0.2", local="10.0.0.3", status=12, hca="mlx5_1", gen=GEN2, prefix=""):
    h = f"{host}:2211:2290 [0] " if host else ""
    return prefix + gen.format(host=h, peer=peer, local=local, status=status, hca=hca)


def boot(host, ip):
    return f"{host}:100:100 [0] NCCL INFO Bootstrap : Using ib0:{ip}<0>"


def attribute(*observations, nodes=NODES, tasks_per_node=None):
    job = JobInfoBuilder("bp", "FAILED", nodes, tasks_per_node=tasks_per_node).build()
    with Session(bundled_engine(), job) as s:
        for source, node, lines in observations:
            s.ingest(Observation(source=source, format="text", node=node, lines=list(lines), label=f"{source}.log"))
        return s.attribute(), job


_ENGINE = []


def bundled_engine():
    if not _ENGINE:
        from rulekit.rules.loader import load_corpus
        _ENGINE.append(load_corpus(None).engine)
    return _ENGINE[0]


def pairs(*observations, **kw):
    result, _ = attribute(*observations, **kw)
    return result["collectors"]["bad_pairs"]


def test_explicit_source_hostname_kept_even_outside_the_node_list():
    p = pairs(("applog", None, [line(host="login07", local="10.9.9.9")]))
    assert p[0]["src_node"] == "login07"
    assert p[0]["src_resolved_by"] == "hostname"


def test_mapped_local_gid_supplies_the_hostname_when_none_is_printed():
    p = pairs(("applog", None, [boot("node0003", "10.0.0.3"), line(host=None, local="10.0.0.3")]))
    assert p[0]["src_node"] == "node0003"
    assert p[0]["src_resolved_by"] == "gid"


def test_declared_node_or_explicit_leading_rank_supplies_the_source_when_the_gid_is_unmapped():
    declared = pairs(("syslog", "node0007", [line(host=None, local="10.0.0.99")]))
    assert declared[0]["src_node"] == "node0007" and declared[0]["src_resolved_by"] == "declared_node"
    ranked = pairs(("applog", None, [line(host=None, local="10.0.0.99", prefix="[rank9]: ")]), tasks_per_node=8)
    assert ranked[0]["src_node"] == "node0003" and ranked[0]["src_resolved_by"] == "rank"
    outside = pairs(("applog", None, [line(host=None, local="10.0.0.99", prefix="[rank99]: ")]), tasks_per_node=8)
    assert outside[0]["src_node"] is None  # a rank outside the supplied workload resolves nothing


def test_source_retains_declared_node_to_tell_producer_metadata_from_parser_fallbacks():
    declared = pairs(("syslog", "node0007", [line(host=None, local="10.0.0.99")]))
    assert declared[0]["declared_node"] == "node0007"
    parsed = pairs(("applog", None, [line(host="node0003")]))
    assert "declared_node" not in parsed[0]


def test_implicit_rank_zero_default_is_not_source_evidence():
    # no rank prefix, no hostname, unmapped GID: rank 0's node must not be used
    p = pairs(("applog", None, [line(host=None, local="10.0.0.99")]), tasks_per_node=8)
    assert p[0]["src_node"] is None
    single = pairs(("applog", None, [line(host=None, local="10.0.0.99")]), nodes=("node0003",))
    assert single[0]["src_node"] is None  # the single-node default is not evidence either


def test_unknown_hostname_leaves_src_node_null_and_keeps_src_ip():
    p = pairs(("applog", None, [line(host=None, local="10.0.0.99")]))
    assert p[0]["src_node"] is None
    assert p[0]["src_ip"] == "10.0.0.99"


def test_disagreeing_gid_hostname_is_exposed_as_src_gid_node():
    p = pairs(("applog", None, [boot("node0003", "10.0.0.3"), line(host="gpu-a03", local="10.0.0.3")]))
    assert p[0]["src_node"] == "gpu-a03"
    assert p[0]["src_gid_node"] == "node0003"


def test_reverse_direction_report_is_combined_with_dst_gid_node():
    obs = ("applog", None, [
        boot("node0002", "10.0.0.2"), boot("node0003", "10.0.0.3"),
        line(host="node0003", peer="10.0.0.2", local="10.0.0.3"),
        line(host="gpu-a02", peer="10.0.0.3", local="10.0.0.2", hca="mlx5_0"),
    ])
    p = pairs(obs)
    assert len(p) == 1
    assert p[0]["src_node"] == "node0003" and p[0]["dst_node"] == "gpu-a02"
    assert p[0]["dst_gid_node"] == "node0002"
    assert p[0]["count"] == 2


def test_gid_fields_omitted_when_names_agree_or_unknown():
    agree = pairs(("applog", None, [boot("node0003", "10.0.0.3"), line(host="node0003", local="10.0.0.3")]))
    unknown = pairs(("applog", None, [line(host="node0003", local="10.0.0.3")]))
    for p in (agree[0], unknown[0]):
        assert "src_gid_node" not in p and "dst_gid_node" not in p


def test_conflicting_ips_interfaces_or_gid_hostnames_stay_separate_pairs():
    ips = pairs(("applog", None, [line(host="node0003", local="10.0.0.3"), line(host="node0003", local="10.0.1.3")]))
    assert len(ips) == 2
    hcas = pairs(("applog", None, [line(host="node0003", hca="mlx5_1"), line(host="node0003", hca="mlx5_4")]))
    assert len(hcas) == 2
    # a reverse report that carries a different GID hostname than the pair already holds is not merged
    obs = ("applog", None, [
        boot("node0002", "10.0.0.2"), boot("node0003", "10.0.0.3"),
        line(host="node0003", peer="10.0.0.2", local="10.0.0.3"),
        line(host="gpu-a02", peer="10.0.0.3", local="10.0.0.2", hca="mlx5_0"),
        boot("gpu-b02", "10.0.0.2"),
    ])
    merged = pairs(obs)
    assert len(merged) == 1 and "dst_gid_node" not in merged[0]  # ambiguous GID name: nothing exposed


def test_pairs_do_not_change_membership_or_blame_nodes():
    result, job = attribute(("applog", None, [line(host="login07", local="10.9.9.9", status=5)]))
    assert result["collectors"]["bad_pairs"][0]["src_node"] == "login07"
    assert job.nodes == NODES
    assert "login07" not in [b["node"] for b in result["bad_nodes"]]
    assert "login07" not in [b["node"] for b in result.get("interesting_nodes", [])]


def test_all_three_completion_generations_are_pairs():
    gen3 = ("node0002:319733:319761 [1] transport/net_ib/p2p.cc:648 NCCL WARN NET/IB: Got completion from peer "
            "10.0.0.4<40554> with status=IBV_WC_RETRY_EXC_ERR(12) opcode=IBV_WC_RECV_RDMA_WITH_IMM(129) "
            "vendor_err=129 localGid ::ffff:10.0.0.2 remoteGids::ffff:10.0.0.4 hca mlx5_1")
    p = pairs(("applog", None, [line(host="node0003", gen=GEN1), line(host="node0007", local="10.0.0.7"), gen3]))
    assert [x["src_node"] for x in p] == ["node0003", "node0007", "node0002"]
    assert all(x["statuses"] == [12] for x in p)
