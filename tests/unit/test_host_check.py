"""Start-up checks in-process: what agents need of the host, as their
configuration says, and what the host check finds; warnings for what a
command does not read. The processes' one-line refusals are in
tests/functional/test_startup_checks.py."""

from __future__ import annotations

import logging
import os
import shutil
import uuid
from pathlib import Path

import pytest

from neutrino import config
from neutrino.agents.base import AGENT_OPTIONS
from neutrino.agents.dhcp import DhcpAgent
from neutrino.agents.l3 import L3Agent
from neutrino.agents.linuxbridge import LinuxBridgeAgent
from neutrino.agents.metadata import MetadataAgent
from neutrino.linux import host_check
from neutrino.linux.host_check import HostCheckError, Needs
from neutrino.rpc.bus import Bus
from neutrino.rpc.transport import get_transport


def agent(cls, tmp: Path, text: str):
    path = tmp / "agent.conf"
    path.write_text(f"[DEFAULT]\nhost = h1\nstate_path = {tmp / 'state'}\n{text}")
    conf = config.load([str(path)])
    conf.register((AGENT_OPTIONS, *cls.option_groups))
    return cls(conf, Bus(get_transport(f"memory://{uuid.uuid4().hex}"))), path


# --- what each agent needs ----------------------------------------------------------------


def test_linuxbridge_needs_follow_its_configuration(tmp_path):
    lb, path = agent(LinuxBridgeAgent, tmp_path,
                     "[linux_bridge]\nphysical_interface_mappings = physnet1:eth9\n"
                     "bridge_mappings = ext:br-ex\n[vxlan]\nlocal_ip = 10.1.0.5\n")
    needs = lb.host_needs()
    assert {tool.name for tool, _ in needs.tools} == {
        "iptables-save", "iptables-restore", "ip6tables-save", "ip6tables-restore", "ipset",
        "conntrack"}
    assert {why for _, why in needs.tools} == {
        "firewall_driver = iptables in [securitygroup] (default)"}
    assert [name for name, *_ in needs.sysctls] == ["net.bridge.bridge-nf-call-iptables",
                                                    "net.bridge.bridge-nf-call-ip6tables"]
    assert needs.devices == [
        ("eth9", f"physical_interface_mappings in [linux_bridge] of {path} for physnet1"),
        ("br-ex", f"bridge_mappings in [linux_bridge] of {path} for ext")]
    assert needs.addresses == [("10.1.0.5", f"local_ip in [vxlan] of {path}")]


@pytest.mark.parametrize("driver", ["noop", "neutron.agent.firewall.NoopFirewallDriver"])
def test_linuxbridge_without_a_firewall_needs_no_tool(tmp_path, driver):
    lb, _ = agent(LinuxBridgeAgent, tmp_path,
                  f"[securitygroup]\nfirewall_driver = {driver}\n[vxlan]\nenable_vxlan = false\n"
                  "local_ip = 10.1.0.5\n")
    assert lb.conf.securitygroup.firewall_driver == "noop"
    assert lb.host_needs() == Needs()


def test_neutrons_iptables_class_path_is_the_iptables_driver(tmp_path):
    lb, _ = agent(LinuxBridgeAgent, tmp_path, "[securitygroup]\nfirewall_driver = "
                  "neutron.agent.linux.iptables_firewall.IptablesFirewallDriver\n")
    assert lb.conf.securitygroup.firewall_driver == "iptables"
    assert any(tool.name == "ipset" for tool, _ in lb.host_needs().tools)


def test_dhcp_and_l3_need_nothing_without_an_interface_driver(tmp_path):
    for cls in (DhcpAgent, L3Agent):
        made, _ = agent(cls, tmp_path, "")
        assert made.host_needs() == Needs()


def test_dhcp_and_l3_needs_with_an_interface_driver(tmp_path):
    dhcp, path = agent(DhcpAgent, tmp_path, "interface_driver = linuxbridge\n")
    needs = dhcp.host_needs()
    assert {tool.name for tool, _ in needs.tools} == {"ip", "sysctl", "dnsmasq"}
    assert needs.directories == [(str(tmp_path / "state" / "dhcp"),
                                  f"state_path in [DEFAULT] of {path}")]
    l3, path = agent(L3Agent, tmp_path, "interface_driver = linuxbridge\nsend_arp_for_ha = 0\n")
    assert "arping" not in {tool.name for tool, _ in l3.host_needs().tools}
    l3, path = agent(L3Agent, tmp_path, "interface_driver = linuxbridge\n")
    assert (host_check.ARPING, "send_arp_for_ha = 3 in [DEFAULT] (default)") in \
        l3.host_needs().tools


def test_metadata_agent_needs_its_socket_directory(tmp_path):
    socket = tmp_path / "run" / "md.sock"
    md, path = agent(MetadataAgent, tmp_path, f"metadata_proxy_socket = {socket}\n")
    assert md.host_needs().directories == [
        (str(socket.parent), f"metadata_proxy_socket in [DEFAULT] of {path}")]


# --- what the check finds ---------------------------------------------------------------------


