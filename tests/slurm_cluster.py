"""A real one-node Slurm with accounting (slurmctld, slurmd, slurmdbd + MariaDB,
munge) from the Debian packages, for tests.  `start(workdir)` brings it up as
root (munge key, MariaDB database,
slurmdbd.conf, slurm.conf); `stop()` ends every daemon by the pid it started
or wrote, never by name.  `unavailable()` says why it cannot run here.

The daemons use machine-wide paths (/etc/slurm, /etc/munge, port 3307), so one
cluster runs at a time on a machine: `start()` takes an exclusive lock on
`LOCK` (held until `stop()`), and a second test run waits for it."""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import fcntl
import time
from pathlib import Path

LOCK = Path("/tmp/rulekit-slurm-fixture.lock")
BINARIES = ["slurmctld", "slurmd", "slurmdbd", "sacct", "sbatch", "sacctmgr", "munged", "mysqld_safe", "mysql"]


def unavailable() -> str | None:
    missing = [b for b in BINARIES if not shutil.which(b) and not Path("/usr/sbin", b).exists()]
    if missing:
        return f"Slurm packages not installed (missing {', '.join(missing)}); .ci/run installs them"
    if os.geteuid() != 0:
        return "the Slurm fixture needs root (daemons, munge key, MariaDB)"
    return None


def _pid(path: Path) -> int | None:
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _wait(cond, timeout: float, what: str) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return
        time.sleep(0.3)
    raise RuntimeError(f"timed out waiting for {what}")


