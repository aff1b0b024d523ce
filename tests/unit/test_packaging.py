"""What packaging/ ships: systemd units for every long-running command, each
starting it with the sample files of the documented layout
(docs/deployment.md), which systemd accepts (``systemd-analyze verify``,
``systemd-sysusers``, ``systemd-tmpfiles``); and a container image with the
agents' host tools that runs the server by default."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

from neutrino import config
from neutrino.agents.dhcp import DhcpAgent
from neutrino.agents.l3 import L3Agent
from neutrino.agents.lbaas import LbaasAgent
from neutrino.cmd.all_in_one import AGENTS as ALL_IN_ONE_AGENTS
from neutrino.linux import host_check
from tests.unit.test_sample_configs import agent_classes, agent_sample

ROOT = Path(__file__).resolve().parents[2]
UNITS = ROOT / "packaging" / "systemd"
BIN = "/opt/neutrino/bin/"
CONFIG_DIR = "/etc/neutrino/"
#: commands that run once and exit: no unit
ONE_SHOT = {"neutrino-db-manage", "neutrino-instance", "neutrino-status", "neutrino-ovn-db-sync"}
#: the users that are not root: they change nothing on the host
UNPRIVILEGED = {"neutrino-server", "neutrino-metadata-agent"}
SYSTEM_UNITS = Path("/usr/lib/systemd/system")


def read_unit(path: Path) -> dict[str, dict[str, list[str]]]:
    """section -> key -> values (a key may repeat); continuation lines joined."""
    sections: dict[str, dict[str, list[str]]] = {}
    current: dict[str, list[str]] = {}
    pending = ""
    for raw in path.read_text().splitlines():
        line = pending + raw.strip()
        if line.endswith("\\"):
            pending = line[:-1] + " "
            continue
        pending = ""
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            current = sections.setdefault(line.strip("[]"), {})
            continue
        key, _, value = line.partition("=")
        current.setdefault(key.strip(), []).append(value.strip())
    return sections


def services() -> set[str]:
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    return set(scripts) - ONE_SHOT


def unit(command: str) -> dict[str, dict[str, list[str]]]:
    return read_unit(UNITS / f"{command}.service")


def expected_files(command: str) -> list[str]:
    """The sample files a command reads, in order (neutrino.conf first)."""
    own = {cls.binary: agent_sample(cls) for cls in agent_classes()}
    own.update({"neutrino-server": "ml2_conf.ini", "neutrino-all-in-one": "all_in_one.conf"})
    return ["neutrino.conf", own[command]]


def test_every_long_running_command_has_a_unit():
    assert {path.stem for path in UNITS.glob("*.service")} == services()


@pytest.mark.parametrize("command", sorted(services()))
def test_unit_starts_the_command_with_its_layout(command):
    service = unit(command)["Service"]
    argv = shlex.split(service["ExecStart"][0])
    assert argv[0] == BIN + command
    options, files = argv[1::2], argv[2::2]
    assert set(options) == {"--config-file"}, argv
    assert all(path.startswith(CONFIG_DIR) for path in files), argv
    names = [Path(path).name for path in files]
    assert names == expected_files(command)
    assert all((ROOT / "etc" / name).is_file() for name in names)
    # in the foreground, without sd_notify; started again when it fails
    assert service["Type"] == ["exec"]
    assert service["Restart"] == ["on-failure"]
    assert service["User"] == ["neutrino" if command in UNPRIVILEGED else "root"]


@pytest.mark.parametrize("command", sorted(services()))
def test_only_the_agents_that_leave_daemons_keep_them_on_restart(command):
    """The DHCP, L3 and load-balancer agents leave dnsmasq, radvd, metadata
    proxies and HAProxy running (a restarted agent takes them over): systemd
    must stop only the agent."""
    runs = {cls.binary: [cls] for cls in agent_classes()}
    runs["neutrino-all-in-one"] = list(ALL_IN_ONE_AGENTS)
    leaves_daemons = any(cls in (DhcpAgent, L3Agent, LbaasAgent) for cls in runs.get(command, []))
    kill_mode = unit(command)["Service"].get("KillMode")
    if leaves_daemons:
        assert kill_mode == ["process"]
    else:
        assert kill_mode != ["process"]


#: directives that give a unit a mount namespace of its own
MOUNT_SANDBOXING = ("PrivateTmp", "PrivateDevices", "ProtectSystem", "ProtectHome",
                    "ReadWritePaths", "ReadOnlyPaths", "InaccessiblePaths", "TemporaryFileSystem",
                    "BindPaths", "BindReadOnlyPaths", "ProtectKernelTunables",
                    "ProtectKernelModules", "ProtectControlGroups", "MountFlags",
                    "RootDirectory", "PrivateMounts")


@pytest.mark.parametrize("command", ["neutrino-dhcp-agent", "neutrino-l3-agent",
                                     "neutrino-lbaas-agent", "neutrino-all-in-one"])
def test_agents_that_name_namespaces_share_the_hosts_mounts(command):
    """``ip netns add`` names a namespace with a bind mount under /run/netns:
    made in a unit's private mount namespace, it is gone (an empty file is
    left) for the agent that follows, which then cannot enter it."""
    service = unit(command)["Service"]
    assert not [key for key in MOUNT_SANDBOXING if key in service]


def test_the_agents_of_an_ovs_host_wait_for_ovs():
    after = " ".join(unit("neutrino-openvswitch-agent")["Unit"]["After"]).split()
    wants = " ".join(unit("neutrino-openvswitch-agent")["Unit"]["Wants"]).split()
    assert "openvswitch-switch.service" in after and "openvswitch-switch.service" in wants


@pytest.fixture
def system_root(tmp_path: Path) -> Path:
    """A file system root with the system's units, ours and stand-ins for the
    commands they run (systemd-analyze checks that ExecStart is executable)."""
    if not shutil.which("systemd-analyze") or not SYSTEM_UNITS.is_dir():
        pytest.skip("systemd-analyze (Debian's systemd) or its units are not installed")
    root = tmp_path / "root"
    shutil.copytree(SYSTEM_UNITS, root / SYSTEM_UNITS.relative_to("/"), symlinks=True)
    ours = root / "etc/systemd/system"
    ours.mkdir(parents=True)
    for path in UNITS.glob("*.service"):
        shutil.copy(path, ours)
    commands = root / BIN.strip("/")
    commands.mkdir(parents=True)
    for command in services():
        (commands / command).write_text("#!/bin/sh\n")
        (commands / command).chmod(0o755)
    return root


def test_systemd_accepts_the_units(system_root):
    names = sorted(path.name for path in UNITS.glob("*.service"))
    done = subprocess.run(["systemd-analyze", "verify", f"--root={system_root}", *names],
                          capture_output=True, text=True, timeout=60,
                          cwd=system_root / "etc/systemd/system")
    # it warns (and still exits 0) about a line it ignores: any output is a problem
    assert done.returncode == 0 and not done.stdout + done.stderr, done.stdout + done.stderr


def test_systemd_makes_the_user_and_the_state_directory(tmp_path):
    if not shutil.which("systemd-sysusers") or not shutil.which("systemd-tmpfiles"):
        pytest.skip("systemd-sysusers / systemd-tmpfiles (Debian's systemd) are not installed")
    root = tmp_path / "root"
    (root / "etc").mkdir(parents=True)
    for name in ("sysusers.d", "tmpfiles.d"):
        (root / "usr/lib" / name).mkdir(parents=True)
    shutil.copy(UNITS / "neutrino.sysusers", root / "usr/lib/sysusers.d/neutrino.conf")
    shutil.copy(UNITS / "neutrino.tmpfiles", root / "usr/lib/tmpfiles.d/neutrino.conf")
    subprocess.run(["systemd-sysusers", f"--root={root}", "neutrino.conf"], check=True,
                   capture_output=True, timeout=60)
    passwd = {line.split(":")[0]: line.split(":")
              for line in (root / "etc/passwd").read_text().splitlines()}
    assert passwd["neutrino"][5] == "/var/lib/neutrino"
    subprocess.run(["systemd-tmpfiles", f"--root={root}", "--create", "neutrino.conf"],
                   check=True, capture_output=True, timeout=60)
    state = (root / "var/lib/neutrino").stat()
    assert state.st_uid == int(passwd["neutrino"][2])
    assert state.st_mode & 0o777 == 0o755  # dnsmasq reads its files there as nobody


# --- the container image -------------------------------------------------------------------

#: what .ci/run installs only for the tests (haproxy: the scale-out test's load
#: balancer; chromium: the topology page's browser) and for neutrino-instance (a
#: stand-in hypervisor), not for the agents
NOT_FOR_AGENTS = {"udhcpc", "isc-dhcp-client", "iputils-ping", "netcat-openbsd", "socat",
                  "curl", "iperf3", "chromium", "chromium-driver", "ovn-central", "ovn-host"}


def containerfile_stages() -> list[list[str]]:
    """The Containerfile's instructions (continuation lines joined), per stage."""
    stages: list[list[str]] = []
    for instruction in re.split(r"(?<!\\)\n", (ROOT / "Containerfile").read_text()):
        text = re.sub(r"\\\n\s*", " ", instruction).strip()
        if not text or text.startswith("#"):
            continue
        if text.startswith("FROM "):
            stages.append([])
        if stages:
            stages[-1].append(text)
    return stages