def test_a_tool_is_looked_for_on_path(tmp_path, monkeypatch):
    needs = Needs()
    needs.tool("the test's setting", host_check.Tool("nt-no-such-tool", "nt-package"))
    with pytest.raises(HostCheckError) as caught:
        needs.check()
    assert str(caught.value) == ("nt-no-such-tool not found on PATH (Debian package "
                                 "nt-package), needed by the test's setting")
    (tmp_path / "nt-no-such-tool").write_text("#!/bin/sh\n")
    (tmp_path / "nt-no-such-tool").chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    needs.check()


def test_devices_and_addresses():
    Needs(devices=[("lo", "why")], addresses=[("127.0.0.1", "why")]).check()
    with pytest.raises(HostCheckError, match="^no network device nt-none0 on this host, "
                                             "named by the mapping$"):
        Needs(devices=[("nt-none0", "the mapping")]).check()
    for address in ("192.0.2.77", "2001:db8::77", "not-an-address"):
        with pytest.raises(HostCheckError, match=f"^{address} is not an address of this host"):
            Needs(addresses=[(address, "local_ip")]).check()


def test_kernel_settings():
    with pytest.raises(HostCheckError, match=r"no kernel setting net.nt.none \(is nt_mod "
                                             r"loaded\? modprobe nt_mod\), needed by why"):
        Needs(sysctls=[("net.nt.none", "1", "nt_mod", "why")]).check()
    value = Path("/proc/sys/net/ipv4/ip_forward").read_text().strip()
    other = "0" if value == "1" else "1"
    Needs(sysctls=[("net.ipv4.ip_forward", value, "m", "why")]).check()
    with pytest.raises(HostCheckError, match=f"is {value}, not {other}"):
        Needs(sysctls=[("net.ipv4.ip_forward", other, "m", "why")]).check()


def test_directories_are_made_or_named(tmp_path):
    Needs(directories=[(str(tmp_path / "a" / "b"), "why")]).check()
    assert (tmp_path / "a" / "b").is_dir()
    (tmp_path / "file").write_text("")
    with pytest.raises(HostCheckError, match=f"^cannot create directory {tmp_path}/file/d: "
                                             "Not a directory, set by state_path"):
        Needs(directories=[(str(tmp_path / "file" / "d"), "state_path")]).check()


def test_an_ovs_database_that_is_not_there(tmp_path):
    remote = f"unix:{tmp_path / 'db.sock'}"
    with pytest.raises(HostCheckError, match="^no OVS database at unix:.* \\(is ovsdb-server "
                                             "running\\?\\), set by ovsdb_connection"):
        Needs(ovs=host_check.OvsNeeds(remote, 1, "ovsdb_connection")).check()


def test_missing_lists_what_path_lacks():
    present = shutil.which("sh") is not None
    assert host_check.missing([host_check.Tool("sh", "dash")]) == ([] if present else
                                                                  [host_check.Tool("sh", "dash")])


# --- warnings for what a command does not read -----------------------------------------------


def test_warnings_name_what_was_meant(tmp_path, caplog):
    path = tmp_path / "typos.conf"
    path.write_text("[linux_bridge]\nphysical_interface_mapings = physnet1:eth1\n"
                    "[agent]\nl2_population = true\nreport_interval = 5\n"
                    "[linux_brige]\nx = 1\n[keystone_authtoken]\nauth_url = http://k\n"
                    "[DEFAULT]\nno_such_thing = 1\n")
    conf = config.load([str(path)])
    conf.register((AGENT_OPTIONS, *LinuxBridgeAgent.option_groups))
    with caplog.at_level(logging.INFO, logger="neutrino.config"):
        conf.warn_unknown()
    said = [(record.levelname, record.getMessage()) for record in caplog.records]
    assert said == [
        ("WARNING", f"config: unknown option physical_interface_mapings in [linux_bridge] of "
                    f"{path} ignored: did you mean physical_interface_mappings?"),
        ("WARNING", f"config: unknown option l2_population in [agent] of {path} ignored: it "
                    "is read in [vxlan]"),
        ("WARNING", f"config: unknown section [linux_brige] in {path} ignored: did you mean "
                    "[linux_bridge]?"),
        ("INFO", f"config: unknown section [keystone_authtoken] in {path} ignored"),
        ("WARNING", f"config: unknown option no_such_thing in [DEFAULT] of {path} ignored"),
    ]


def test_setting_says_where_a_value_comes_from(tmp_path):
    path = tmp_path / "s.conf"
    path.write_text("[DEFAULT]\nbind_port = 1234\n")
    conf = config.load([str(path)])
    assert conf.setting("DEFAULT", "bind_port") == f"bind_port = 1234 in [DEFAULT] of {path}"
    assert conf.setting("DEFAULT", "bind_host") == "bind_host = 127.0.0.1 in [DEFAULT] (default)"


def test_choice_takes_aliases():
    parse = config.choice("a", "b", aliases={"long.name.A": "a"})
    assert parse(" long.name.A ") == "a" and parse("b") == "b"
    with pytest.raises(ValueError, match="must be one of a, b"):
        parse("c")
