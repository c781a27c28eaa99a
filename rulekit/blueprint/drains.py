"""Slurm drains for the nodes the fleet policy proposes for quarantine.

Shadow mode is the default: `proposed(proposals)` gives each proposal as the
`scontrol update nodename=N state=drain reason="rulekit: ..."` command a person
(or a remediation system) may run.  `apply(...)` is the opt-in: for each
proposal it reads the node's state and reason (`sinfo -h -N -n N -o %N|%T|%E`)
and

- drains it, when it is not drained, at most `max_new` nodes per call (NVRx
  avoids at most one node per cycle);
- leaves it alone when it is already drained (or draining) for another reason:
  someone else's drain is never overwritten, and nothing here ever resumes a
  node (`state=resume` is a person's decision);
- does nothing when it is already drained for a `rulekit:` reason.

Node names come from scheduler data (untrusted): a name that is not a plain
host name (no list, range, space, `=` or quote: Slurm would expand or misread
it) is refused.  Every command runs with an argument list (no shell) and a
timeout; a failure is recorded in the outcome, never raised.
"""
from __future__ import annotations

import re
import shlex
import shutil
import subprocess
from typing import Any, Iterable

from rulekit.rules.records import dataclass

PREFIX = "rulekit:"
NODE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
MAX_REASON = 200


@dataclass(frozen=True)
class DrainOutcome:
    node: str
    status: str  # drained | already-ours | left-alone | deferred | refused | failed
    detail: str
    command: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"node": self.node, "status": self.status, "detail": self.detail, "command": shell(self.command)
                if self.command else None}


def reason_text(reason: str) -> str:
    """`rulekit: <reason>` on one printable line, bounded."""
    text = " ".join("".join(c if c.isprintable() else " " for c in reason).split())
    return (PREFIX + " " + text)[:MAX_REASON]


def drain_command(node: str, reason: str, scontrol: str = "scontrol") -> tuple[str, ...]:
    return (scontrol, "update", f"nodename={node}", "state=drain", f"reason={reason_text(reason)}")


def shell(argv: Iterable[str]) -> str:
    return " ".join(shlex.quote(a) for a in argv)


def valid_node(node: str) -> bool:
    return bool(NODE_NAME.fullmatch(node))


def proposed(proposals: list[dict[str, Any]], scontrol: str = "scontrol") -> list[dict[str, Any]]:
    """Each proposal with its drain command (shadow mode: nothing runs)."""
    out = []
    for p in proposals:
        node, reason = p["node"], f"{p.get('action') or 'drain'}: {p.get('reason') or 'fleet policy'}"
        cmd = shell(drain_command(node, reason, scontrol)) if valid_node(node) else None
        out.append({**p, "command": cmd, **({} if cmd else {"refused": "not a plain host name"})})
    return out


def node_state(node: str, sinfo: str = "sinfo", timeout: float = 30.0) -> tuple[str, str]:
    """(state, reason) of one node as Slurm reports it; RuntimeError when it cannot say."""
    exe = shutil.which(sinfo) or sinfo
    try:
        p = subprocess.run([exe, "-h", "-N", "-n", node, "-o", "%N|%T|%E"], capture_output=True, text=True,
                           timeout=timeout)
    except FileNotFoundError:
        raise RuntimeError(f"`{sinfo}` is not installed or not on PATH") from None
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"`{sinfo}` did not answer within {timeout:g} s") from None
    if p.returncode != 0:
        raise RuntimeError(f"`{sinfo}` failed ({p.returncode}): {p.stderr.strip()[:300]}")
    for line in p.stdout.splitlines():
        parts = line.split("|", 2)
        if len(parts) == 3 and parts[0].strip() == node:
            reason = parts[2].strip()
            return parts[1].strip().lower(), "" if reason.lower() == "none" else reason
    raise RuntimeError(f"Slurm does not know node {node!r}")


def apply(proposals: list[dict[str, Any]], scontrol: str = "scontrol", sinfo: str = "sinfo", max_new: int = 1,
          timeout: float = 30.0) -> list[DrainOutcome]:
    """Drain the proposed nodes through Slurm (see the module's rules); one outcome each."""
    out: list[DrainOutcome] = []
    drained = 0
    exe = shutil.which(scontrol) or scontrol
    for p in proposals:
        node = str(p["node"])
        if not valid_node(node):
            out.append(DrainOutcome(node, "refused", "not a plain host name: Slurm would expand or misread it"))
            continue
        try:
            state, reason = node_state(node, sinfo, timeout)
        except RuntimeError as e:
            out.append(DrainOutcome(node, "failed", f"cannot read its state: {e}"))
            continue
        if "drain" in state:
            if reason.startswith(PREFIX):
                out.append(DrainOutcome(node, "already-ours", f"already {state}: {reason}"))
            else:
                out.append(DrainOutcome(node, "left-alone", f"{state} by someone else ({reason or 'no reason'}): "
                                                            "not changed"))
            continue
        cmd = drain_command(node, f"{p.get('action') or 'drain'}: {p.get('reason') or 'fleet policy'}", scontrol)
        if drained >= max_new:
            out.append(DrainOutcome(node, "deferred", f"at most {max_new} new drain(s) per run (max_new_drains)", cmd))
            continue
        try:
            r = subprocess.run([exe, *cmd[1:]], capture_output=True, text=True, timeout=timeout)
        except (FileNotFoundError, subprocess.TimeoutExpired) as e:
            out.append(DrainOutcome(node, "failed", f"`{scontrol}` could not run: {e}", cmd))
            continue
        if r.returncode != 0:
            out.append(DrainOutcome(node, "failed", f"`{scontrol}` failed ({r.returncode}): "
                                                    f"{(r.stderr or r.stdout).strip()[:300]}", cmd))
            continue
        drained += 1
        out.append(DrainOutcome(node, "drained", f"was {state}", cmd))
    return out
