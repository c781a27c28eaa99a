"""Plugin containment: import each Python rule file once in a child process first.

A `.py` rule file is code: its import may loop forever, call `sys.exit()`, print
to our stdout (which is a JSON report or the language server's protocol stream)
or raise `BaseException`s.  `probe_plugins()` executes the files in a child
interpreter, one after another, with the child's file descriptors 1 and 2 sent
to a capture file per plugin, and enforces a per-file time limit by killing the
child.  Only a file whose import finished cleanly in the child is executed in
the loader's process (where its rule functions must live); every other outcome
becomes a located Diagnostic at the plugin file, never a hang, an exit or a
corrupted stream.

Why a child process and not a watchdog thread: a thread cannot be killed, an
asynchronous exception never reaches a thread blocked in C (`time.sleep`, a
socket read), `SIGALRM` only works on the main thread (the language server
loads off it) and `os._exit()` or a crash inside a plugin would take us down.
The cost is one interpreter start per load of a folder with unverified
plugins (+0.43 s, x1.11, on a 7-plugin corpus: `bench/plugin_probe.py`); verdicts are cached per process
by content (the file, its folder's `common/` helpers, the limit), and the
bundled corpus, which ships with rulekit and is tested with it, is not probed.

The time limit: `plugin_timeout()` (the `RULEKIT_PLUGIN_TIMEOUT` environment
variable, seconds, set by `rulekit --plugin-timeout`; default 10 s).
Must not import the loader or anything above the rules group.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import select
import signal
import subprocess
import sys
import tempfile
import time
import traceback
import types
from pathlib import Path
from typing import Sequence

from rulekit.rules.records import dataclass

DEFAULT_TIMEOUT = 10.0
ENV_TIMEOUT = "RULEKIT_PLUGIN_TIMEOUT"
STARTUP_GRACE = 30.0  # seconds the child may take to start (importing rulekit) before its first plugin
MAX_OUTPUT = 4000  # characters of captured plugin output reported in a note


def plugin_timeout(value: float | None = None) -> float:
    """The import time limit per plugin file, in seconds (> 0)."""
    if value is not None and value > 0:
        return float(value)
    from rulekit.config import EngineOptions

    return EngineOptions.from_env().plugin_timeout


@dataclass(frozen=True)
class Verdict:
    """What importing one plugin file did in the child.

    status: ok | error (an Exception: message, line, col) | base (a BaseException
    such as SystemExit: message, line) | timeout | died (the child interpreter ended)."""

    status: str
    message: str = ""
    line: int = 1
    col: int = 1
    output: str = ""
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.status == "ok"


_CACHE: dict[str, Verdict] = {}


def content_key(path: str | Path, text: str, timeout: float) -> str:
    """Cache key: the file's text, its folder's `common/` helpers (names, sizes, mtimes)
    and the limit (a timeout verdict depends on it)."""
    h = hashlib.sha256(text.encode("utf-8", "replace"))
    common = Path(path).parent / "common"
    if common.is_dir():
        for p in sorted(common.rglob("*.py")):
            try:
                st = p.stat()
            except OSError:
                continue
            h.update(f"\0{p.relative_to(common)}\0{st.st_size}\0{st.st_mtime_ns}".encode())
    h.update(f"\0timeout={timeout}".encode())
    return h.hexdigest()


def cached(path: str | Path, text: str, timeout: float | None = None) -> Verdict | None:
    return _CACHE.get(content_key(path, text, plugin_timeout(timeout)))


def probe_plugins(items: Sequence[tuple[str, str]], timeout: float | None = None) -> dict[str, Verdict]:
    """Import each (path, text) in a child interpreter; path -> Verdict.  Blocking,
    bounded by about `len(items) * timeout` plus the child's start-up."""
    limit = plugin_timeout(timeout)
    out: dict[str, Verdict] = {}
    todo: list[tuple[str, str, str]] = []
    for path, text in items:
        key = content_key(path, text, limit)
        if key in _CACHE:
            out[path] = _CACHE[key]
        else:
            todo.append((path, text, key))
    while todo:
        done = _run_child([(p, t) for p, t, _ in todo], limit)
        for (path, _, key), v in zip(todo, done):
            out[path] = v
            _CACHE[key] = v
        todo = todo[len(done):]
    return out


def _run_child(items: list[tuple[str, str]], limit: float) -> list[Verdict]:
    """One child run over items; returns verdicts for a prefix of them (all of them
    unless the child had to be killed, in which case the last one is the culprit)."""
    verdicts: list[Verdict] = []
    with tempfile.TemporaryDirectory(prefix="rulekit-probe-") as tmp:
        payload = json.dumps({"items": [{"path": p, "text": t} for p, t in items], "outdir": tmp})
        env = dict(os.environ)
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        proc = subprocess.Popen([sys.executable, "-m", "rulekit.rules.sandbox"], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env,
                                start_new_session=True)
        assert proc.stdin is not None and proc.stdout is not None
        try:
            proc.stdin.write(payload.encode())
            proc.stdin.close()
        except BrokenPipeError:
            pass
        buf = b""
        started: float | None = None
        deadline = time.monotonic() + STARTUP_GRACE + limit
        fd = proc.stdout.fileno()
        try:
            while len(verdicts) < len(items):
                if b"\n" not in buf:
                    wait = deadline - time.monotonic()
                    ready = select.select([fd], [], [], max(0.0, wait))[0] if wait > 0 else []
                    if not ready:  # the current plugin ran out of time
                        i = len(verdicts)
                        spent = time.monotonic() - started if started is not None else 0.0
                        line = _where_stuck(proc, tmp, items[i][0]) if started is not None else 1
                        verdicts.append(Verdict("timeout", f"importing the plugin did not finish within {limit:g} s "
                                                f"(stopped at line {line}); set a longer limit with "
                                                f"`rulekit --plugin-timeout SECONDS` or {ENV_TIMEOUT}",
                                                line=line, output=_read_output(tmp, i), seconds=spent))
                        break
                    chunk = os.read(fd, 65536)
                    if not chunk:  # the child ended without reporting the current plugin
                        i = len(verdicts)
                        code = proc.wait()
                        verdicts.append(Verdict("died", f"the plugin ended the interpreter (exit status {code}) "
                                                "while it was imported", output=_read_output(tmp, i)))
                        break
                    buf += chunk
                    continue
                line, buf = buf.split(b"\n", 1)
                msg = json.loads(line)
                if msg.get("start") is not None:
                    started = time.monotonic()
                    deadline = started + limit
                    continue
                i = msg["i"]
                verdicts.append(Verdict(msg["status"], msg.get("message", ""), msg.get("line", 1), msg.get("col", 1),
                                        _read_output(tmp, i), msg.get("seconds", 0.0)))
        finally:
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, 9)
                except OSError:
                    proc.kill()
            proc.wait()
            proc.stdout.close()
    return verdicts


