"""For tests that change real host networking: root, namespaces, the tools.

Every namespace a test makes comes from ``Sandbox`` and is removed at the end,
with the processes still running in it, whatever happened: nothing outside the
test's own namespaces is touched, and no traffic leaves them.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from tests.harness import wait_until  # noqa: F401  (the dataplane tests' one way to wait)

TOOLS = ("ip", "bridge", "dnsmasq", "iptables", "ipset", "udhcpc", "ping", "nc")


def skip_unless_root(*tools: str) -> None:
    """Skip, saying why, where the dataplane cannot run."""
    if os.geteuid() != 0:
        pytest.skip("dataplane tests need root (network namespaces)")
    missing = [tool for tool in tools or TOOLS if shutil.which(tool) is None]
    if missing:
        pytest.skip(f"dataplane tests need {', '.join(missing)} (see .ci/run)")


def run(*argv: str, namespace: str | None = None, check: bool = True,
        timeout: float = 20) -> subprocess.CompletedProcess:
    prefix = ["ip", "netns", "exec", namespace] if namespace else []
    done = subprocess.run([*prefix, *argv], capture_output=True, text=True, timeout=timeout)
    if check and done.returncode != 0:
        raise AssertionError(f"{' '.join(argv)} in {namespace or 'the root namespace'}: "
                             f"{done.stderr.strip() or done.stdout.strip()}")
    return done


class Sandbox:
    """Namespaces with names unique to this test; ``close`` removes them all."""

    def __init__(self) -> None:
        self.tag = uuid.uuid4().hex[:6]
        self.namespaces: list[str] = []

    def namespace(self, role: str) -> str:
        """A new namespace (``nt<tag>-<role>``), its loopback up."""
        name = f"nt{self.tag}-{role}"
        run("ip", "netns", "add", name)
        self.namespaces.append(name)
        run("ip", "link", "set", "lo", "up", namespace=name)
        return name

    def adopt(self, name: str) -> None:
        """Remove at the end a namespace that something else made (qdhcp-..., say)."""
        if name not in self.namespaces:
            self.namespaces.append(name)

    def close(self) -> None:
        for name in reversed(self.namespaces):
            kill_namespace(name)
        self.namespaces.clear()


def as_a_host(namespace: str) -> list[str]:
    """The command prefix that runs an agent "on" a host emulated by
    ``namespace``: in its network namespace, with a mount namespace of its own
    only for a /sys that shows that namespace's links. Not ``ip netns exec``:
    its mount namespace would keep the namespaces the agent makes (qdhcp-...)
    out of every other process's sight, and out of the clean-up's."""
    return ["nsenter", f"--net=/run/netns/{namespace}", "unshare", "--mount",
            "--propagation", "unchanged", "sh", "-c",
            'mount --make-rprivate /sys && mount -t sysfs sysfs /sys && exec "$@"', "sh"]


def kill_namespace(name: str) -> None:
    """Kill what runs in the namespace, then delete it (quietly if it is gone)."""
    pids = subprocess.run(["ip", "netns", "pids", name], capture_output=True, text=True)
    for pid in pids.stdout.split():
        try:
            os.kill(int(pid), signal.SIGKILL)
        except (OSError, ValueError):
            pass
    for _ in range(50):
        if subprocess.run(["ip", "netns", "del", name], capture_output=True).returncode != 0:
            if name not in subprocess.run(["ip", "netns", "list"], capture_output=True,
                                          text=True).stdout.split():
                return
        else:
            return
        time.sleep(0.1)


@contextmanager
def sandbox() -> Iterator[Sandbox]:
    box = Sandbox()
    try:
        yield box
    finally:
        box.close()


def pings(namespace: str, address: str, count: int = 1, wait: float = 1) -> bool:
    return run("ping", "-c", str(count), "-W", str(wait), address, namespace=namespace,
               check=False).returncode == 0
