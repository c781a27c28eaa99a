"""The `rulekit` command line: a thin layer that renders what the core returns.

Each command lives in its own module and registers itself on `app`; the modules
are imported when their command is looked up (`rulekit.cli.app.COMMAND_MODULES`)
when `main()` runs, so starting one command does not import the others; the app
read any other way (`get_command(app)`, `CliRunner().invoke(app)`) has them all.
Must not import a command module at import time.

`main()` (the console script) ends a command of `app.FAST_EXIT` without the
interpreter's teardown, as mypy's fast exit does: its output flushed and the
`atexit` handlers run, then `os._exit` with the same status.  Freeing every
object a run built (the corpus, the jobs' results) is most of the time a short
command spends after its work (~55 ms of a 0.3 s `rulekit attribute`), and the
operating system frees a process's memory at once.  A command still running a
thread of its own (not a daemon), or run under a profiler or tracer (`python -m
cProfile`, a debugger, coverage: they write their output after the program's
end), exits the usual way."""
import os
import sys
import threading

from rulekit.cli.app import FAST_EXIT, app, load_commands

__all__ = ["app", "load_commands", "main"]


def main() -> None:
    app.on_demand()
    try:
        app()
    except SystemExit as e:
        if app.ran in FAST_EXIT and not _threads_left() and sys.getprofile() is None and sys.gettrace() is None:
            _exit_now(e.code)
        raise


def _threads_left() -> bool:
    main_thread = threading.main_thread()
    return any(t is not main_thread and t.is_alive() and not t.daemon for t in threading.enumerate())


def _exit_now(code: object) -> None:
    """What `sys.exit(code)` would end with, without freeing the heap first."""
    import atexit

    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code
    else:  # sys.exit("message"): the message on stderr, status 1
        status = 1
        try:
            print(code, file=sys.stderr)
        except (OSError, ValueError):
            pass
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):  # a closed pipe (`rulekit ... | head`): nothing more to say
            pass
    atexit._run_exitfuncs()  # logging's flush, finalizers, multiprocessing's clean-up
    os._exit(status % 256)
