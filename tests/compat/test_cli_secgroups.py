"""The ``openstack`` CLI on security groups and their rules, and ports' groups."""

from __future__ import annotations

import pytest

from tests.compat.cli import run_scenario

SCENARIO = [
    ("list", "security group list -f json"),
    ("create", "security group create cli-web --description front -f json"),
    ("ssh", "security group rule create cli-web --protocol tcp --dst-port 22 -f json"),
    ("ping", "security group rule create cli-web --protocol icmp --icmp-type 8 "
             "--icmp-code 0 -f json"),
    ("from-default", "security group rule create cli-web --remote-group default -f json"),
    ("dup-egress", "security group rule create cli-web --egress --ethertype IPv6 "
                   "--remote-ip ::/0"),
    ("rules", "security group rule list cli-web -f json"),
    ("set", "security group set cli-web --name cli-www --stateless"),
    ("show", "security group show cli-www -f json"),
    ("net", "network create cli-sg-net -f json"),
    ("subnet", "subnet create cli-sg-sub --network cli-sg-net --subnet-range 10.81.0.0/24"),
    ("port", "port create cli-vm --network cli-sg-net --security-group cli-www -f json"),
    ("bare", "port create cli-bare --network cli-sg-net --no-security-group -f json"),
    ("delete-in-use", "security group delete cli-www"),
    ("port-delete", "port delete cli-vm"),
    ("delete", "security group delete cli-www"),
    ("list-after", "security group list -f json"),
]


@pytest.fixture(scope="module")
def cli(clouds_yaml, tmp_path_factory):
    return run_scenario(SCENARIO, clouds_yaml, tmp_path_factory.mktemp("home"))


def test_groups_and_rules(cli):
    assert [g["Name"] for g in cli.json("list")] == ["default"]
    group = cli.json("create")
    assert group["name"] == "cli-web" and len(group["rules"]) == 2
    ssh = cli.json("ssh")
    assert (ssh["protocol"], ssh["port_range_min"], ssh["port_range_max"]) == ("tcp", 22, 22)
    ping = cli.json("ping")
    assert (ping["protocol"], ping["port_range_min"], ping["port_range_max"]) == ("icmp", 8, 0)
    default = cli.json("list")[0]["ID"]
    assert cli.json("from-default")["remote_group_id"] == default
    assert "Security group rule already exists" in cli.text("dup-egress")
    assert len(cli.json("rules")) == 5
    cli.quiet("set")
    shown = cli.json("show")
    assert (shown["name"], shown["stateful"]) == ("cli-www", False)


def test_ports_and_delete(cli):
    group = cli.json("show")
    assert cli.json("port")["security_group_ids"] == [group["id"]]
    assert cli.json("bare")["security_group_ids"] == []
    assert "in use" in cli.text("delete-in-use")
    cli.quiet("port-delete")
    cli.quiet("delete")
    assert [g["Name"] for g in cli.json("list-after")] == ["default"]
