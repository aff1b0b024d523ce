"""conntrackd's configuration and keepalived's script for an HA router
(pure, and the script run against a stand-in conntrackd), and the agent's
part: its options to the router's VRRP instance."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from neutrino.agents.l3 import Vrrp, router_spec
from neutrino.linux import conntrackd, keepalived, router

SYNC = conntrackd.Sync(interface="ha-0123456789a", address="169.254.192.7", vr_id=5)


def test_configuration(tmp_path: Path):
    text = conntrackd.render(SYNC, str(tmp_path))
    # FTFW over multicast on the HA device, from this host's address there;
    # the UDP port apart for each router of the HA network
    assert "    Mode FTFW {\n" in text
    assert ("    Multicast Default {\n"
            "        IPv4_address 225.0.0.50\n"
            "        IPv4_interface 169.254.192.7\n"
            "        Group 3785\n"
            "        Interface ha-0123456789a\n") in text
    # its files in the router's directory
    for line in (f"LockFile {tmp_path}/conntrackd.lock", f"LogFile {tmp_path}/conntrackd.log",
                 f"Path {tmp_path}/conntrackd.ctl"):
        assert line in text
    # the sync link's own traffic is not synchronised
    assert "            IPv4_address 169.254.192.7\n" in text.split("Sync {")[0]
    assert "HashSize 32768" in text and "HashLimit 131072" in text


def test_settings_change_the_configuration(tmp_path: Path):
    settings = conntrackd.Settings(hash_size=10, hash_limit=20, address="239.1.2.3", group=4000)
    sync = conntrackd.Sync(interface="ha-x", address="169.254.192.8", vr_id=255,
                           settings=settings)
    text = conntrackd.render(sync, str(tmp_path))
    for line in ("HashSize 10", "HashLimit 20", "IPv4_address 239.1.2.3", "Group 4255"):
        assert line in text


def test_a_long_directory_keeps_the_socket_short(tmp_path: Path):
    deep = tmp_path / ("d" * 60) / "0b1f0c52-5a3e-4c1e-9f41-6f2b8a7c9d10"
    path = conntrackd.socket_path(str(deep))
    assert path.startswith(conntrackd.SHORT_SOCKETS + "/") and len(path) <= 107
    assert path != conntrackd.socket_path(str(deep) + "x")  # one per router
    assert f"Path {path}\n" in conntrackd.render(SYNC, str(deep))
    assert conntrackd.socket_path(str(tmp_path)) == f"{tmp_path}/conntrackd.ctl"


def run_script(tmp_path: Path, role: str) -> list[str]:
    """What keepalived's script asks conntrackd, with a stand-in on PATH."""
    state = tmp_path / "router dir"  # a space: the path is quoted
    state.mkdir(exist_ok=True)
    script = state / conntrackd.SCRIPT
    script.write_text(conntrackd.notify_script(str(state)))
    script.chmod(0o755)
    bin_dir, calls = tmp_path / "bin", tmp_path / "calls"
    bin_dir.mkdir(exist_ok=True)
    fake = bin_dir / "conntrackd"
    fake.write_text(f'#!/bin/sh\necho "$*" >> "{calls}"\nexit 1\n')  # failures do not stop it
    fake.chmod(0o755)
    calls.write_text("")
    done = subprocess.run([str(script), role], env={**os.environ,
                          "PATH": f"{bin_dir}:{os.environ['PATH']}"}, timeout=10)
    assert done.returncode == 0
    conf = f"-C {state}/{conntrackd.CONF}"
    return [line.removeprefix(conf + " ") for line in calls.read_text().splitlines()]


def test_the_script_follows_the_role(tmp_path: Path):
    # master: the old master's entries into the kernel, then its own table out
    assert run_script(tmp_path, "master") == ["-c", "-f", "-R", "-B"]
    # backup: what the kernel holds times out soon, the master's table asked for
    assert run_script(tmp_path, "backup") == ["-t", "-n"]
    assert run_script(tmp_path, "fault") == ["-t"]


def ha_data() -> dict:
    return {"id": "r1", "ha": True, "ha_vr_id": 9,
            "_ha_interface": {"id": "haport000001xyz", "mac_address": "fa:16:3e:00:00:09",
                              "fixed_ips": [{"subnet_id": "ha", "ip_address": "169.254.192.3",
                                             "prefixlen": 18}]}}


def test_the_agent_runs_conntrackd_when_enabled():
    settings = conntrackd.Settings()
    spec = router_spec(ha_data(), vrrp=Vrrp(conntrackd=settings))
    assert router.conntrackd_sync(spec) == conntrackd.Sync(
        interface="ha-haport00000", address="169.254.192.3", vr_id=9, settings=settings)
    text = keepalived.render(router.vrrp_instance(spec, "/state/r1/conntrackd-notify.sh"))
    assert '    notify_master "/state/r1/conntrackd-notify.sh master"\n' in text
    assert '    notify_backup "/state/r1/conntrackd-notify.sh backup"\n' in text
    assert '    notify_fault "/state/r1/conntrackd-notify.sh fault"\n' in text

    plain = router_spec(ha_data())  # the default: no conntrackd, no script
    assert router.conntrackd_sync(plain) is None
    assert "notify" not in keepalived.render(router.vrrp_instance(plain))
