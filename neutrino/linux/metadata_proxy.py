"""Running the metadata proxy (``neutrino.metadata.proxy``) in a namespace.

What the DHCP and L3 agents call:

- ``start_proxy(namespace, listen_port, header_name, header_value,
  socket_path, state_dir, listen_host)`` converges: nothing if the same proxy
  runs, a restart if it runs with other arguments, a start if none does (so
  calling it again restarts a proxy that died). Its pid and log files are in
  ``state_dir`` (one directory per network or router).
- ``stop_proxy(state_dir)``; ``proxy_pid(state_dir)`` tells whether one runs.

Isolated networks (DHCP namespace): the proxy listens on
169.254.169.254:80 itself (``METADATA_CIDR`` on the DHCP port's device) with
``X-Neutron-Network-ID``. Routers: it listens on 0.0.0.0:9697 with
``X-Neutron-Router-ID`` and ``redirect_rules()`` (nat PREROUTING) send the
instances' 169.254.169.254:80 there; ``input_rules()`` (filter INPUT) keep
the port closed to anything but the internal interfaces.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys

from neutrino.config import Config, Opt
from neutrino.linux import process
from neutrino.linux.errors import HostError

LOG = logging.getLogger(__name__)

METADATA_IP = "169.254.169.254"
METADATA_CIDR = f"{METADATA_IP}/32"
METADATA_PORT = 80
#: where a router's proxy listens, behind the REDIRECT
ROUTER_PROXY_PORT = 9697
NETWORK_HEADER = "X-Neutron-Network-ID"
ROUTER_HEADER = "X-Neutron-Router-ID"
#: a router's internal interfaces (``qr-`` + port id), as iptables matches them
INTERNAL_DEVICES = "qr-+"
PID = "metadata_proxy.pid"
LOG_FILE = "metadata_proxy.log"

#: shared by the metadata agent (which listens there) and the agents that run
#: proxies (which connect there): register it in ``[DEFAULT]``
SOCKET_OPTION = Opt("metadata_proxy_socket", str, "",
                    "The metadata agent's UNIX socket (default: $state_path/metadata_proxy).")


def socket_path(conf: Config) -> str:
    """``metadata_proxy_socket``, absolute."""
    default = conf.DEFAULT
    return os.path.abspath(default.metadata_proxy_socket
                           or os.path.join(default.state_path, "metadata_proxy"))


def redirect_rules(chain: str = "PREROUTING", port: int = ROUTER_PROXY_PORT) -> list[str]:
    """The nat rule lines (``iptables-restore`` ``-A`` form) that turn an
    instance's request to 169.254.169.254:80 into one to the router's proxy."""
    return [f"-A {chain} -d {METADATA_CIDR} -i {INTERNAL_DEVICES} -p tcp -m tcp "
            f"--dport {METADATA_PORT} -j REDIRECT --to-ports {port}"]


def input_rules(chain: str = "INPUT", port: int = ROUTER_PROXY_PORT) -> list[str]:
    """The filter rule lines that keep the router's proxy port closed to all but
    the internal interfaces (the gateway's network must not reach it)."""
    return [f"-A {chain} ! -i {INTERNAL_DEVICES} -p tcp -m tcp --dport {port} -j DROP"]


def _pid_file(state_dir: str) -> str:
    return os.path.join(os.path.abspath(state_dir), PID)


def command(listen_host: str, listen_port: int, header_name: str, header_value: str,
            socket_path: str, state_dir: str) -> list[str]:
    """The proxy's command line (the pid file in it is how it is found again)."""
    return [sys.executable, "-m", "neutrino.metadata.proxy",
            f"--bind-host={listen_host}", f"--bind-port={listen_port}",
            f"--header={header_name}={header_value}", f"--socket={socket_path}",
            f"--pid-file={_pid_file(state_dir)}",
            f"--log-file={os.path.join(os.path.abspath(state_dir), LOG_FILE)}"]


def proxy_pid(state_dir: str) -> int | None:
    """The pid of the proxy serving from ``state_dir``, or None if none runs."""
    pid_file = _pid_file(state_dir)
    return process.pid_of(pid_file, f"--pid-file={pid_file}")


class ProxyError(HostError):
    """The proxy did not start; the message says why (what it said)."""


def start_proxy(namespace: str, listen_port: int, header_name: str, header_value: str,
                socket_path: str, state_dir: str, listen_host: str = "0.0.0.0") -> int:
    """Make the proxy of ``state_dir`` run in ``namespace`` as asked; its pid."""
    argv = command(listen_host, listen_port, header_name, header_value, socket_path, state_dir)
    pid = proxy_pid(state_dir)
    if pid is not None:
        if (process.cmdline(pid) or [])[1:] == argv[1:]:
            return pid
        LOG.info("metadata proxy in %s: its arguments changed, restarting", namespace)
        stop_proxy(state_dir)
    os.makedirs(state_dir, exist_ok=True)
    done = subprocess.run(["ip", "netns", "exec", namespace, *argv], stdin=subprocess.DEVNULL,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                          timeout=30)
    pid = proxy_pid(state_dir)
    if done.returncode != 0 or pid is None:
        raise ProxyError(f"metadata proxy in {namespace} did not start "
                         f"(exit {done.returncode}): {done.stderr.strip()}")
    LOG.info("metadata proxy in %s on %s:%d (%s %s), pid %d", namespace, listen_host,
             listen_port, header_name, header_value, pid)
    return pid


def stop_proxy(state_dir: str, wait: float = 5.0) -> None:
    """Stop the proxy of ``state_dir`` if one runs; forget its pid file."""
    pid = proxy_pid(state_dir)
    if pid is not None:
        process.terminate(pid, wait)
    try:
        os.unlink(_pid_file(state_dir))
    except FileNotFoundError:
        pass
