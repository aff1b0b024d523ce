"""Every command checks everything before it does anything (issue 18).

Each case starts a command as a process with one mistake: a bad option
value, an unknown driver, a host tool missing from PATH, a mapping to a
device or bridge that is not there, a broker that is down or refuses the
login, a state_path that cannot be made, a port in use, an address not on
the host, no configuration at all. Each must end, quickly and non-zero,
with exactly one line on stderr naming the problem (the option and file
where there is one): no traceback, no "serving", no agent started.

The cases are parametrized, so pytest-xdist spreads them; none needs more
than one short process (an OVS database for the bridge case).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from neutrino.linux import host_check

BIN = Path(sys.executable).parent
ETC = Path(__file__).resolve().parents[2] / "etc"
#: no host has this: a documentation address (TEST-NET-1)
FOREIGN_ADDRESS = "192.0.2.77"
MISSING_DEVICE = "nt-missing0"
#: a tool the agents never need, so that PATH is never empty
SHELL = "sh"


def broker_up() -> bool:
    try:
        with socket.create_connection(("127.0.0.1", 5672), timeout=2):
            return True
    except OSError:
        return False


def closed_port() -> int:
    """A port nothing listens on (bound, then closed at once)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def run(program: str, tmp: Path, *args: str, env: dict[str, str] | None = None
        ) -> tuple[int, str, str, float]:
    """The command's exit code, stdout, stderr and how long it took; a command
    still running after 60 s started instead of refusing."""
    started = time.monotonic()
    proc = subprocess.Popen([str(BIN / program), *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=tmp,
                            env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})},
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        pytest.fail(f"{program} started instead of refusing its configuration")
    return proc.returncode, out, err, time.monotonic() - started


def refused(program: str, tmp: Path, *args: str, env: dict[str, str] | None = None) -> str:
    """Run ``program`` expecting it to refuse: exactly one line of output, on
    stderr, ``<program>: ...``; that line."""
    code, out, err, took = run(program, tmp, *args, env=env)
    output = out + err
    assert code != 0, output
    assert "Traceback" not in output, output
    assert "serving" not in output, output
    assert out == "", f"nothing on stdout: {out!r}"
    lines = err.strip().splitlines()
    assert len(lines) == 1, f"one line, not {len(lines)}:\n{err}"
    assert lines[0].startswith(f"{program}: "), lines[0]
    assert took < 30, f"{program} took {took:.1f} s to refuse"
    return lines[0]


def config_args(*files: Path) -> list[str]:
    return [arg for path in files for arg in ("--config-file", str(path))]


# --- the mistakes, per command ----------------------------------------------------------