def ci_host_packages() -> set[str]:
    found = re.search(r'host_packages="([^"]*)"', (ROOT / ".ci" / "run").read_text())
    assert found, ".ci/run no longer says host_packages=\"...\""
    return set(found.group(1).split())


def checked_tools() -> list[host_check.Tool]:
    """The tools the agents check for at start (``neutrino.linux.host_check``)."""
    found: list[host_check.Tool] = []
    for value in vars(host_check).values():
        items = value if isinstance(value, tuple) else (value,)
        found += [item for item in items if isinstance(item, host_check.Tool)]
    return found


def test_the_image_holds_the_agents_host_tools():
    runs = " ".join(i for i in containerfile_stages()[-1] if i.startswith("RUN "))
    installed = set()
    for command in re.findall(r"apt-get install ([^&]*)", runs):
        installed |= {word for word in command.split() if not word.startswith("-")}
    assert ci_host_packages() - NOT_FOR_AGENTS <= installed
    assert "python3" in installed
    # openvswitch-switch brings openvswitch-common (ovs-ofctl) along
    provided = installed | ({"openvswitch-common"} if "openvswitch-switch" in installed
                            else set())
    tools = checked_tools()
    assert tools and {tool.package for tool in tools} <= provided


def test_the_image_runs_the_server_by_default():
    final = containerfile_stages()[-1]
    cmd = json.loads(next(i for i in final if i.startswith("CMD "))[4:])
    assert cmd[0] == "neutrino-server" and set(cmd[1::2]) == {"--config-file"}
    files = cmd[2::2]
    # the image's own defaults first, so that the operator's files override them
    assert files[0] == "/usr/share/neutrino/container.conf"
    assert [Path(f).name for f in files[1:]] == expected_files("neutrino-server")
    assert "COPY packaging/container.conf /usr/share/neutrino/container.conf" in final
    assert config.load([str(ROOT / "packaging" / "container.conf")]).DEFAULT.bind_host \
        == "0.0.0.0"
