"""Agents start without eventlet.

The ``ovs`` library (under ovsdbapp) imports eventlet whenever it is installed,
and a test dependency (keystone, through oslo.service) installs it in the same
virtualenv: eventlet then prints its deprecation warning at every start of an
agent that imports ``ovs``. Only what plugs into Open vSwitch may; the other
agents import it at first use (``interface_driver = openvswitch``), if ever.
The Open vSwitch agent itself needs the library, so it is not checked here.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent
AGENTS = {"neutrino.agents.linuxbridge": "neutrino-linuxbridge-agent",
          "neutrino.agents.dhcp": "neutrino-dhcp-agent",
          "neutrino.agents.l3": "neutrino-l3-agent",
          "neutrino.agents.metadata": "neutrino-metadata-agent"}


@pytest.mark.parametrize("module", sorted(AGENTS))
def test_an_agent_that_does_not_use_ovs_imports_neither_ovs_nor_eventlet(module):
    done = subprocess.run(
        [sys.executable, "-c", f"import sys, {module}; "
         "print(sorted(m for m in ('ovs', 'ovsdbapp', 'eventlet') if m in sys.modules))"],
        capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.strip() == "[]", done.stdout
    assert done.stderr == ""


@pytest.mark.parametrize("command", sorted(AGENTS.values()))
def test_an_agent_command_starts_without_a_warning(command):
    done = subprocess.run([str(BIN / command), "--help"], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""


def test_the_ovs_interface_driver_connects_at_first_use():
    done = subprocess.run(
        [sys.executable, "-c", "import sys; from neutrino.linux.interface import "
         "OvsInterfaceDriver; OvsInterfaceDriver(ovsdb='unix:/nonexistent'); "
         "print('ovs' in sys.modules)"],
        capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.strip() == "False"
