"""Daemons the agents start and find again by their pid files."""

from __future__ import annotations

import hashlib
import os
import signal
import time


def cmdline(pid: int) -> list[str] | None:
    """The process's command line, or None if there is no such process."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            raw = handle.read()
    except OSError:
        return None
    return [part.decode(errors="replace") for part in raw.split(b"\0") if part] or None


def pid_of(pid_file: str, marker: str) -> int | None:
    """The pid in ``pid_file`` if that process's command line has ``marker`` (an
    argument naming the pid file: a pid reused by something else does not)."""
    try:
        with open(pid_file, encoding="ascii") as handle:
            pid = int(handle.read().strip())
    except (OSError, ValueError):
        return None
    argv = cmdline(pid)
    return pid if argv and marker in argv else None


def terminate(pid: int, wait: float) -> None:
    """SIGTERM, and SIGKILL if it does not go within ``wait`` seconds."""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        if cmdline(pid) is None:  # gone, or a zombie waiting for init
            return
        time.sleep(0.02)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def exit_fd(pid: int) -> int | None:
    """A file descriptor that becomes readable the moment process ``pid`` ends
    (a pidfd: any process, not only a child), or None if it has ended already.
    The caller closes it."""
    try:
        return os.pidfd_open(pid)
    except ProcessLookupError:
        return None


def socket_path(directory: str, name: str, short_dir: str) -> str:
    """A daemon's UNIX socket ``name`` in ``directory``; by a hash of the
    directory under ``short_dir`` when that path is too long (sun_path holds
    108 bytes)."""
    path = os.path.join(os.path.abspath(directory), name)
    if len(path.encode()) < 100:
        return path
    digest = hashlib.sha256(os.path.abspath(directory).encode()).hexdigest()[:24]
    suffix = os.path.splitext(name)[1]
    return os.path.join(short_dir, f"{digest}{suffix}")
