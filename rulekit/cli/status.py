"""The exit statuses of every `rulekit` command, and the one way to stop with one.

`ExitStatus` is the only source of exit codes in `rulekit/cli/`: 0 done, 1 the
command ran and found something (check/lint findings, failed tests, some of
several jobs failed, evidence that could not be read), 2 bad usage or bad input
(a missing path, an invalid corpus or config), 3 an internal error (a bug in
rulekit: an unexpected exception, reported in one line; `--traceback` prints it).
Must not import anything of rulekit but the CLI's own modules.
"""
from __future__ import annotations

from enum import IntEnum
from typing import NoReturn

import typer


class ExitStatus(IntEnum):
    OK = 0
    FINDINGS = 1
    USAGE = 2
    INTERNAL = 3


def fail(message: str, status: ExitStatus = ExitStatus.USAGE) -> NoReturn:
    """`error: MESSAGE` on stderr, then exit with `status` (default: bad usage or input)."""
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(status)


def exit_with(status: ExitStatus) -> NoReturn:
    raise typer.Exit(status)
