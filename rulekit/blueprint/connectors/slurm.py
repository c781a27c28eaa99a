"""Slurm execution context: `sacct --json` (and, where its JSON is wrong, `sacct -P`).

    [[context]]
    type = "slurm"
    sacct = "sacct"               # the binary (default: sacct on PATH)
    args = ["--clusters=a"]       # extra sacct arguments (optional)
    timeout = "60s"
The JSON's shape depends on the version: branch on `meta.Slurm.version`.
22.05 (dbv0.0.38): `state.current` a string, times plain numbers; its
`exit_code` says SUCCESS/0 for a job that failed, so exit codes are read from
`sacct -P -o JobIDRaw,JobID,State,ExitCode` instead.  23.02 and later:
`state.current` a list, numbers as `{set, infinite, number}`.
Attempts: one per record; `-D` makes sacct list every requeued run, each its
own attempt (numbered by start time); array tasks are `<array>_<task>`; het
job components are joined into one attempt of the leader `<id>`; steps are
kept; node lists expanded from hostlist syntax.  Pending and running jobs
are skipped.  Runs sacct; never scontrol or anything that changes state.
"""
from __future__ import annotations

import json
import shutil
import subprocess
from datetime import datetime, timezone
from typing import Any, Iterable

from rulekit.blueprint.connectors.base import ContextConnector
from rulekit.blueprint.connectors.hostlist import expand
from rulekit.blueprint.model import Attempt, ConnectorError, Window, parse_duration

UNFINISHED = {"PENDING", "RUNNING", "SUSPENDED", "REQUEUE_HOLD", "REQUEUE_FED", "RESIZING", "CONFIGURING",
              "COMPLETING", "SIGNALING", "STAGE_OUT"}


def _num(v: Any) -> float | None:
    """22.05 plain numbers; 23.02+ {set, infinite, number}."""
    if isinstance(v, dict):
        if not v.get("set", True) or v.get("infinite"):
            return None
        v = v.get("number")
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return float(v)
    return None


def _when(v: Any) -> datetime | None:
    t = _num(v)
    return datetime.fromtimestamp(t, timezone.utc) if t else None


def _state(job: dict[str, Any]) -> str | None:
    st = job.get("state")
    cur = st.get("current") if isinstance(st, dict) else st
    if isinstance(cur, list):
        cur = cur[0] if cur else None
    return cur.split()[0] if isinstance(cur, str) and cur else None


def _exit_json(ec: Any) -> str | None:
    if not isinstance(ec, dict):
        return None
    rc = _num(ec.get("return_code"))
    sig = ec.get("signal") or {}
    sn = _num(sig.get("id", sig.get("signal_id"))) if isinstance(sig, dict) else None
    return f"{int(rc or 0)}:{int(sn or 0)}"


def _version(meta: dict[str, Any]) -> tuple[int, int]:
    v = ((meta or {}).get("Slurm") or (meta or {}).get("slurm") or {}).get("version") or {}
    try:
        return int(v.get("major", 0)), int(v.get("minor", 0))
    except (TypeError, ValueError):
        return (0, 0)


def record_id(job: dict[str, Any]) -> str:
    arr = job.get("array") or {}
    task = _num(arr.get("task_id"))
    if _num(arr.get("job_id")) and task is not None:
        return f"{int(_num(arr['job_id']))}_{int(task)}"  # type: ignore[arg-type]
    return str(job.get("job_id"))


