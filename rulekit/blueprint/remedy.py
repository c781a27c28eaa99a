"""The command an operator pastes to act on a bad node's action: for Slurm (the
static and Slurm contexts) `scontrol update nodename=N state=drain reason="rulekit:
..."` (`scontrol reboot ASAP nextstate=RESUME ...` for `reboot`), for Kubernetes
(Kueue) `kubectl cordon N` with the reason as an annotation.  `none` gives no
command.

Node names and job ids come from the scheduler (untrusted): a command is offered
only when every node name is a plain host name, and the reason keeps only the
characters of a symptom name, a job id and the action (none a shell interprets
inside double quotes), so what is pasted can never run something else.  Pure: no I/O.
"""
from __future__ import annotations

import re
from typing import Any

from rulekit.rules.records import dataclass

_HOST = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")
_REASON_UNSAFE = re.compile(r"[^A-Za-z0-9 _.:#/-]")
KUBERNETES = ("kueue", "kubernetes", "k8s")
# what each action asks of the scheduler: drain (no new jobs; the operator then resets,
# reboots or replaces), reboot (Slurm reboots it and puts it back), nothing
DRAIN = ("reset_gpu", "drain_p2p", "drain_and_reset", "drain_and_rma", "check_link", "inspect")


@dataclass(frozen=True)
class Remedy:
    action: str
    command: str | None  # None: nothing to paste (no action, or a node name a shell would interpret)
    why_not: str = ""  # when there is no command: why


def reason(symptom: str | None, job_id: str | None, action: str) -> str:
    """`rulekit: SYMPTOM in job ID: ACTION`, with only characters that mean nothing to a shell."""
    text = f"rulekit: {symptom or 'unknown'}" + (f" in job {job_id}" if job_id else "") + f": {action}"
    return _REASON_UNSAFE.sub("_", text)[:200]


def remedy(action: str | None, nodes: list[str], symptom: str | None = None, job_id: str | None = None,
           scheduler: str | None = None) -> Remedy:
    """The command for `action` on `nodes` (a job's bad nodes that share it)."""
    action = action or "none"
    if action == "none" or not nodes:
        return Remedy(action, None, "the action is none: nothing to do on the node")
    bad = [n for n in nodes if not _HOST.match(n)]
    if bad:
        return Remedy(action, None, f"node name {bad[0]!r} is not a plain host name: no command is offered")
    why = reason(symptom, job_id, action)
    names = ",".join(nodes)
    if (scheduler or "").lower() in KUBERNETES:
        cmds = [f"kubectl cordon {n} && kubectl annotate --overwrite node {n} rulekit.io/reason=\"{why}\""
                for n in nodes]
        return Remedy(action, "\n".join(cmds))
    if action == "reboot":
        return Remedy(action, f'scontrol reboot ASAP nextstate=RESUME reason="{why}" {names}')
    return Remedy(action, f'scontrol update nodename={names} state=drain reason="{why}"')


def remedies(result: dict[str, Any]) -> list[Remedy]:
    """One command per distinct action of a stored result's bad nodes (root cause's first)."""
    v = result.get("verdict") or {}
    ctx = result.get("context") or {}
    rc = v.get("root_cause") or {}
    by_action: dict[str, list[str]] = {}
    for b in v.get("bad_nodes") or []:
        by_action.setdefault(b.get("action") or "inspect", []).append(b["node"])
    order = sorted(by_action, key=lambda a: (rc.get("node") not in by_action[a], a))
    return [remedy(a, by_action[a], rc.get("symptom"), result.get("job_id"), ctx.get("source")) for a in order]
