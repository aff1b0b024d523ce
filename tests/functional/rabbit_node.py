"""RabbitMQ for tests that must not share the broker's state with other tests.

``private_node()``: a RabbitMQ node of the test's own (data, logs and ports in
a temp dir, always removed), for tests that restart the broker. Never restart
the shared node on 5672: the other xdist workers are using it. Tests that only
need queues of their own use a vhost (``tests.harness.rabbit_vhost``).
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.harness import free_port


def _need_rabbitmq() -> None:
    if shutil.which("rabbitmq-server") is None or shutil.which("rabbitmqctl") is None:
        pytest.skip("RabbitMQ's server is not installed")


class PrivateRabbit:
    """A RabbitMQ node of the test's own: data, logs and ports in a temp dir."""

    def __init__(self) -> None:
        self.port, self.dist_port = free_port(), free_port()
        self.node = f"neutrino-test-{os.getpid()}-{uuid.uuid4().hex[:6]}@localhost"
        self.url = f"rabbit://guest:guest@127.0.0.1:{self.port}/"
        self.dir = Path(tempfile.mkdtemp(prefix="neutrino-rabbit-"))

    def _env(self) -> dict[str, str]:
        return {**os.environ,
                "RABBITMQ_NODENAME": self.node,
                "RABBITMQ_NODE_PORT": str(self.port),
                "RABBITMQ_DIST_PORT": str(self.dist_port),
                "RABBITMQ_MNESIA_BASE": str(self.dir / "mnesia"),
                "RABBITMQ_LOG_BASE": str(self.dir / "log"),
                "RABBITMQ_PID_FILE": str(self.dir / "pid"),
                "RABBITMQ_CONFIG_FILE": str(self.dir / "rabbitmq.conf"),
                "RABBITMQ_ENABLED_PLUGINS_FILE": str(self.dir / "enabled_plugins")}

    def start(self) -> None:
        (self.dir / "rabbitmq.conf").write_text(f"listeners.tcp.local = 127.0.0.1:{self.port}\n")
        (self.dir / "enabled_plugins").write_text("[].\n")
        if os.geteuid() == 0:  # the rabbitmq-server wrapper runs the node as rabbitmq
            user = pwd.getpwnam("rabbitmq")
            for path in (self.dir, *self.dir.iterdir()):
                os.chown(path, user.pw_uid, user.pw_gid)
        subprocess.run(["rabbitmq-server", "-detached"], env=self._env(), check=True,
                       timeout=30, capture_output=True)
        self.wait_for_port()
        # the listener opens while the node still boots, and a booting node closes
        # AMQP connections at once; wait until it serves them
        self.run_ctl("await_startup", "--timeout", "60", timeout=70)

    def wait_for_port(self, seconds: float = 30) -> None:
        deadline = time.monotonic() + seconds
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"RabbitMQ node {self.node} did not start; see "
                                       f"{self.dir / 'log'}") from None
                time.sleep(0.1)

    def ctl(self, *args: str) -> list[str]:
        return ["rabbitmqctl", "-n", self.node, *args]

    def run_ctl(self, *args: str, timeout: float = 30) -> None:
        """``rabbitmqctl <args>`` against this node, or an AssertionError with its output."""
        done = subprocess.run(self.ctl(*args), env=self._env(), timeout=timeout,
                              capture_output=True, text=True)
        assert done.returncode == 0, f"rabbitmqctl {' '.join(args)}: {done.stderr}"

    def stop(self) -> None:
        try:
            subprocess.run(self.ctl("stop"), env=self._env(), timeout=30, capture_output=True)
        finally:
            try:
                os.kill(int((self.dir / "pid").read_text()), signal.SIGKILL)
            except (OSError, ValueError):
                pass  # gone, as it should be
            shutil.rmtree(self.dir, ignore_errors=True)


@contextmanager
def private_node() -> Iterator[PrivateRabbit]:
    """A started private node, always stopped and removed (skips without RabbitMQ)."""
    _need_rabbitmq()
    node = PrivateRabbit()
    try:
        node.start()
        yield node
    finally:
        node.stop()
