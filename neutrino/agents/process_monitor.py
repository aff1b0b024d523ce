"""Daemons that die are started again at once, as Neutron's ProcessMonitor
(``respawn``) does for its agents' daemons, but told by the kernel rather
than found by polling.

An agent runs daemons for some of its resources: dnsmasq and a metadata
proxy for a network (DHCP agent), radvd and a metadata proxy for a router
(L3 agent). They detach and outlive the agent, so they are not its children:
each is watched through a pidfd (``neutrino.linux.process.exit_fd``), which
the event loop sees readable the moment the process ends. ``on_exit(key,
name)`` is then called, and the agent marks the resource dirty: its next
sync, a moment later, starts the daemon again. The agents' periodic check
(``[agent] check_child_processes_interval``) stays as a safety net.

A resource's daemons are forgotten while the agent converges it (a daemon
it stops or restarts itself is no death) and watched again after. Each death
told counts in ``neutrino_agent_daemon_restarts`` by the daemon's name.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable

from neutrino import metrics
from neutrino.linux import process


class ProcessMonitor:
    def __init__(self, on_exit: Callable[[str, str], None]):
        self._on_exit = on_exit
        #: resource key -> daemon name -> its pidfd
        self._watched: dict[str, dict[str, int]] = {}
        self._loop: asyncio.AbstractEventLoop | None = None

    def watch(self, key: str, daemons: dict[str, int | None]) -> None:
        """Watch exactly ``daemons`` (name -> pid; None: it should run and does
        not) for ``key``. Those that ended already are told at once."""
        self.forget(key)
        self._loop = asyncio.get_running_loop()
        watched = {}
        for name, pid in sorted(daemons.items()):
            fd = process.exit_fd(pid) if pid is not None else None
            if fd is None:
                metrics.daemon_restart(name)
                self._loop.call_soon(self._on_exit, key, name)
                continue
            self._loop.add_reader(fd, self._exited, key, name, fd)
            watched[name] = fd
        if watched:
            self._watched[key] = watched

    def forget(self, key: str) -> None:
        for fd in self._watched.pop(key, {}).values():
            self._close(fd)

    def close(self) -> None:
        for key in list(self._watched):
            self.forget(key)

    def watching(self, key: str) -> set[str]:
        return set(self._watched.get(key, ()))

    def _close(self, fd: int) -> None:
        assert self._loop is not None
        self._loop.remove_reader(fd)
        os.close(fd)

    def _exited(self, key: str, name: str, fd: int) -> None:
        self._close(fd)
        watched = self._watched.get(key, {})
        watched.pop(name, None)
        if not watched:
            self._watched.pop(key, None)
        metrics.daemon_restart(name)
        self._on_exit(key, name)
