"""Daemons the agents start and find again by their pid files."""

from __future__ import annotations

import hashlib
import logging
import os
import signal
import subprocess
import time
from collections.abc import Callable

from neutrino.linux.errors import HostError

LOG = logging.getLogger(__name__)


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


def run_configured(namespace: str, conf: str, text: str, command: list[str],
                   pid_of: Callable[[], int | None], what: str,
                   why_not: Callable[[], str] = lambda: "", wait: float = 5.0,
                   error: type[HostError] = HostError) -> int:
    """A daemon that forks and writes a pid file, run in ``namespace`` with the
    configuration ``text`` at ``conf``: left alone when it runs with that
    configuration, told to read a changed one again (SIGHUP), started when it
    does not run. Its pid; ``error`` naming ``what`` (and ``why_not()``, its
    log's last words) when it does not start."""
    try:
        with open(conf, encoding="utf-8") as handle:
            same = handle.read() == text
    except FileNotFoundError:
        same = False
    pid = pid_of()
    if same and pid is not None:
        return pid
    if not same:
        os.makedirs(os.path.dirname(conf), exist_ok=True)
        with open(conf + ".tmp", "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(conf + ".tmp", conf)
    if pid is not None:
        LOG.info("%s: configuration changed, reloading (pid %d)", what, pid)
        os.kill(pid, signal.SIGHUP)
        return pid
    done = subprocess.run(["ip", "netns", "exec", namespace, *command],
                          stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True, timeout=30)
    deadline = time.monotonic() + wait  # the daemon writes its pid file after forking
    while (pid := pid_of()) is None and done.returncode == 0 \
            and time.monotonic() < deadline:
        time.sleep(0.02)
    if pid is None:
        raise error(f"{what} did not start (exit {done.returncode}): "
                        f"{done.stderr.strip() or why_not()}")
    LOG.info("%s, pid %d", what, pid)
    return pid