class SlurmContext(ContextConnector):
    TYPE = "slurm"
    KEYS = {"type", "name", "sacct", "args", "timeout"}

    def __init__(self, sacct: str = "sacct", args: tuple[str, ...] = (), timeout: float = 60.0):
        self.sacct, self.args, self.timeout = sacct, list(args), timeout
        self.notes: list[str] = []

    @classmethod
    def from_config(cls, sec: Any) -> "SlurmContext":
        t = sec.get("timeout", (str, int, float), "60s")
        return cls(sec.get("sacct", str, "sacct"), sec.str_list("args"), parse_duration(t))

    # ---- running sacct --------------------------------------------------------------------
    def _sacct(self, extra: list[str]) -> str:
        exe = shutil.which(self.sacct) or self.sacct
        try:
            p = subprocess.run([exe, *extra, *self.args], capture_output=True, text=True, timeout=self.timeout)
        except FileNotFoundError:
            raise ConnectorError(f"`{self.sacct}` is not installed or not on PATH") from None
        except subprocess.TimeoutExpired:
            raise ConnectorError(f"`sacct` did not answer within {self.timeout:g} s") from None
        if p.returncode != 0:
            raise ConnectorError(f"`sacct` failed ({p.returncode}): {p.stderr.strip()[:300]}")
        return p.stdout

    def _window_args(self, window: Window, job_id: str | None) -> list[str]:
        a = ["-a", "-D"]
        fmt = "%Y-%m-%dT%H:%M:%S"
        if window.since:
            a += ["-S", window.since.astimezone().strftime(fmt)]
        elif job_id is None:
            a += ["-S", "now-1days"]
        else:
            a += ["-S", "2000-01-01T00:00:00"]
        if window.until:
            a += ["-E", window.until.astimezone().strftime(fmt)]
        if job_id:
            a += ["-j", job_id]
        return a

    def attempts(self, window: Window, job_id: str | None = None) -> Iterable[Attempt]:
        wargs = self._window_args(window, job_id)
        raw = self._sacct(["--json", *wargs])
        try:
            data = json.loads(raw)
        except json.JSONDecodeError as e:
            raise ConnectorError(f"`sacct --json` printed something that is not JSON ({e.msg} at line {e.lineno})") from None
        exit_codes = None
        if _version(data.get("meta") or {}) < (23, 2):
            exit_codes = self._plain_exit_codes(wargs)
        return self.parse(data, exit_codes, window)

    def _plain_exit_codes(self, wargs: list[str]) -> dict[str, list[str]]:
        """JobIDRaw -> exit codes in sacct's order (one per requeued run)."""
        out: dict[str, list[str]] = {}
        for line in self._sacct(["-P", "-n", "-o", "JobIDRaw,JobID,State,ExitCode", *wargs]).splitlines():
            parts = line.split("|")
            if len(parts) >= 4 and "." not in parts[0]:
                out.setdefault(parts[0], []).append(parts[3])
        return out

    # ---- JSON -> attempts (pure) ------------------------------------------------------------
    def parse(self, data: dict[str, Any], exit_codes: dict[str, list[str]] | None = None,
              window: Window | None = None) -> list[Attempt]:
        jobs = data.get("jobs")
        if not isinstance(jobs, list):
            raise ConnectorError("`sacct --json` answer has no `jobs` list")
        seen_raw: dict[str, int] = {}
        records: list[tuple[dict[str, Any], str | None]] = []
        for j in jobs:
            raw = str(j.get("job_id"))
            i = seen_raw.get(raw, 0)
            seen_raw[raw] = i + 1
            ec = None
            if exit_codes is not None and raw in exit_codes and i < len(exit_codes[raw]):
                ec = exit_codes[raw][i]
            records.append((j, ec))
        # het jobs: components share het.job_id; join them into the leader's attempt
        groups: dict[tuple[str, float], list[tuple[dict[str, Any], str | None]]] = {}
        order: list[tuple[str, float]] = []
        for j, ec in records:
            het = j.get("het") or {}
            hid = _num(het.get("job_id"))
            rid = str(int(hid)) if hid else record_id(j)
            key = (rid, _num((j.get("time") or {}).get("submission")) or 0.0) if not hid else (rid, 0.0)
            if key not in groups:
                groups[key] = []
                order.append(key)
            groups[key].append((j, ec))
        by_id: dict[str, list[Attempt]] = {}
        for key in order:
            a = self._attempt(key[0], groups[key])
            if a is not None:
                by_id.setdefault(a.job_id, []).append(a)
        out = []
        for jid, atts in by_id.items():
            atts.sort(key=lambda a: (a.start or datetime.min.replace(tzinfo=timezone.utc)))
            for n, a in enumerate(atts):
                a.attempt = n
                if window is None or window.contains(a):
                    out.append(a)
        return out

    def _attempt(self, jid: str, comps: list[tuple[dict[str, Any], str | None]]) -> Attempt | None:
        comps = sorted(comps, key=lambda c: _num((c[0].get("het") or {}).get("job_offset")) or 0)
        states = [_state(j) for j, _ in comps]
        if any(s in UNFINISHED for s in states if s):
            return None
        lead, lead_ec = comps[0]
        worst = next(((j, ec, s) for (j, ec), s in zip(comps, states) if s != "COMPLETED"), (lead, lead_ec, states[0]))
        j, ec, state = worst
        nodes: list[str] = []
        steps: list[dict[str, Any]] = []
        for c, _ in comps:
            try:
                for n in expand(c.get("nodes")):
                    if n not in nodes:
                        nodes.append(n)
            except ValueError as e:
                self.notes.append(f"job {jid}: {e}")
            for s in c.get("steps") or []:
                st = s.get("step") or {}
                sn = (s.get("nodes") or {}).get("range") or (s.get("nodes") or {}).get("list")
                steps.append({"id": st.get("id") or st.get("name"), "name": st.get("name"),
                              "state": _state(s), "exit_code": _exit_json(s.get("exit_code")),
                              "nodes": expand(sn) if isinstance(sn, str) else list(sn or [])})
        t = j.get("time") or {}
        ltime = lead.get("time") or {}
        starts = [x for x in (_when((c.get("time") or {}).get("start")) for c, _ in comps) if x]
        ends = [x for x in (_when((c.get("time") or {}).get("end")) for c, _ in comps) if x]
        a = Attempt(job_id=jid, nodes=tuple(nodes), start=min(starts) if starts else _when(ltime.get("start")),
                    end=max(ends) if ends else _when(t.get("end")), state=state,
                    exit_code=ec if ec is not None else _exit_json(j.get("exit_code")), name=lead.get("name"),
                    user=lead.get("user"), partition=lead.get("partition"), cluster=lead.get("cluster"),
                    steps=steps, source="slurm")
        arr = lead.get("array") or {}
        if _num(arr.get("job_id")) and _num(arr.get("task_id")) is not None:
            a.extra["array"] = {"job_id": int(_num(arr["job_id"])), "task_id": int(_num(arr["task_id"]))}  # type: ignore[arg-type]
        if len(comps) > 1 or _num((lead.get("het") or {}).get("job_id")):
            a.extra["het_components"] = [str(c.get("job_id")) for c, _ in comps]
        a.extra["raw_job_id"] = str(lead.get("job_id"))
        if state == "CANCELLED" and j.get("kill_request_user") and a.end:
            a.execution_cancellation = {"record_id": jid, "cancelled_by": str(j["kill_request_user"]),
                                        "source_time": a.end.isoformat()}
        return a
