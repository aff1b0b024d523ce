"""Metering labels and rules through the ``openstack`` CLI and openstacksdk."""

from __future__ import annotations

import openstack
import pytest

from tests.compat.cli import run_scenario

SCENARIO = [
    ("create", "network meter create cli-meter --description web --share -f json"),
    ("create-2", "network meter create cli-meter-2 -f json"),
    ("list", "network meter list -f json"),
    ("show", "network meter show cli-meter -f json"),
    ("rule", "network meter rule create --egress --exclude --remote-ip-prefix 10.9.0.0/16 "
             "cli-meter -f json"),
    ("rule-2", "network meter rule create --ingress --source-ip-prefix 192.0.2.0/24 "
               "--destination-ip-prefix 10.9.1.0/24 cli-meter -f json"),
    ("overlap", "network meter rule create --egress --exclude --remote-ip-prefix 10.9.3.0/24 "
                "cli-meter"),
    ("rule-list", "network meter rule list -f json"),
    ("delete-2", "network meter delete cli-meter-2"),
    ("list-after", "network meter list -f json"),
]


@pytest.fixture(scope="module")
def cli(clouds_yaml, tmp_path_factory):
    return run_scenario(SCENARIO, clouds_yaml, tmp_path_factory.mktemp("home"))


def test_cli_meters(cli):
    made = cli.json("create")
    assert (made["name"], made["description"], made["shared"]) == ("cli-meter", "web", True)
    assert sorted(row["Name"] for row in cli.json("list")) == ["cli-meter", "cli-meter-2"]
    assert cli.json("show")["id"] == made["id"]
    cli.quiet("delete-2")
    assert [row["Name"] for row in cli.json("list-after")] == ["cli-meter"]


def test_cli_meter_rules(cli):
    made, rule, other = cli.json("create"), cli.json("rule"), cli.json("rule-2")
    assert (rule["metering_label_id"], rule["direction"], rule["is_excluded"],
            rule["remote_ip_prefix"]) == (made["id"], "egress", True, "10.9.0.0/16")
    assert (other["source_ip_prefix"], other["destination_ip_prefix"]) == (
        "192.0.2.0/24", "10.9.1.0/24")
    assert "overlaps another" in cli.text("overlap")
    assert sorted(row["ID"] for row in cli.json("rule-list")) == sorted(
        [rule["id"], other["id"]])


def test_cli_rule_delete(clouds_yaml, tmp_path_factory):
    session = run_scenario([
        ("label", "network meter create cli-doomed -f json"),
        ("rule", "network meter rule create --ingress --remote-ip-prefix 10.8.0.0/16 "
                 "cli-doomed -f json"),
    ], clouds_yaml, tmp_path_factory.mktemp("home"))
    rule = session.json("rule")
    after = run_scenario([
        ("show", f"network meter rule show {rule['id']} -f json"),
        ("delete", f"network meter rule delete {rule['id']}"),
        ("list", "network meter rule list -f json"),
        ("label-delete", "network meter delete cli-doomed"),
    ], clouds_yaml, tmp_path_factory.mktemp("home"))
    assert after.json("show")["remote_ip_prefix"] == "10.8.0.0/16"
    after.quiet("delete")
    assert rule["id"] not in [row["ID"] for row in after.json("list")]
    after.quiet("label-delete")


def test_openstacksdk(conn: openstack.connection.Connection):
    net = conn.network
    made = net.create_metering_label(name="sdk-meter", description="d", is_shared=False)
    assert (made.name, made.description, made.is_shared) == ("sdk-meter", "d", False)
    assert net.get_metering_label(made.id).name == "sdk-meter"
    assert net.find_metering_label("sdk-meter").id == made.id
    assert made.id in [label.id for label in net.metering_labels()]
    rule = net.create_metering_label_rule(metering_label_id=made.id, direction="ingress",
                                          remote_ip_prefix="172.16.0.0/12", is_excluded=True)
    assert (rule.direction, rule.remote_ip_prefix, rule.is_excluded) == (
        "ingress", "172.16.0.0/12", True)
    both = net.create_metering_label_rule(metering_label_id=made.id, direction="egress",
                                          source_ip_prefix="10.0.0.0/8",
                                          destination_ip_prefix="198.51.100.0/24")
    assert (both.source_ip_prefix, both.destination_ip_prefix) == (
        "10.0.0.0/8", "198.51.100.0/24")
    assert net.get_metering_label_rule(rule.id).metering_label_id == made.id
    listed = [r.id for r in net.metering_label_rules(metering_label_id=made.id)]
    assert sorted(listed) == sorted([rule.id, both.id])
    with pytest.raises(openstack.exceptions.ConflictException):
        net.create_metering_label_rule(metering_label_id=made.id, direction="ingress",
                                       remote_ip_prefix="172.16.1.0/24", is_excluded=True)
    net.delete_metering_label_rule(rule.id)
    assert [r.id for r in net.metering_label_rules(metering_label_id=made.id)] == [both.id]
    net.delete_metering_label(made)
    with pytest.raises(openstack.exceptions.NotFoundException):
        net.get_metering_label_rule(both.id)
    assert net.find_metering_label("sdk-meter") is None
