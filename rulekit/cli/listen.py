"""Listening sockets for the server commands (`serve`, `dashboard`, `lsp --tcp`): a busy
or impossible address is one line on stderr and exit 2 (bad usage), never a
traceback or an "internal error".  The socket is bound here, before the server
starts, so the URL a command prints is one it really listens on.  Nothing else."""
from __future__ import annotations

import errno
import socket
from typing import NoReturn

import typer

from rulekit.cli.status import ExitStatus


def cannot_listen(host: str, port: int, e: OSError) -> NoReturn:
    """One line naming the address and why, then exit 2."""
    reason = e.strerror or str(e)
    if e.errno == errno.EADDRINUSE:
        reason = "the address is already in use (another server on that port?)"
    elif e.errno == errno.EADDRNOTAVAIL:
        reason = "that address is not one of this machine's"
    elif e.errno == errno.EACCES:
        reason = "permission denied (ports below 1024 need privileges)"
    elif isinstance(e, socket.gaierror):
        reason = f"unknown host ({e.strerror or e})"
    typer.echo(f"error: cannot listen on {host}:{port}: {reason}", err=True)
    raise typer.Exit(ExitStatus.USAGE)


def bind_or_exit(host: str, port: int) -> socket.socket:
    """A TCP socket bound to host:port (port 0: any free port), inheritable (uvicorn's
    worker processes take it over); a failure ends the command through `cannot_listen`."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        # with the TCP protocol number: asyncio sets TCP_NODELAY on accepted connections only
        # for sockets that say they are TCP (a socket made with proto 0 does not, and every
        # small response then waits ~40 ms for the client's delayed ACK)
        sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    except OSError as e:
        cannot_listen(host, port, e)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as e:
        sock.close()
        cannot_listen(host, port, e)
    sock.set_inheritable(True)
    return sock


def url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host
