"""The console script ends a short command without the interpreter's teardown
(`rulekit.cli.main`, `app.FAST_EXIT`): checked on real processes that the output
is whole, the exit status is the command's, the atexit handlers still run, and
that a command outside the set, or one that leaves a thread running, ends the
usual way."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "xid149-nvlink"

# an object whose __del__ runs only in the interpreter's teardown (module globals are
# cleared there), and an atexit handler: which of the two speak tells how the process ended
_PROBE = """
import atexit, sys, threading
class Teardown:
    def __del__(self):
        sys.stderr.write("@@teardown\\n")
keep = Teardown()
atexit.register(lambda: sys.stderr.write("@@atexit\\n"))
if sys.argv[1] == "--thread":
    sys.argv.pop(1)
    # not a daemon, and running until the main thread is done: still there when the command ends
    threading.Thread(target=threading.main_thread().join).start()
sys.argv = ["rulekit", *sys.argv[1:]]
from rulekit.cli import main
main()
"""


@pytest.fixture(scope="module")
def env(tmp_path_factory) -> dict[str, str]:
    """A user's environment with a corpus cache of its own, warm (corpus and scanner analysis)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RULEKIT_")}
    env["RULEKIT_CACHE_DIR"] = str(tmp_path_factory.mktemp("cache"))
    subprocess.run([sys.executable, "-m", "rulekit.cli", "attribute", str(EXAMPLE)], capture_output=True, env=env,
                   cwd=ROOT, timeout=300)
    return env


def _run(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", _PROBE, *args], capture_output=True, text=True, env=env, cwd=ROOT,
                          timeout=300)


def test_attribute_ends_without_teardown_with_its_whole_output_and_atexit_run(env):
    p = _run("attribute", "--format", "json", str(EXAMPLE), env=env)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)[0]["root_cause"]["symptom"]  # the whole JSON, flushed
    assert "@@atexit" in p.stderr
    assert "@@teardown" not in p.stderr


def test_the_exit_status_and_message_of_a_failed_command_are_kept(env, tmp_path):
    p = _run("attribute", str(tmp_path / "no-such-job"), env=env)
    assert p.returncode == 2
    assert "not a job directory" in p.stderr
    assert "@@atexit" in p.stderr and "@@teardown" not in p.stderr


def test_a_command_outside_the_set_ends_the_usual_way(env):
    p = _run("blueprint", "--help", env=env)
    assert p.returncode == 0, p.stderr
    assert "@@atexit" in p.stderr and "@@teardown" in p.stderr


def test_a_thread_left_running_is_waited_for(env):
    p = _run("--thread", "attribute", "--format", "json", str(EXAMPLE), env=env)
    assert p.returncode == 0, p.stderr
    assert "@@teardown" in p.stderr


def test_a_closed_pipe_ends_quietly(env):
    proc = subprocess.Popen([sys.executable, "-c", _PROBE, "attribute", "--format", "json", str(EXAMPLE)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=ROOT)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.read(10)
    proc.stdout.close()  # `rulekit attribute ... | head -c 10`
    err = proc.stderr.read().decode()
    proc.wait(timeout=300)
    assert "Traceback" not in err and "Exception ignored" not in err, err


def test_under_a_profiler_it_ends_the_usual_way(env, tmp_path):
    """`python -m cProfile -o F -m rulekit.cli attribute ...` writes F after the program's end."""
    out = tmp_path / "run.prof"
    p = subprocess.run([sys.executable, "-m", "cProfile", "-o", str(out), "-m", "rulekit.cli", "attribute",
                        "--format", "json", str(EXAMPLE)], capture_output=True, text=True, env=env, cwd=ROOT,
                       timeout=300)
    assert p.returncode == 0, p.stderr
    assert out.is_file() and out.stat().st_size > 0
