"""The neutronclient OSC plugin's ``openstack firewall group ...`` commands and
openstacksdk's FWaaS calls against neutrino."""

from __future__ import annotations

import openstack
import pytest

from tests.compat.cli import run_scenario
from tests.compat.conftest import write_clouds_yaml
from tests.harness import create_database, start_server


@pytest.fixture(scope="module")
def fw_server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("compat-firewall")
    url, drop = create_database("sqlite", tmp)
    srv = start_server(tmp, url, auth="noauth",
                       extra="service_plugins = router,firewall_v2\n")
    yield srv
    srv.stop()
    drop()


def test_openstack_cli_firewall_groups(fw_server, tmp_path):
    clouds = write_clouds_yaml(tmp_path, fw_server.url)
    session = run_scenario([
        ("web", "firewall group rule create web --protocol tcp "
                "--destination-port 80 --action allow -f json"),
        ("deny", "firewall group rule create deny-all --action deny -f json"),
        ("policy", "firewall group policy create pol --firewall-rule web -f json"),
        ("add", "firewall group policy add rule pol deny-all --insert-after web"),
        ("shown", "firewall group policy show pol -f json"),
        ("remove", "firewall group policy remove rule pol deny-all"),
        ("group", "firewall group create g --ingress-firewall-policy pol "
                  "--no-port -f json"),
        ("set", "firewall group set g --description hello"),
        ("show", "firewall group show g -f json"),
        ("list", "firewall group list -f json"),
        ("rules", "firewall group rule list -f json"),
        ("del-group", "firewall group delete g"),
        ("del-policy", "firewall group policy delete pol"),
        ("del-rules", "firewall group rule delete web deny-all"),
        ("after", "firewall group rule list -f json"),
    ], clouds, tmp_path)
    web = session.json("web")
    assert (web["Protocol"], web["Destination Port"], web["Action"]) == ("tcp", "80", "allow")
    assert "Inserted firewall rule" in session.text("add")
    shown = session.json("shown")
    rules = shown["Firewall Rules"]
    assert rules == [web["ID"], session.json("deny")["ID"]], shown
    assert "Removed firewall rule" in session.text("remove")
    group = session.json("group")
    assert group["Ingress Policy ID"] == session.json("policy")["ID"], group
    assert group["Status"] == "INACTIVE"
    session.quiet("set")
    assert session.json("show")["Description"] == "hello"
    assert {"g", "default"} <= {row["Name"] for row in session.json("list")}
    for key in ("del-group", "del-policy", "del-rules"):
        session.quiet(key)
    assert not {"web", "deny-all"} & {row["Name"] for row in session.json("after")}


def test_openstacksdk_firewall_calls(fw_server):
    conn = openstack.connection.Connection(auth_type="none",
                                           network_endpoint_override=fw_server.url)
    try:
        net = conn.network
        ssh = net.create_firewall_rule(name="ssh", protocol="tcp", destination_port="22",
                                       action="allow")
        ping = net.create_firewall_rule(name="ping", protocol="icmp", action="allow")
        policy = net.create_firewall_policy(name="sdk", firewall_rules=[ssh.id])
        net.insert_rule_into_policy(policy.id, ping.id, insert_before=ssh.id)
        assert net.get_firewall_policy(policy.id).firewall_rules == [ping.id, ssh.id]
        net.remove_rule_from_policy(policy.id, ping.id)
        group = net.create_firewall_group(name="sdk-g", egress_firewall_policy_id=policy.id)
        assert net.get_firewall_group(group.id).egress_firewall_policy_id == policy.id
        assert "sdk-g" in {g.name for g in net.firewall_groups()}
        net.update_firewall_rule(ssh.id, destination_port="2222")
        assert net.get_firewall_rule(ssh.id).destination_port == "2222"
        net.delete_firewall_group(group.id)
        net.delete_firewall_policy(policy.id)
        for rule in (ssh, ping):
            net.delete_firewall_rule(rule.id)
        assert net.find_firewall_rule("ssh") is None
    finally:
        conn.close()