def _where_stuck(proc: subprocess.Popen, tmp: str, path: str) -> int:
    """Ask the child (faulthandler on SIGUSR1) where it is; the innermost line in `path`."""
    tb = Path(tmp, "stuck.tb")
    try:
        os.kill(proc.pid, signal.SIGUSR1)
    except OSError:
        return 1
    end = time.monotonic() + 1.0
    text = ""
    while time.monotonic() < end:
        text = tb.read_text("utf-8", "replace") if tb.exists() else ""
        if "File" in text:
            time.sleep(0.05)
            text = tb.read_text("utf-8", "replace")
            break
        time.sleep(0.02)
    for m in re.finditer(r'File "(.*)", line (\d+)', text):
        if m.group(1) == path:
            return int(m.group(2))  # faulthandler prints the innermost frame first
    return 1


def _read_output(tmp: str, i: int) -> str:
    try:
        data = Path(tmp, f"{i}.out").read_bytes()
    except OSError:
        return ""
    text = data.decode("utf-8", "replace")
    return text if len(text) <= MAX_OUTPUT else text[:MAX_OUTPUT] + f"… ({len(text) - MAX_OUTPUT} more characters)"


# ---- shared by the child and the in-process loader --------------------------------------------

def describe(e: BaseException, file: str) -> tuple[str, int, int]:
    """(message, line, col) of an exception raised while importing `file`."""
    if isinstance(e, SyntaxError) and (e.filename in (None, file, "<unknown>")):
        return f"syntax error in plugin: {e.msg}", e.lineno or 1, e.offset or 1
    line = 1
    for frame in traceback.extract_tb(e.__traceback__):
        if frame.filename == file:
            line = frame.lineno or line
    if isinstance(e, SystemExit):
        return f"plugin called sys.exit({e.code!r}) while it was imported; a rule file must not exit", line, 1
    if not isinstance(e, Exception):
        return f"plugin raised {type(e).__name__} while it was imported: {e}".rstrip(": "), line, 1
    return f"plugin raised {type(e).__name__}: {e}", line, 1


def package_for(folder: Path) -> str:
    """A synthetic package whose __path__ is the rules folder, so rule modules can do
    `from .common.x import y`; recreated fresh for every load."""
    digest = hashlib.sha1(str(folder.resolve()).encode()).hexdigest()[:12]
    name = f"_rulekit_rules_{digest}"
    for mod in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
        del sys.modules[mod]
    pkg = types.ModuleType(name)
    pkg.__path__ = [str(folder)]  # type: ignore[attr-defined]
    pkg.__package__ = name
    sys.modules[name] = pkg
    return name


# ---- the child -----------------------------------------------------------------------------------

def _child_main() -> None:
    from rulekit.rules.plugins import _ACTIVE, PluginSink

    import faulthandler

    req = json.loads(sys.stdin.buffer.read())
    stuck = open(os.path.join(req["outdir"], "stuck.tb"), "w")
    faulthandler.register(signal.SIGUSR1, file=stuck, all_threads=False)
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    packages: dict[Path, str] = {}
    for i, item in enumerate(req["items"]):
        path = item["path"]
        cap = os.open(os.path.join(req["outdir"], f"{i}.out"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(cap, 1)
        os.dup2(cap, 2)
        os.close(cap)
        proto.write(json.dumps({"start": i}) + "\n")
        folder = Path(path).parent
        if folder not in packages:
            packages[folder] = package_for(folder)
        sink = PluginSink(file=path)
        token = _ACTIVE.set(sink)
        t0 = time.monotonic()
        res: dict = {"i": i, "status": "ok"}
        try:
            module = types.ModuleType(f"{packages[folder]}.{Path(path).stem}")
            module.__file__ = path
            module.__package__ = packages[folder]
            sys.modules[module.__name__] = module
            exec(compile(item["text"], path, "exec"), module.__dict__)
        except BaseException as e:  # noqa: BLE001 - the point: report whatever the plugin raised
            msg, line, col = describe(e, path)
            res.update(status="error" if isinstance(e, Exception) else "base", message=msg, line=line, col=col)
        finally:
            _ACTIVE.reset(token)
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except Exception:  # noqa: BLE001 - a plugin may have replaced or closed them
            pass
        res["seconds"] = time.monotonic() - t0
        proto.write(json.dumps(res) + "\n")


if __name__ == "__main__":
    _child_main()
