"""The ``openstack`` CLI and openstacksdk on the template of new groups' rules."""

from __future__ import annotations

import pytest

from tests.compat.cli import run_scenario

SCENARIO = [
    ("list", "default security group rule list -f json"),
    ("create", "default security group rule create --protocol tcp --dst-port 22 "
               "--remote-ip 10.0.0.0/8 --for-custom-sg --description ssh -f json"),
    ("dup", "default security group rule create --protocol tcp --dst-port 22 "
            "--remote-ip 10.0.0.0/8 --for-custom-sg"),
    ("group", "security group create cli-templated -f json"),
    ("delete", "default security group rule delete {rule}"),
    ("group-after", "security group create cli-untemplated -f json"),
    ("list-after", "default security group rule list -f json"),
]


@pytest.fixture(scope="module")
def cli(clouds_yaml, tmp_path_factory):
    first = run_scenario(SCENARIO[:4], clouds_yaml, tmp_path_factory.mktemp("home"))
    rule = first.json("create")["id"]
    rest = [(key, command.format(rule=rule)) for key, command in SCENARIO[4:]]
    second = run_scenario(rest, clouds_yaml, tmp_path_factory.mktemp("home"))
    first.outputs.update(second.outputs)
    return first


def test_the_template_through_the_cli(cli):
    assert len(cli.json("list")) == 4
    made = cli.json("create")
    assert (made["protocol"], made["port_range_min"], made["port_range_max"]) == ("tcp", 22, 22)
    assert made["used_in_non_default_sg"] is True and made["used_in_default_sg"] is False
    assert "Default Security group rule already exists" in cli.text("dup")
    rules = cli.json("group")["rules"]
    assert sorted((r["protocol"], r["remote_ip_prefix"]) for r in rules
                  if r["direction"] == "ingress") == [("tcp", "10.0.0.0/8")]
    cli.quiet("delete")
    assert all(r["direction"] == "egress" for r in cli.json("group-after")["rules"])
    assert len(cli.json("list-after")) == 4


def test_the_template_through_openstacksdk(conn):
    made = conn.network.create_default_security_group_rule(
        direction="ingress", protocol="udp", port_range_min=53, port_range_max=53,
        used_in_default_sg=True, used_in_non_default_sg=False)
    try:
        assert conn.network.get_default_security_group_rule(made.id).protocol == "udp"
        listed = {rule.id for rule in conn.network.default_security_group_rules()}
        assert made.id in listed and len(listed) == 5
    finally:
        conn.network.delete_default_security_group_rule(made.id)
    assert len(list(conn.network.default_security_group_rules())) == 4
