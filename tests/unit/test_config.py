"""INI loading: types, overrides, clear errors, plugin option groups."""

import importlib
import logging
import pkgutil

import pytest

import neutrino.agents
from neutrino import config
from neutrino.agents.base import AGENT_OPTIONS, Agent
from neutrino.agents.commands import agent_commands
from neutrino.agents.linuxbridge import LinuxBridgeAgent


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_defaults_without_files():
    conf = config.load([])
    assert conf.DEFAULT.bind_port == 9696
    assert conf.DEFAULT.bind_host == "127.0.0.1"
    assert conf.DEFAULT.service_plugins == ["router"]
    assert conf.quotas.quota_port == 500


def test_later_files_override(tmp_path):
    first = write(tmp_path, "a.conf", "[DEFAULT]\nbind_port = 1000\napi_workers = 3\n")
    second = write(tmp_path, "b.conf", "[DEFAULT]\nbind_port = 2000\n")
    conf = config.load([first, second])
    assert conf.DEFAULT.bind_port == 2000
    assert conf.DEFAULT.api_workers == 3


def test_default_section_does_not_leak_into_groups(tmp_path):
    path = write(tmp_path, "a.conf", "[DEFAULT]\nconnection = x\n[database]\n")
    assert config.load([path]).database.connection == ""


def test_bad_value_names_option_section_and_file(tmp_path):
    path = write(tmp_path, "bad.conf", "[quotas]\nquota_network = lots\n")
    with pytest.raises(config.ConfigError) as err:
        config.load([path])
    message = str(err.value)
    assert "quota_network" in message and "[quotas]" in message and path in message


def test_unknown_options_warn(tmp_path, caplog):
    path = write(tmp_path, "a.conf", "[DEFAULT]\nnot_an_option = 1\n[ml2_type_vxlan]\nx = 1\n")
    conf = config.load([path])
    with caplog.at_level(logging.INFO):
        conf.warn_unknown()
    levels = {record.getMessage().split()[3]: record.levelname for record in caplog.records}
    # an unknown option of a section read is a warning; a section no group of
    # the command is close to (another command's) only a note
    assert levels == {"not_an_option": "WARNING", "[ml2_type_vxlan]": "INFO"}


#: a file shared by the server and the agents: the DHCP, L3 and metadata
#: agents' options, a section of the Open vSwitch agent's, and two typos
SHARED = """[DEFAULT]
interface_driver = linuxbridge
dhcp_confs = /var/lib/neutrino/dhcp
nova_metadata_host = 192.0.2.60
interface_drivr = linuxbridge
[agent]
tunnel_types = vxlan
[ovs]
integration_bridge = br-int
[securitygroups]
firewall_driver = noop
"""


def logged(conf, caplog, **kwargs):
    """What ``warn_unknown`` logs: message -> level."""
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="neutrino.config"):
        conf.warn_unknown(**kwargs)
    return {record.getMessage(): record.levelname for record in caplog.records}


def test_another_commands_options_are_noted_naming_it(tmp_path, caplog):
    """What another neutrino command reads is no typo: an INFO line that says
    which command reads it; a typo stays a WARNING saying what was meant."""
    path = write(tmp_path, "shared.conf", SHARED)
    conf = config.load([path])
    conf.register([AGENT_OPTIONS])  # the server's view, plus an [agent] to hold tunnel_types
    assert logged(conf, caplog, others=agent_commands) == {
        f"config: option interface_driver in [DEFAULT] of {path} ignored, "
        "read by neutrino-dhcp-agent, neutrino-l3-agent, neutrino-lbaas-agent": "INFO",
        f"config: option dhcp_confs in [DEFAULT] of {path} ignored, "
        "read by neutrino-dhcp-agent": "INFO",
        f"config: option nova_metadata_host in [DEFAULT] of {path} ignored, "
        "read by neutrino-metadata-agent, neutrino-ovn-metadata-agent": "INFO",
        f"config: unknown option interface_drivr in [DEFAULT] of {path} ignored": "WARNING",
        f"config: option tunnel_types in [agent] of {path} ignored, "
        "read by neutrino-openvswitch-agent": "INFO",
        f"config: section [ovs] in {path} ignored, read by neutrino-dhcp-agent, "
        "neutrino-l3-agent, neutrino-lbaas-agent, neutrino-openvswitch-agent, "
        "neutrino-ovn-metadata-agent": "INFO",
        f"config: unknown section [securitygroups] in {path} ignored": "INFO"}


def test_a_typo_of_an_option_read_here_still_warns(tmp_path, caplog):
    path = write(tmp_path, "lb.conf", "[securitygroup]\nfirewal_driver = noop\n"
                                      "enable_security_group = true\n")
    conf = config.load([path])
    conf.register(LinuxBridgeAgent.option_groups)
    assert logged(conf, caplog, others=agent_commands) == {
        f"config: unknown option firewal_driver in [securitygroup] of {path} ignored: "
        "did you mean firewall_driver?": "WARNING"}


def test_the_other_commands_are_asked_only_when_something_is_unknown(tmp_path, caplog):
    asked = []
    conf = config.load([write(tmp_path, "a.conf", "[DEFAULT]\nbind_port = 1000\n")])
    assert logged(conf, caplog, others=lambda: asked.append(1) or {}) == {}
    assert asked == []


def test_every_agent_command_is_among_the_others():
    for module in pkgutil.walk_packages(neutrino.agents.__path__, "neutrino.agents."):
        importlib.import_module(module.name)  # every agent class defined
    classes, todo = [], list(Agent.__subclasses__())
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        classes += [cls] if cls.binary else []
    assert agent_commands() == {cls.binary: (AGENT_OPTIONS, *cls.option_groups)
                                for cls in classes}


def test_plugin_groups_parse_from_the_same_files(tmp_path):
    path = write(tmp_path, "a.conf", "[ml2]\ntype_drivers = flat, vxlan\n")
    conf = config.load([path])
    conf.register([config.OptGroup("ml2", [config.Opt("type_drivers", config.parse_list,
                                                      ["local"])])])
    assert conf.ml2.type_drivers == ["flat", "vxlan"]


def test_missing_file_is_a_config_error(tmp_path):
    with pytest.raises(config.ConfigError, match="cannot read"):
        config.load([str(tmp_path / "nope.conf")])
