"""Blame needs locality: a storage or service error blames a node only when the
evidence shows the resource is that node's own (rulekit/engine/locality.py,
docs/blame.md).  Pure-function checks of the rules, then whole jobs through the
bundled corpus."""
from __future__ import annotations

import pytest

from rulekit.engine import locality
from rulekit.engine.locality import PathTable, default_table, path_in, resolve


@pytest.mark.parametrize("line, path", [
    ("OSError: [Errno 28] No space left on device: '/home/u/.cache/huggingface/hub/x'", "/home/u/.cache/huggingface/hub/x"),
    ("write error on /tmp/ckpt.pt: No space left on device.", "/tmp/ckpt.pt"),
    ("EXT4-fs error (device nvme0n1p1): ext4_find_entry:1455: inode #2: comm python3", None),
    ("cannot write to (/raid/enroot/data) : No space left on device", "/raid/enroot/data"),
    ("OSError: [Errno 28] No space left on device", None),
    ("see https://pytorch.org/docs for details", None),
])
def test_path_in_a_line(line, path):
    assert path_in(line) == path


@pytest.mark.parametrize("path, kind", [
    ("/tmp/x", "local"), ("/dev/shm/nccl-abc", "local"), ("/raid/enroot", "local"),
    ("/var/lib/docker/overlay2/x", "local"), ("/opt/dlami/nvme/ckpt", "local"),
    ("/home/u/.cache/torch", "shared"), ("/lustre/fs1/ckpt", "shared"), ("/fsx/data", "shared"),
    ("/scratch/u/run", "shared"), ("/scratch/local/u", "local"),  # the longest prefix wins
    ("/workspace/ckpt", None), ("/tmpfoo/x", None),  # a prefix is a whole path component
])
def test_path_classes(path, kind):
    assert default_table().classify(path) == kind


def _storage(datum, *, nodes=1, job_nodes=4, source="applog", fields=None):
    return resolve(locality.STORAGE, "node3", nodes, job_nodes, fields or {}, datum, source)


def test_storage_rules_in_order():
    # 1. the same error on several nodes: the environment, whatever the path says
    assert _storage("No space left on device: /tmp/x", nodes=2).blame == "environment"
    # 2. a known path decides
    loc = _storage("No space left on device: '/tmp/x'")
    assert (loc.blame, loc.certain) == ("node", True) and "/tmp/x" in loc.reason
    assert _storage("No space left on device: '/home/u/.cache/x'").blame == "environment"
    assert _storage("x", fields={"path": "/dev/shm/y"}).blame == "node"  # a captured path first
    # 3. the node's own system log, or a daemon line naming the node
    assert _storage("EXT4-fs warning: No space left on device", source="syslog").blame == "node"
    assert _storage("slurmstepd-node3: error: write: No space left on device").blame == "node"
    assert _storage("slurmstepd-node33: error: write: No space left on device").blame == "environment"
    # 4. a program's bare line says nothing about where
    for job_nodes in (1, 4):
        assert _storage("OSError: [Errno 28] No space left on device", job_nodes=job_nodes).blame == "environment"


def test_service_rules():
    def svc(nodes, job_nodes):
        loc = resolve(locality.SERVICE, "node3", nodes, job_nodes, {}, "Prolog failure", "applog")
        return loc.blame, loc.certain
    assert svc(1, 4) == ("node", True)  # one node of four: its own service
    assert svc(1, 1) == ("node", False)  # nothing to compare with
    assert svc(3, 4) == ("environment", True)  # cluster-wide


def test_a_table_of_ones_own():
    t = PathTable(local=("/scratch",), shared=())
    assert resolve(locality.STORAGE, "n", 1, 2, {}, "ENOSPC /scratch/x", "applog", t).blame == "node"


# ---- whole jobs ------------------------------------------------------------------------------

def _attribute(bundled, nodes, obs):
    from rulekit.engine.session import Session
    from rulekit.inputs.jobinfo import JobInfoBuilder
    from rulekit.inputs.observation import Observation

    job = JobInfoBuilder("loc", "FAILED", nodes, tasks_per_node=1).build()
    with Session(bundled, job) as s:
        for source, node, lines in obs:
            s.ingest(Observation(source=source, node=node, lines=lines))
        return s.attribute()


ENOSPC = "OSError: [Errno 28] No space left on device: '{}'"


def test_a_user_cache_full_blames_no_node(bundled):
    r = _attribute(bundled, ["n1", "n2"], [("applog", "n2", [ENOSPC.format("/home/u/.cache/huggingface/x")])])
    assert r["outcome"] == "infrastructure" and r["bad_nodes"] == []
    assert r["root_cause"]["blame"] == "environment" and r["root_cause"]["action"] == "none"
    [n2] = r["affected_nodes"]
    assert n2["node"] == "n2" and "FS_NO_SPACE" in n2["symptoms"]
    assert n2["locality"] == "/home/u/.cache/huggingface/x is a shared or user path"


def test_a_full_local_tmp_blames_its_node(bundled):
    r = _attribute(bundled, ["n1", "n2"], [("applog", "n2", [ENOSPC.format("/tmp/ckpt/model.pt")])])
    assert [(b["node"], b["blame"], b["confidence"]) for b in r["bad_nodes"]] == [("n2", "node", "certain")]
    assert r["bad_nodes"][0]["locality"] == "/tmp/ckpt/model.pt is a node-local path"
    assert r["root_cause"]["blame"] == "node"


def test_the_same_local_error_on_two_nodes_is_the_environment(bundled):
    r = _attribute(bundled, ["n1", "n2", "n3"], [("applog", n, [ENOSPC.format("/tmp/x")]) for n in ("n1", "n2")])
    assert r["bad_nodes"] == [] and r["root_cause"]["blame"] == "environment"
    assert all(a.get("locality") == "the same error on 2 nodes" for a in r["affected_nodes"])


def test_a_prolog_failure_on_one_node_of_several_blames_it_and_on_all_blames_none(bundled):
    one = _attribute(bundled, ["n1", "n2", "n3"], [("applog", None, ["srun: error: Prolog failure on node n2"])])
    many = _attribute(bundled, ["n1", "n2", "n3"], [("applog", None, [f"srun: error: Prolog failure on node {n}"
                                                                      for n in ("n1", "n2", "n3")])])
    assert one["root_cause"]["symptom"] == many["root_cause"]["symptom"] == "SLURM_PROLOG_FAILED"
    assert [b["node"] for b in one["bad_nodes"]] == ["n2"] and one["bad_nodes"][0]["confidence"] == "certain"
    assert many["bad_nodes"] == [] and many["root_cause"]["blame"] == "environment"