def base(tmp: Path, extra: str = "") -> Path:
    """[DEFAULT] with state in ``tmp``, a free port and this test's host name."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return write(tmp / "base.conf", f"[DEFAULT]\nstate_path = {tmp / 'state'}\n"
                                    f"bind_port = {port}\nhost = startup-check\n{extra}")


AGENTS = ("neutrino-linuxbridge-agent", "neutrino-openvswitch-agent", "neutrino-dhcp-agent",
          "neutrino-l3-agent", "neutrino-metadata-agent")
#: the agents that need nothing of the host but a broker, as configured by ``quiet``
QUIET = ("neutrino-linuxbridge-agent", "neutrino-dhcp-agent", "neutrino-l3-agent",
         "neutrino-metadata-agent")


def quiet(program: str, tmp: Path) -> str:
    """Configuration for ``program`` that needs nothing of the host (no firewall,
    DHCP files in ``tmp``), so that a case meets only its own mistake; only
    options the program reads (any other would be warned of)."""
    text = ""
    if program in ("neutrino-linuxbridge-agent", "neutrino-all-in-one"):
        text += "[securitygroup]\nfirewall_driver = noop\n"
    if program in ("neutrino-dhcp-agent", "neutrino-l3-agent", "neutrino-all-in-one"):
        # without it they serve nothing, and say so in an ERROR line
        text += "[DEFAULT]\ninterface_driver = linuxbridge\n"
    if program in ("neutrino-dhcp-agent", "neutrino-all-in-one"):
        text += f"[DEFAULT]\ndhcp_confs = {tmp / 'dhcp'}\n"
    return text

BAD_VALUES = [
    ("neutrino-server", "[DEFAULT]\napi_workers = 0\n", "option api_workers in [DEFAULT]"),
    ("neutrino-linuxbridge-agent", "[securitygroup]\nfirewall_driver = iptables_hybrid\n",
     "for option firewall_driver in [securitygroup] of {file}: must be one of iptables, noop"),
    ("neutrino-openvswitch-agent", "[agent]\ntunnel_types = vxlan,stt\n",
     "for option tunnel_types in [agent] of {file}: unknown stt"),
    ("neutrino-openvswitch-agent", "[securitygroup]\nfirewall_driver = iptables\n",
     "for option firewall_driver in [securitygroup] of {file}: must be one of openvswitch"),
    ("neutrino-dhcp-agent", "[DEFAULT]\ninterface_driver = macvtap\n",
     "for option interface_driver in [DEFAULT] of {file}"),
    ("neutrino-l3-agent", "[DEFAULT]\nagent_mode = dvr\n",
     "for option agent_mode in [DEFAULT] of {file}: dvr"),
    ("neutrino-metadata-agent", "[DEFAULT]\nnova_metadata_port = 0\n",
     "for option nova_metadata_port in [DEFAULT] of {file}"),
    ("neutrino-all-in-one", "[linux_bridge]\nphysical_interface_mappings = physnet1\n",
     "for option physical_interface_mappings in [linux_bridge] of {file}"),
    ("neutrino-db-manage", "[database]\nmax_retries = none\n",
     "for option max_retries in [database] of {file}"),
]


@pytest.mark.parametrize(("program", "text", "expected"), BAD_VALUES,
                         ids=[f"{p}-{t.split(chr(10))[1].split(' =')[0]}"
                              for p, t, _ in BAD_VALUES])
def test_bad_value(tmp_path, program, text, expected):
    bad = write(tmp_path / "bad.conf", text)
    args = [*config_args(base(tmp_path), bad), *(["current"] if "db-manage" in program else [])]
    line = refused(program, tmp_path, *args)
    assert "invalid value" in line and expected.format(file=bad) in line
    assert not (tmp_path / "state").exists(), "refused before any work"


@pytest.mark.parametrize(("program", "text", "expected"), [
    ("neutrino-server", "[ml2]\nmechanism_drivers = linuxbridge,nosuch\n",
     "unknown ml2 mechanism driver 'nosuch' (known: {known}), set by mechanism_drivers in "
     "[ml2] of {file}"),
    ("neutrino-server", "[ml2]\ntype_drivers = local\ntenant_network_types = vxlan\n",
     "tenant_network_types vxlan not in type_drivers, set by tenant_network_types in [ml2] "
     "of {file}"),
    ("neutrino-server", "[ml2]\nextension_drivers = nosuch\n",
     "unknown ml2 extension driver 'nosuch'"),
    ("neutrino-all-in-one", "[DEFAULT]\nservice_plugins = router,nosuch\n",
     "unknown service plugin 'nosuch'"),
])
def test_unknown_driver_is_named_before_the_database(tmp_path, program, text, expected):
    bad = write(tmp_path / "drivers.conf", text)
    line = refused(program, tmp_path, *config_args(base(tmp_path), bad))
    known = "l2population, linuxbridge, logger, openvswitch, ovn"
    assert expected.format(file=bad, known=known) in line
    assert not (tmp_path / "state" / "neutrino.db").exists(), "refused before migrations"


# --- host tools ---------------------------------------------------------------------


def path_without(tmp: Path, missing: host_check.Tool) -> str:
    """A PATH with every tool the agents use but ``missing``."""
    tools = [getattr(host_check, name) for name in dir(host_check)
             if name.isupper() and not name.startswith("_")]
    wanted = {tool.name for item in tools
              for tool in (item if isinstance(item, tuple) else (item,))
              if isinstance(tool, host_check.Tool)} | {SHELL}
    directory = tmp / "bin"
    directory.mkdir()
    absent = []
    for name in sorted(wanted - {missing.name}):
        found = shutil.which(name)
        if found is None:
            absent.append(name)
        else:
            (directory / name).symlink_to(found)
    if absent:
        pytest.skip(f"this host lacks {', '.join(absent)}: another tool than "
                    f"{missing.name} would be found missing")
    return str(directory)


LB_FIREWALL = "[securitygroup]\nfirewall_driver = iptables\n"
LINUXBRIDGE = "[DEFAULT]\ninterface_driver = linuxbridge\n"

MISSING_TOOLS = [
    ("neutrino-linuxbridge-agent", LB_FIREWALL, host_check.IPSET,
     "ipset not found on PATH (Debian package ipset), needed by firewall_driver = iptables "
     "in [securitygroup] of {file}"),
    ("neutrino-linuxbridge-agent", "", host_check.CONNTRACK,
     "conntrack not found on PATH (Debian package conntrack), needed by firewall_driver = "
     "iptables in [securitygroup] (default)"),
    ("neutrino-dhcp-agent", LINUXBRIDGE, host_check.DNSMASQ,
     "dnsmasq not found on PATH (Debian package dnsmasq-base), needed by interface_driver = "
     "linuxbridge in [DEFAULT] of {file}"),
    ("neutrino-l3-agent", LINUXBRIDGE, host_check.IPTABLES[1],
     "iptables-restore not found on PATH (Debian package iptables), needed by "
     "interface_driver = linuxbridge in [DEFAULT] of {file}"),
    ("neutrino-l3-agent", LINUXBRIDGE, host_check.ARPING,
     "arping not found on PATH (Debian package iputils-arping), needed by send_arp_for_ha = 3 "
     "in [DEFAULT] (default)"),
    ("neutrino-openvswitch-agent", "", host_check.OVS_OFCTL,
     "ovs-ofctl not found on PATH (Debian package openvswitch-common), needed by "
     "of_interface = ovs-ofctl in [ovs] (default)"),
    ("neutrino-all-in-one", LINUXBRIDGE, host_check.DNSMASQ,
     "dnsmasq not found on PATH (Debian package dnsmasq-base), needed by interface_driver = "
     "linuxbridge in [DEFAULT] of {file}"),
]


@pytest.mark.parametrize(("program", "text", "tool", "expected"), MISSING_TOOLS,
                         ids=[f"{p}-{t.name}" for p, _, t, _ in MISSING_TOOLS])
def test_missing_host_tool(tmp_path, program, text, tool, expected):
    dhcp = program in ("neutrino-dhcp-agent", "neutrino-all-in-one")
    conf = write(tmp_path / "agent.conf",
                 text + (f"[DEFAULT]\ndhcp_confs = {tmp_path / 'dhcp'}\n" if dhcp else ""))
    line = refused(program, tmp_path, *config_args(base(tmp_path), conf),
                   env={"PATH": path_without(tmp_path, tool)})
    assert line.endswith(expected.format(file=conf)), line


def test_an_agent_that_runs_nothing_needs_no_tool(tmp_path):
    """Without interface_driver the DHCP agent serves no network: no dnsmasq
    needed (it goes on to the broker, here down)."""
    conf = write(tmp_path / "agent.conf",
                 f"[DEFAULT]\ntransport_url = rabbit://guest:guest@127.0.0.1:{closed_port()}/\n")
    code, _, err, _ = run("neutrino-dhcp-agent", tmp_path, *config_args(base(tmp_path), conf),
                          env={"PATH": path_without(tmp_path, host_check.DNSMASQ)})
    assert code != 0 and "Traceback" not in err, err
    said = [line for line in err.splitlines() if line.startswith("neutrino-dhcp-agent: ")]
    assert len(said) == 1 and "cannot connect to rabbit://" in said[0], err
    assert "no interface_driver configured: this agent serves no network" in err


# --- devices, addresses, bridges -----------------------------------------------------


@pytest.mark.parametrize(("program", "text", "expected"), [
    ("neutrino-linuxbridge-agent",
     f"[linux_bridge]\nphysical_interface_mappings = physnet1:lo,physnet2:{MISSING_DEVICE}\n",
     f"no network device {MISSING_DEVICE} on this host, named by physical_interface_mappings "
     "in [linux_bridge] of {file} for physnet2"),
    ("neutrino-linuxbridge-agent", f"[linux_bridge]\nbridge_mappings = ext:{MISSING_DEVICE}\n",
     f"no network device {MISSING_DEVICE} on this host, named by bridge_mappings in "
     "[linux_bridge] of {file} for ext"),
    ("neutrino-linuxbridge-agent", f"[vxlan]\nlocal_ip = {FOREIGN_ADDRESS}\n",
     f"{FOREIGN_ADDRESS} is not an address of this host, set by local_ip in [vxlan] of "
     "{file}"),
    ("neutrino-all-in-one",
     f"[linux_bridge]\nphysical_interface_mappings = physnet1:{MISSING_DEVICE}\n",
     f"no network device {MISSING_DEVICE} on this host, named by physical_interface_mappings "
     "in [linux_bridge] of {file} for physnet1"),
])
def test_missing_device_or_address(tmp_path, program, text, expected):
    conf = write(tmp_path / "agent.conf", quiet(program, tmp_path) + text)
    line = refused(program, tmp_path, *config_args(base(tmp_path), conf))
    assert line.endswith(expected.format(file=conf)), line


@pytest.fixture
def ovsdb(tmp_path) -> Iterator[str]:
    """An ovsdb-server of the test's own (no ovs-vswitchd: bridges are rows),
    with a bridge ``br-here``; its remote."""
    tools = ("ovsdb-tool", "ovsdb-server", "ovs-vsctl", "ovs-appctl", "ovs-ofctl")
    missing = [tool for tool in tools if shutil.which(tool) is None]
    schema = Path("/usr/share/openvswitch/vswitch.ovsschema")
    if missing or not schema.exists():
        pytest.skip(f"an OVS database needs {', '.join(missing) or schema} "
                    "(Debian: openvswitch-switch)")
    rundir = Path(tempfile.mkdtemp(prefix="nt-db-"))  # a socket's path must be short
    remote = f"unix:{rundir / 'db.sock'}"
    db = tmp_path / "conf.db"
    subprocess.run(["ovsdb-tool", "create", str(db), str(schema)], check=True, timeout=30)
    try:
        subprocess.run(["ovsdb-server", str(db), f"--remote=p{remote}",
                        f"--pidfile={rundir / 'db.pid'}", f"--unixctl={rundir / 'db.ctl'}",
                        f"--log-file={tmp_path / 'ovsdb.log'}", "--detach", "--no-chdir",
                        "-vconsole:off"], check=True, timeout=30)
        for args in (["init"], ["add-br", "br-here"]):
            subprocess.run(["ovs-vsctl", f"--db={remote}", "--no-wait", "--timeout=10", *args],
                           check=True, capture_output=True, timeout=30)
        yield remote
    finally:
        try:
            pid = int((rundir / "db.pid").read_text())
            os.kill(pid, signal.SIGTERM)
            for _ in range(100):
                os.kill(pid, 0)
                time.sleep(0.05)
        except (OSError, ValueError):
            pass  # gone (or never started)
        shutil.rmtree(rundir, ignore_errors=True)


def test_ovs_bridge_mapping_to_a_missing_bridge(tmp_path, ovsdb):
    conf = write(tmp_path / "ovs.conf", f"[ovs]\novsdb_connection = {ovsdb}\n"
                                         "bridge_mappings = physnet1:br-here,physnet2:br-gone\n")
    line = refused("neutrino-openvswitch-agent", tmp_path, *config_args(base(tmp_path), conf))
    assert line.endswith(f"no OVS bridge br-gone in the database at {ovsdb}, named by "
                         f"bridge_mappings in [ovs] of {conf} for physnet2"), line


def test_ovs_bridge_mapping_to_a_present_bridge_passes(tmp_path, ovsdb):
    """The same check passes a bridge that is there: the agent goes on to the
    broker (down here)."""
    conf = write(tmp_path / "ovs.conf",
                 f"[DEFAULT]\ntransport_url = rabbit://guest:guest@127.0.0.1:{closed_port()}/\n"
                 f"[ovs]\novsdb_connection = {ovsdb}\nbridge_mappings = physnet1:br-here\n")
    line = refused("neutrino-openvswitch-agent", tmp_path, *config_args(base(tmp_path), conf))
    assert "cannot connect to rabbit://" in line


def test_ovs_agent_without_a_database(tmp_path):
    if shutil.which("ovs-ofctl") is None:
        pytest.skip("the OVS agent needs ovs-ofctl first (Debian: openvswitch-common)")
    remote = f"unix:{tmp_path / 'no-db.sock'}"
    conf = write(tmp_path / "ovs.conf", f"[ovs]\novsdb_connection = {remote}\n")
    line = refused("neutrino-openvswitch-agent", tmp_path, *config_args(base(tmp_path), conf))
    assert line.endswith(f"no OVS database at {remote} (is ovsdb-server running?), set by "
                         f"ovsdb_connection in [ovs] of {conf}"), line


def test_ovs_tunnels_from_a_foreign_address(tmp_path, ovsdb):
    conf = write(tmp_path / "ovs.conf",
                 "[agent]\ntunnel_types = vxlan\nl2_population = true\n"
                 f"[ovs]\novsdb_connection = {ovsdb}\nlocal_ip = {FOREIGN_ADDRESS}\n")
    line = refused("neutrino-openvswitch-agent", tmp_path, *config_args(base(tmp_path), conf))
    assert line.endswith(f"{FOREIGN_ADDRESS} is not an address of this host, set by local_ip "
                         f"in [ovs] of {conf}"), line


def test_ovs_options_that_cannot_go_together(tmp_path):
    conf = write(tmp_path / "ovs.conf", "[agent]\ntunnel_types = vxlan\n")
    line = refused("neutrino-openvswitch-agent", tmp_path, *config_args(base(tmp_path), conf))
    assert line.endswith("tunnels need [agent] l2_population = true (it tells where the "
                         f"other hosts are), set by tunnel_types = vxlan in [agent] of {conf}")


# --- the broker ---------------------------------------------------------------------


BROKER_COMMANDS = ("neutrino-server", "neutrino-all-in-one", *QUIET)



@pytest.mark.parametrize("program", BROKER_COMMANDS)
def test_broker_down(tmp_path, program):
    url = f"rabbit://guest:guest@127.0.0.1:{closed_port()}/"
    conf = write(tmp_path / "bus.conf",
                 f"{quiet(program, tmp_path)}[DEFAULT]\ntransport_url = {url}\n")
    line = refused(program, tmp_path, *config_args(base(tmp_path), conf))
    masked = url.replace("guest:guest", "guest:***")
    assert line == (f"{program}: cannot connect to {masked}: Connection refused, set by "
                    f"transport_url in [DEFAULT] of {conf}")


@pytest.mark.parametrize("program", BROKER_COMMANDS)
def test_broker_refuses_the_login(tmp_path, program):
    if not broker_up():
        pytest.skip("no RabbitMQ on 127.0.0.1:5672 to refuse a login")
    conf = write(tmp_path / "bus.conf",
                 f"{quiet(program, tmp_path)}[DEFAULT]\n"
                 "transport_url = rabbit://guest:not-the-password@127.0.0.1:5672/\n")
    line = refused(program, tmp_path, *config_args(base(tmp_path), conf))
    assert "cannot connect to rabbit://guest:***@127.0.0.1:5672/: " in line
    assert "ACCESS_REFUSED" in line and "not-the-password" not in line


# --- state_path ---------------------------------------------------------------------


@pytest.mark.parametrize(("program", "text", "made"), [
    ("neutrino-server", "", "{state}"),
    ("neutrino-db-manage", "", "{state}"),
    ("neutrino-all-in-one", "", "{state}"),
    ("neutrino-dhcp-agent", "interface_driver = linuxbridge\n", "{state}/dhcp"),
    ("neutrino-l3-agent", "interface_driver = linuxbridge\n", "{state}/l3"),
    ("neutrino-metadata-agent", "", "{state}"),
])
def test_state_path_that_cannot_be_made(tmp_path, program, text, made):
    blocker = write(tmp_path / "a-file", "not a directory\n")
    state = blocker / "state"
    conf = write(tmp_path / "state.conf", f"[DEFAULT]\nstate_path = {state}\n{text}")
    args = [*config_args(base(tmp_path), conf), *(["current"] if "db-manage" in program else [])]
    line = refused(program, tmp_path, *args)
    assert line.endswith(f"cannot create directory {made.format(state=state)}: Not a "
                         f"directory, set by state_path in [DEFAULT] of {conf}"), line


def test_dhcp_confs_that_cannot_be_made(tmp_path):
    blocker = write(tmp_path / "a-file", "not a directory\n")
    conf = write(tmp_path / "dhcp.conf", "[DEFAULT]\ninterface_driver = linuxbridge\n"
                                          f"dhcp_confs = {blocker}/dhcp\n")
    line = refused("neutrino-dhcp-agent", tmp_path, *config_args(base(tmp_path), conf))
    assert line.endswith(f"cannot create directory {blocker}/dhcp: Not a directory, set by "
                         f"dhcp_confs in [DEFAULT] of {conf}"), line


# --- listening ----------------------------------------------------------------------


@pytest.mark.parametrize("program", ["neutrino-server", "neutrino-all-in-one"])
def test_port_in_use(tmp_path, program):
    """Refused before the database is made and before any agent syncs."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        conf = write(tmp_path / "port.conf",
                     f"{quiet(program, tmp_path)}[DEFAULT]\nbind_port = {port}\n")
        line = refused(program, tmp_path, *config_args(base(tmp_path), conf))
    assert line == (f"{program}: cannot listen on 127.0.0.1:{port}: Address already in use, "
                    f"set by bind_host in [DEFAULT] (default) and bind_port in [DEFAULT] of "
                    f"{conf}")
    assert not (tmp_path / "state" / "neutrino.db").exists(), "refused before migrations"


