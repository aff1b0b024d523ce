"""Agents start without eventlet.

The ``ovs`` library (under ovsdbapp) imports eventlet whenever it is installed,
and a test dependency (keystone, through oslo.service) installs it in the same
virtualenv: eventlet then prints its deprecation warning at every start of an
agent that imports ``ovs``. Only what plugs into Open vSwitch may; the other
agents import it at first use (``interface_driver = openvswitch``), if ever.
The Open vSwitch agent itself needs the library: neutrino imports it with
that one warning silenced, which is the test environment's, not the agent's.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent
AGENTS = {"neutrino.agents.linuxbridge": "neutrino-linuxbridge-agent",
          "neutrino.agents.dhcp": "neutrino-dhcp-agent",
          "neutrino.agents.l3": "neutrino-l3-agent",
          "neutrino.agents.metadata": "neutrino-metadata-agent"}
#: the console scripts import the checkout they were installed from; this one
ENV = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}


@pytest.mark.parametrize("module", sorted(AGENTS))
def test_an_agent_that_does_not_use_ovs_imports_neither_ovs_nor_eventlet(module):
    done = subprocess.run(
        [sys.executable, "-c", f"import sys, {module}; "
         "print(sorted(m for m in ('ovs', 'ovsdbapp', 'eventlet') if m in sys.modules))"],
        capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.strip() == "[]", done.stdout
    assert done.stderr == ""


@pytest.mark.parametrize("command", [*sorted(AGENTS.values()), "neutrino-openvswitch-agent"])
def test_an_agent_command_starts_without_a_warning(command):
    done = subprocess.run([str(BIN / command), "--help"], capture_output=True, text=True,
                          timeout=60, env=ENV)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""


def test_naming_every_agents_options_imports_neither_ovs_nor_eventlet():
    """The server and the agents look up the agents' options when a file
    holds one they do not read; the Open vSwitch agent's come without it."""
    done = subprocess.run(
        [sys.executable, "-c", "import sys; from neutrino.agents.commands import "
         "agent_commands; agent_commands(); "
         "print(sorted(m for m in ('ovs', 'ovsdbapp', 'eventlet') if m in sys.modules))"],
        capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.strip() == "[]", done.stdout


def test_the_ovs_interface_driver_connects_at_first_use():
    done = subprocess.run(
        [sys.executable, "-c", "import sys; from neutrino.linux.interface import "
         "OvsInterfaceDriver; OvsInterfaceDriver(ovsdb='unix:/nonexistent'); "
         "print('ovs' in sys.modules)"],
        capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.strip() == "False"


def test_what_uses_ovs_imports_it_without_eventlets_warning():
    """The Open vSwitch agent, and the interface driver at first use, import
    the ovs library: eventlet's deprecation warning, if eventlet is there, is
    not printed, and no warning filter of the process changes for it."""
    done = subprocess.run(
        [sys.executable, "-c", "import warnings; before = list(warnings.filters); "
         "import neutrino.agents.openvswitch, neutrino.linux.ovs; "
         "assert warnings.filters == before, 'the filters changed'"],
        capture_output=True, text=True, timeout=60, env=ENV)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
