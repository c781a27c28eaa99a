"""What a job-directory entry is, found without ever blocking: a regular readable
file (maybe holding binary data), a folder named like a log, a FIFO / socket /
device, a symlink loop or a dangling link, or a file that cannot be read.

`inspect_entry(path)` stats the entry and, for a regular file only, opens it
non-blocking to read its first bytes; it never opens anything else.  It returns
whether to use the entry and the note (RK509 error, RK510 info) to report.
Must not read whole files or know about job.toml's contents.
"""
from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from rulekit.diagnostics import Diagnostic, Span

SNIFF_BYTES = 8192


def inspect_entry(path: Path, shown: str, log_like: bool = True) -> tuple[bool, Diagnostic | None]:
    """(use it, note).  `shown`: the name to print (relative to the job directory);
    `log_like`: the entry is named like a log, so a folder of that name is worth a note
    and binary content is worth one (other files are only checked for readability)."""
    where = Span(str(path), 1, 1)
    try:
        st = os.stat(path)
    except OSError as e:
        if e.errno == errno.ELOOP:
            return False, Diagnostic("RK510", f"skipped `{shown}`: a symlink loop", where)
        if e.errno == errno.ENOENT and path.is_symlink():
            return False, Diagnostic("RK510", f"skipped `{shown}`: a symlink to `{os.readlink(path)}`, "
                                              "which does not exist", where)
        return False, Diagnostic("RK509", f"cannot read `{shown}`: {e.strerror or e}", where)
    if stat.S_ISDIR(st.st_mode):
        if log_like:
            return False, Diagnostic("RK510", f"skipped `{shown}`: a folder named like a log file", where)
        return False, None
    if not stat.S_ISREG(st.st_mode):
        kind = ("a FIFO" if stat.S_ISFIFO(st.st_mode) else "a socket" if stat.S_ISSOCK(st.st_mode)
                else "a device" if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode) else "not a regular file")
        return False, Diagnostic("RK510", f"skipped `{shown}`: {kind} (never opened, so reading cannot block)", where)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as e:
        return False, Diagnostic("RK509", f"cannot read `{shown}`: {e.strerror or e}", where)
    try:
        head = os.read(fd, SNIFF_BYTES)
    except OSError as e:
        return False, Diagnostic("RK509", f"cannot read `{shown}`: {e.strerror or e}", where)
    finally:
        os.close(fd)
    if log_like and b"\0" in head:
        return True, Diagnostic("RK510", f"`{shown}` holds binary data (NUL bytes); ingested, bytes that are not "
                                         "text replaced", where, data={"binary": True})
    return True, None


def check_record_file(path: Path, shown: str) -> Diagnostic | None:
    """None when `path` (job.toml, observations.jsonl) is absent or a readable regular
    file; otherwise the RK509 error to report (a folder, a FIFO, unreadable)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    except OSError as e:
        return Diagnostic("RK509", f"cannot read `{shown}`: {e.strerror or e}", Span(str(path), 1, 1))
    if stat.S_ISDIR(st.st_mode):
        return Diagnostic("RK509", f"`{shown}` is a folder, not a file", Span(str(path), 1, 1))
    if not stat.S_ISREG(st.st_mode):
        return Diagnostic("RK509", f"`{shown}` is not a regular file (a FIFO, socket or device); not opened",
                          Span(str(path), 1, 1))
    if not os.access(path, os.R_OK):
        return Diagnostic("RK509", f"cannot read `{shown}`: Permission denied", Span(str(path), 1, 1))
    return None