@pytest.mark.parametrize("program", ["neutrino-server", "neutrino-all-in-one"])
def test_load_balancer_api_port_in_use(tmp_path, program):
    """The second API's socket is secured as the first: before any work."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        conf = write(tmp_path / "port.conf",
                     f"{quiet(program, tmp_path)}[DEFAULT]\nbind_port = {closed_port()}\n"
                     f"service_plugins = octavia\n[api_settings]\nbind_port = {port}\n")
        line = refused(program, tmp_path, *config_args(base(tmp_path), conf))
    assert line == (f"{program}: cannot listen on 127.0.0.1:{port}: Address already in use, "
                    f"set by bind_host in [api_settings] (default) and bind_port in "
                    f"[api_settings] of {conf}")
    assert not (tmp_path / "state" / "neutrino.db").exists(), "refused before migrations"


@pytest.mark.parametrize("program", ["neutrino-server", "neutrino-all-in-one"])
def test_bind_address_not_on_this_host(tmp_path, program):
    conf = write(tmp_path / "bind.conf",
                 f"{quiet(program, tmp_path)}[DEFAULT]\nbind_host = {FOREIGN_ADDRESS}\n")
    line = refused(program, tmp_path, *config_args(base(tmp_path), conf))
    assert f"cannot listen on {FOREIGN_ADDRESS}:" in line
    assert line.endswith(f": Cannot assign requested address, set by bind_host in [DEFAULT] "
                         f"of {conf} and bind_port in [DEFAULT] of {tmp_path / 'base.conf'}")


# --- neutrino-db-manage -------------------------------------------------------------


def test_db_manage_wants_a_configuration(tmp_path):
    line = refused("neutrino-db-manage", tmp_path, "upgrade", "head",
                   env={"NEUTRINO_CONFIG_FILES": ""})
    assert line == ("neutrino-db-manage: no configuration: give --config-file FILE (the "
                    "server's), or list the files in NEUTRINO_CONFIG_FILES")
    assert not (tmp_path / "state").exists()


def test_db_manage_reads_the_servers_variable(tmp_path):
    conf = base(tmp_path)
    code, out, err, _ = run("neutrino-db-manage", tmp_path, "current",
                            env={"NEUTRINO_CONFIG_FILES": f'["{conf}"]'})
    assert code == 0, err
    assert out.strip() == "(empty database)"
    assert (tmp_path / "state").is_dir()


@pytest.mark.parametrize(("args", "expected"), [
    (["upgrade", "nosuch"], "neutrino-db-manage: Can't locate revision identified by "
                            "'nosuch'"),
    (["current"], "neutrino-db-manage: cannot use the database of connection in [database] "
                  "of {file}: "),
])
def test_db_manage_errors(tmp_path, args, expected):
    port = closed_port()
    if args[0] == "current":
        conf = write(tmp_path / "db.conf", "[database]\nconnection = postgresql+psycopg2://"
                                           f"nobody@127.0.0.1:{port}/neutrino\n")
    else:
        conf = base(tmp_path)
    line = refused("neutrino-db-manage", tmp_path, *config_args(conf), *args)
    assert line.startswith(expected.format(file=conf)), line
    if args[0] == "current":
        assert f"port {port} failed: Connection refused" in line


# --- warnings that name what is meant -------------------------------------------------


def test_all_in_one_warns_of_typos_only(tmp_path):
    """The sample all-in-one configuration and a typo: the typo is named, with
    what was meant; the options the agents use are not (they used to be called
    unknown, as the server looked before the agents registered them)."""
    typo = write(tmp_path / "typo.conf",
                 "[DEFAULT]\ndhcp_confs = {tmp}/d\n[securitygroup]\nfirewall_driver = noop\n"
                 "[linux_bridge]\n"
                 f"physical_interface_mapings = physnet1:lo\n"
                 f"physical_interface_mappings = physnet1:{MISSING_DEVICE}\n"
                 "[linux_brige]\nbridge_mappings = x:y\n".replace("{tmp}", str(tmp_path)))
    code, out, err, _ = run("neutrino-all-in-one", tmp_path,
                            *config_args(ETC / "all_in_one.conf", base(tmp_path), typo))
    assert code != 0
    warnings = [line for line in (out + err).splitlines() if "WARNING" in line]
    assert len(warnings) == 2, out + err
    assert warnings[0].endswith(f"config: unknown option physical_interface_mapings in "
                                f"[linux_bridge] of {typo} ignored: did you mean "
                                "physical_interface_mappings?")
    assert warnings[1].endswith(f"config: unknown section [linux_brige] in {typo} ignored: "
                                "did you mean [linux_bridge]?")
    assert err.strip().splitlines()[-1].startswith(
        f"neutrino-all-in-one: no network device {MISSING_DEVICE}")
