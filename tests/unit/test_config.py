"""INI loading: types, overrides, clear errors, plugin option groups."""

import logging

import pytest

from neutrino import config


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


def test_plugin_groups_parse_from_the_same_files(tmp_path):
    path = write(tmp_path, "a.conf", "[ml2]\ntype_drivers = flat, vxlan\n")
    conf = config.load([path])
    conf.register([config.OptGroup("ml2", [config.Opt("type_drivers", config.parse_list,
                                                      ["local"])])])
    assert conf.ml2.type_drivers == ["flat", "vxlan"]


def test_missing_file_is_a_config_error(tmp_path):
    with pytest.raises(config.ConfigError, match="cannot read"):
        config.load([str(tmp_path / "nope.conf")])