class SlurmCluster:
    def __init__(self, work: Path):
        self.work = work
        self.host = socket.gethostname().split(".")[0]
        self.pidfiles: list[Path] = []
        self.procs: list[subprocess.Popen] = []
        self.log = work / "logs"
        self._lock = None

    def _run(self, *cmd: str, check: bool = True, **kw) -> subprocess.CompletedProcess:
        return subprocess.run(list(cmd), capture_output=True, text=True, check=check, timeout=60, **kw)

    def start(self) -> "SlurmCluster":
        self._lock = open(LOCK, "a")
        fcntl.flock(self._lock, fcntl.LOCK_EX)  # another run's cluster ends first
        self.log.mkdir(parents=True, exist_ok=True)
        for d in ("/etc/munge", "/run/munge", "/var/lib/munge", "/var/log/munge"):
            Path(d).mkdir(parents=True, exist_ok=True)
        key = Path("/etc/munge/munge.key")
        if not key.exists():
            key.write_bytes(os.urandom(1024))
        self._run("chown", "-R", "munge:munge", "/etc/munge", "/run/munge", "/var/lib/munge", "/var/log/munge")
        key.chmod(0o400)
        munge_pid = Path("/run/munge/munged.pid")
        if not (_pid(munge_pid) and Path(f"/proc/{_pid(munge_pid)}").exists()):
            self._run("su", "-s", "/bin/sh", "munge", "-c", "/usr/sbin/munged")
            self.pidfiles.append(munge_pid)
        # MariaDB on its own socket and datadir, so nothing else on the machine is touched
        run = self.work / "mysqlrun"
        run.mkdir(exist_ok=True)
        shutil.chown(run, "mysql", "mysql")
        data, sock = self.work / "mysql", run / "mysql.sock"
        self.mysql_sock = sock
        self.work.chmod(0o755)
        if not data.exists():
            data.mkdir()
            shutil.chown(data, "mysql", "mysql")
            r = self._run("mysql_install_db", "--no-defaults", "--user=mysql", f"--datadir={data}",
                          "--auth-root-authentication-method=normal", check=False)
            if r.returncode:
                raise RuntimeError(f"mysql_install_db failed: {r.stderr[-800:]}")
        self._run("chown", "-R", "mysql:mysql", str(data))
        mpid = run / "mysqld.pid"
        self.procs.append(subprocess.Popen(
            ["mysqld_safe", "--no-defaults", "--user=mysql", f"--datadir={data}", f"--socket={sock}",
             f"--pid-file={mpid}", "--skip-networking=0", "--bind-address=127.0.0.1", "--port=3307",
             f"--log-error={data / 'mysqld.err'}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        self.pidfiles.append(mpid)
        _wait(lambda: sock.exists() and self._run("mysql", f"--socket={sock}", "-uroot", "-e", "select 1",
                                                  check=False).returncode == 0, 60, "MariaDB")
        self._run("mysql", f"--socket={sock}", "-uroot", "-e",
                  "CREATE DATABASE IF NOT EXISTS slurm_acct_db; CREATE USER IF NOT EXISTS 'slurm'@'localhost' "
                  "IDENTIFIED BY 'pw'; CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY 'pw'; "
                  "GRANT ALL ON slurm_acct_db.* TO 'slurm'@'localhost'; GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';")
        etc = Path("/etc/slurm")
        etc.mkdir(parents=True, exist_ok=True)
        dbd = etc / "slurmdbd.conf"
        dbd.write_text(f"AuthType=auth/munge\nDbdHost=localhost\nSlurmUser=slurm\nStorageType=accounting_storage/mysql\n"
                       f"StorageHost=127.0.0.1\nStoragePort=3307\nStorageUser=slurm\nStoragePass=pw\n"
                       f"StorageLoc=slurm_acct_db\nLogFile={self.log / 'slurmdbd.log'}\nPidFile=/run/slurmdbd.pid\n")
        shutil.chown(dbd, "slurm", "slurm")
        dbd.chmod(0o600)
        mem = max(512, os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // (1 << 20) // 2)
        (etc / "slurm.conf").write_text(
            f"ClusterName=test\nSlurmctldHost={self.host}\nAuthType=auth/munge\nProctrackType=proctrack/linuxproc\n"
            f"TaskPlugin=task/none\nSlurmUser=slurm\nSlurmdUser=root\nStateSaveLocation=/var/spool/slurmctld\n"
            f"SlurmdSpoolDir=/var/spool/slurmd\nSchedulerType=sched/backfill\nSelectType=select/cons_tres\nSelectTypeParameters=CR_CPU\n"
            f"AccountingStorageType=accounting_storage/slurmdbd\nAccountingStorageHost=localhost\n"
            f"JobAcctGatherType=jobacct_gather/none\nReturnToService=2\nSlurmctldPidFile=/run/slurmctld.pid\n"
            f"SlurmdPidFile=/run/slurmd.pid\nSlurmctldLogFile={self.log / 'slurmctld.log'}\n"
            f"SlurmdLogFile={self.log / 'slurmd.log'}\nMinJobAge=2\nKillWait=2\nOverTimeLimit=0\n"
            f"NodeName={self.host} CPUs={os.cpu_count()} RealMemory={mem} State=UNKNOWN\n"
            f"PartitionName=debug Nodes={self.host} Default=YES MaxTime=INFINITE State=UP\n")
        for d in ("/var/spool/slurmctld", "/var/spool/slurmd", "/var/log/slurm"):
            Path(d).mkdir(parents=True, exist_ok=True)
        self._run("chown", "-R", "slurm:slurm", "/var/spool/slurmctld", "/var/log/slurm", str(self.log))
        self.log.chmod(0o777)
        self._run("slurmdbd")
        self.pidfiles.append(Path("/run/slurmdbd.pid"))
        _wait(lambda: self._run("sacctmgr", "-i", "add", "cluster", "test", check=False).returncode == 0
              or "already exists" in self._run("sacctmgr", "-n", "list", "cluster", check=False).stdout + "test", 30,
              "slurmdbd")
        self._run("slurmctld")
        self.pidfiles.append(Path("/run/slurmctld.pid"))
        _wait(lambda: self._run("scontrol", "ping", check=False).stdout.count("UP") > 0, 30, "slurmctld")
        self._run("slurmd")
        self.pidfiles.append(Path("/run/slurmd.pid"))
        _wait(lambda: "idle" in self._run("sinfo", "-h", "-o", "%T", check=False).stdout, 60, "slurmd idle")
        return self

    def sbatch(self, *args: str) -> str:
        out = self._run("sbatch", "--parsable", f"--chdir={self.work}", f"--output={self.work}/slurm-%j.out", *args)
        return out.stdout.strip().split(";")[0]

    def stop(self) -> None:
        import signal

        # end the jobs first (slurmstepd outlives slurmd), then each daemon by its pid file
        self._run("scancel", "-u", "root", check=False)
        for _ in range(50):
            if not self._run("squeue", "-h", check=False).stdout.strip():
                break
            time.sleep(0.2)

        for pf in reversed(self.pidfiles):
            pid = _pid(pf)
            if pid and Path(f"/proc/{pid}").exists():
                try:
                    os.kill(pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
                for _ in range(50):
                    if not Path(f"/proc/{pid}").exists():
                        break
                    time.sleep(0.1)
        for p in self.procs:  # mysqld_safe exits once mysqld does
            try:
                p.wait(15)
            except subprocess.TimeoutExpired:
                p.kill()
        if self._lock is not None:
            self._lock.close()  # releases the machine-wide lock
            self._lock = None
