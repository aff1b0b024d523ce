"""Local IPs (local_ip): /v2.0/local_ips and their port associations, with
Neutron's choices of address and its errors, the ports they make or keep,
the policy, and nothing left behind by a request that fails."""

from __future__ import annotations

import pytest

from tests.api.agent_reports import Reporter, unique_host
from tests.conftest import BACKENDS
from tests.harness import ApiClient, Server, create_database, expect_error, start_server

LIPS = "/v2.0/local_ips"
OWNER = "network:local_ip"


@pytest.fixture(scope="module", params=BACKENDS)
def lip_server(request, tmp_path_factory):
    tmp = tmp_path_factory.mktemp(f"lip-{request.param}")
    url, drop = create_database(request.param, tmp)
    srv = start_server(tmp, url, auth="trusted_headers", extra=(
        "service_plugins = local_ip\n"
        "[ml2]\nmechanism_drivers = openvswitch,linuxbridge\n"))
    yield srv
    srv.stop()
    drop()


@pytest.fixture
def admin(lip_server: Server, project: str) -> ApiClient:
    return lip_server.client(project, roles=("admin", "member"))


@pytest.fixture
def user(lip_server: Server, project: str) -> ApiClient:
    return lip_server.client(project, roles=("member", "reader"))


@pytest.fixture
def other(lip_server: Server, other_project: str) -> ApiClient:
    return lip_server.client(other_project, roles=("member", "reader"))


@pytest.fixture
def net(user: ApiClient) -> dict:
    network = user.network()
    user.subnet(network["id"], "10.61.0.0/24")
    return network


def made(client: ApiClient, **attrs) -> dict:
    resp = client.post(LIPS, json={"local_ip": attrs})
    assert resp.status_code == 201, resp.text
    return resp.json()["local_ip"]


def associations(lip_id: str) -> str:
    return f"{LIPS}/{lip_id}/port_associations"


def associate(client: ApiClient, lip_id: str, **attrs):
    return client.post(associations(lip_id), json={"port_association": attrs})


def local_ports(client: ApiClient, network_id: str) -> list[dict]:
    return client.get("/v2.0/ports", params={"network_id": network_id,
                                             "device_owner": OWNER}).json()["ports"]


def test_the_extension_is_listed(user):
    aliases = {e["alias"] for e in user.get("/v2.0/extensions").json()["extensions"]}
    assert "local_ip" in aliases


def test_a_local_ip_on_a_network(user, other, net, project):
    """A port is made for it (the local IP's own, in its project); it shows,
    lists, filters, changes its name and description only, and goes with its port."""
    lip = made(user, name="lip", network_id=net["id"])
    assert lip == {
        "id": lip["id"], "name": "lip", "description": "", "project_id": project,
        "tenant_id": project, "local_port_id": lip["local_port_id"], "network_id": net["id"],
        "local_ip_address": lip["local_ip_address"], "ip_mode": "translate", "tags": [],
        "created_at": lip["created_at"], "updated_at": lip["updated_at"],
        "revision_number": 0}
    [port] = local_ports(user, net["id"])
    assert port["id"] == lip["local_port_id"]
    assert port["device_id"] == lip["id"] and port["project_id"] == project
    assert port["status"] == "N/A"
    assert [ip["ip_address"] for ip in port["fixed_ips"]] == [lip["local_ip_address"]]
    assert lip["local_ip_address"].startswith("10.61.0.")

    assert user.get(f"{LIPS}/{lip['id']}").json()["local_ip"] == lip
    listed = user.get(LIPS, params={"network_id": net["id"]}).json()["local_ips"]
    assert [item["id"] for item in listed] == [lip["id"]]
    assert user.get(LIPS, params={"ip_mode": "passthrough",
                                  "network_id": net["id"]}).json()["local_ips"] == []

    changed = user.put(f"{LIPS}/{lip['id']}", json={"local_ip": {"name": "n", "description": "d"}})
    assert changed.status_code == 200, changed.text
    assert changed.json()["local_ip"]["revision_number"] == 1
    assert changed.json()["local_ip"]["description"] == "d"
    for attr, value in (("local_ip_address", "10.61.0.99"), ("ip_mode", "passthrough"),
                        ("network_id", net["id"]), ("local_port_id", port["id"])):
        expect_error(user.put(f"{LIPS}/{lip['id']}", json={"local_ip": {attr: value}}),
                     400, "HTTPBadRequest")

    # another project sees none of it, touches none of it
    assert other.get(LIPS).json()["local_ips"] == []
    expect_error(other.get(f"{LIPS}/{lip['id']}"), 404, "LocalIPNotFound",
                 f"Local IP {lip['id']} could not be found.")
    expect_error(other.put(f"{LIPS}/{lip['id']}", json={"local_ip": {"name": "x"}}),
                 404, "LocalIPNotFound")
    expect_error(other.delete(f"{LIPS}/{lip['id']}"), 404, "LocalIPNotFound")

    # tags, as on every resource with standard attributes
    assert user.put(f"{LIPS}/{lip['id']}/tags/web").status_code == 201
    assert user.get(f"{LIPS}/{lip['id']}").json()["local_ip"]["tags"] == ["web"]
    assert [item["id"] for item in user.get(LIPS, params={"tags": "web"}).json()[
        "local_ips"]] == [lip["id"]]

    # its port stays while it does, and so do its network and subnet
    expect_error(user.delete(f"/v2.0/ports/{port['id']}"), 409, "ServicePortInUse")
    expect_error(user.delete(f"/v2.0/networks/{net['id']}"), 409, "NetworkInUse")
    expect_error(user.delete(f"/v2.0/subnets/{port['fixed_ips'][0]['subnet_id']}"), 409,
                 "SubnetInUse")
    assert user.delete(f"{LIPS}/{lip['id']}").status_code == 204
    assert local_ports(user, net["id"]) == []
    assert user.delete(f"/v2.0/networks/{net['id']}").status_code == 204
    expect_error(user.get(f"{LIPS}/{lip['id']}"), 404, "LocalIPNotFound")


def test_the_address_asked_for_on_a_network(user, net):
    lip = made(user, network_id=net["id"], local_ip_address="10.61.0.50",
               ip_mode="passthrough")
    assert lip["local_ip_address"] == "10.61.0.50"
    assert lip["ip_mode"] == "passthrough"
    # taken: the port's own error, and nothing left of the attempt
    expect_error(user.post(LIPS, json={"local_ip": {
        "network_id": net["id"], "local_ip_address": "10.61.0.50"}}), 409,
        "IpAddressAlreadyAllocated")
    resp = user.post(LIPS, json={"local_ip": {"network_id": net["id"],
                                              "local_ip_address": "192.0.2.7"}})
    assert resp.status_code == 400, resp.text
    assert [p["id"] for p in local_ports(user, net["id"])] == [lip["local_port_id"]]
    assert [item["id"] for item in user.get(
        LIPS, params={"network_id": net["id"]}).json()["local_ips"]] == [lip["id"]]


def test_a_network_needs_an_ipv4_subnet(user):
    network = user.network()
    expect_error(user.post(LIPS, json={"local_ip": {"network_id": network["id"]}}), 400,
                 "BadRequest", f"Bad local_ip request: Network {network['id']} does not "
                               "contain any IPv4 subnet.")
    user.subnet(network["id"], "fd61::/64")
    expect_error(user.post(LIPS, json={"local_ip": {"network_id": network["id"]}}), 400,
                 "BadRequest")
    assert local_ports(user, network["id"]) == []
    expect_error(user.post(LIPS, json={"local_ip": {
        "network_id": "4b3a41d8-5d0d-4e55-9c8b-111111111111"}}), 404, "NetworkNotFound")


def test_a_local_ip_of_a_port(user, other, net, project):
    """The port's only address, or the one asked for; errors as Neutron's; the
    port stays when the local IP goes."""
    single = user.port(net["id"])
    address = single["fixed_ips"][0]["ip_address"]
    lip = made(user, local_port_id=single["id"])
    assert (lip["local_port_id"], lip["local_ip_address"], lip["network_id"]) == (
        single["id"], address, net["id"])
    expect_error(user.post(LIPS, json={"local_ip": {
        "local_port_id": single["id"], "local_ip_address": "10.61.0.250"}}), 400,
        "LocalIPRequestedIPNotFound", f"Specified Port {single['id']} does not have "
                                      "requested IP address: 10.61.0.250.")
    double = user.port(net["id"], fixed_ips=[{"ip_address": "10.61.0.21"},
                                             {"ip_address": "10.61.0.22"}])
    expect_error(user.post(LIPS, json={"local_ip": {"local_port_id": double["id"]}}), 400,
                 "LocalIPNoRequestedIP", f"Specified Port {double['id']} has several IPs, "
                                         "should specify exact IP address to use for Local IP.")
    chosen = made(user, local_port_id=double["id"], local_ip_address="10.61.0.22")
    assert chosen["local_ip_address"] == "10.61.0.22"
    bare_net = user.network()
    bare = user.port(bare_net["id"])
    expect_error(user.post(LIPS, json={"local_ip": {"local_port_id": bare["id"]}}), 400,
                 "LocalIPNoIP", f"Specified Port {bare['id']} has no fixed IPs configured.")
    # a port the caller cannot see is not found
    theirs = other.port(other.network()["id"])
    expect_error(user.post(LIPS, json={"local_ip": {"local_port_id": theirs["id"]}}), 400,
                 "BadRequest", f"Bad local_ip request: Port {theirs['id']} not found.")
    expect_error(user.post(LIPS, json={"local_ip": {"name": "x"}}), 400,
                 "LocalIPPortOrNetworkRequired",
                 "Either Port ID or Network ID must be specified for Local IP create.")
    expect_error(user.post(LIPS, json={"local_ip": {"network_id": net["id"],
                                                    "ip_mode": "tunnel"}}), 400,
                 "HTTPBadRequest")
    # a port given is the caller's, and stays
    expect_error(user.delete(f"/v2.0/ports/{single['id']}"), 409, "ServicePortInUse")
    assert user.delete(f"{LIPS}/{lip['id']}").status_code == 204
    assert user.get(f"/v2.0/ports/{single['id']}").status_code == 200
    assert user.delete(f"/v2.0/ports/{single['id']}").status_code == 204
    assert local_ports(user, net["id"]) == []


def test_port_associations(user, other, net, project):
    lip = made(user, network_id=net["id"])
    path = associations(lip["id"])
    port = user.port(net["id"])
    fixed = port["fixed_ips"][0]["ip_address"]
    resp = associate(user, lip["id"], fixed_port_id=port["id"])
    assert resp.status_code == 201, resp.text
    assoc = resp.json()["port_association"]
    assert assoc == {"local_ip_id": lip["id"], "local_ip_address": lip["local_ip_address"],
                     "fixed_port_id": port["id"], "fixed_ip": fixed, "host": "",
                     "project_id": project}
    assert user.get(path).json()["port_associations"] == [assoc]
    assert user.get(f"{path}/{port['id']}").json()["port_association"] == assoc
    assert user.get(path, params={"fixed_ip": fixed}).json()["port_associations"] == [assoc]
    assert user.get(path, params={"fixed_ip": "10.61.0.254"}).json()[
        "port_associations"] == []
    expect_error(associate(user, lip["id"], fixed_port_id=port["id"]), 409,
                 "LocalIPPortAssociationExists")

    # a port of several addresses: the one given, which must be its own
    double = user.port(net["id"], fixed_ips=[{"ip_address": "10.61.0.31"},
                                             {"ip_address": "10.61.0.32"}])
    expect_error(associate(user, lip["id"], fixed_port_id=double["id"]), 400,
                 "LocalIPNoRequestedIP")
    expect_error(associate(user, lip["id"], fixed_port_id=double["id"],
                           fixed_ip="10.61.0.33"), 400, "LocalIPRequestedIPNotFound")
    resp = associate(user, lip["id"], fixed_port_id=double["id"], fixed_ip="10.61.0.32")
    assert resp.status_code == 201, resp.text
    assert resp.json()["port_association"]["fixed_ip"] == "10.61.0.32"
    bare = user.port(user.network()["id"])
    expect_error(associate(user, lip["id"], fixed_port_id=bare["id"]), 400, "LocalIPNoIP")
    theirs = other.port(other.network()["id"])
    expect_error(associate(user, lip["id"], fixed_port_id=theirs["id"]), 400, "BadRequest")
    expect_error(associate(user, lip["id"]), 400, "HTTPBadRequest")
    listed = user.get(path, params={"sort_key": "fixed_ip", "sort_dir": "desc"}).json()
    assert [a["fixed_ip"] for a in listed["port_associations"]] == sorted(
        [fixed, "10.61.0.32"], reverse=True)

    # another project: not found, whatever it tries
    expect_error(other.get(path), 404, "LocalIPNotFound")
    expect_error(other.get(f"{path}/{port['id']}"), 404, "LocalIPNotFound")
    expect_error(associate(other, lip["id"], fixed_port_id=theirs["id"]), 404,
                 "LocalIPNotFound")
    expect_error(other.delete(f"{path}/{port['id']}"), 404, "LocalIPNotFound")

    # in use: not deleted; an association goes with its port
    expect_error(user.delete(f"{LIPS}/{lip['id']}"), 409, "LocalIPInUse",
                 f"Local IP {lip['id']} is still associated with one or more ports.")
    assert user.delete(f"/v2.0/ports/{double['id']}").status_code == 204
    assert [a["fixed_port_id"] for a in user.get(path).json()["port_associations"]] == [
        port["id"]]
    assert user.delete(f"{path}/{port['id']}").status_code == 204
    expect_error(user.get(f"{path}/{port['id']}"), 404, "LocalIPAssociationNotFound",
                 f"Local IP {lip['id']} association with port {port['id']} could not be "
                 "found.")
    expect_error(user.delete(f"{path}/{port['id']}"), 404, "LocalIPAssociationNotFound")
    assert user.delete(f"{LIPS}/{lip['id']}").status_code == 204
    expect_error(user.get(path), 404, "LocalIPNotFound")


def test_only_open_vswitch_enforces_them(lip_server, admin):
    """A port the Linux bridge driver bound is refused (409); one Open vSwitch
    bound is taken, and the association shows its host."""
    reporter = Reporter(lip_server.db_url)
    lb_host, ovs_host = unique_host(), unique_host()
    reporter.agent(lb_host, "Linux bridge agent", configurations={
        "interface_mappings": {"physnet1": "eth1"}})
    reporter.agent(ovs_host, configurations={"bridge_mappings": {"physnet1": "br-ex"}})
    network = admin.create("networks", **{"provider:network_type": "flat",
                                          "provider:physical_network": "physnet1"})
    admin.subnet(network["id"], "10.62.0.0/24")
    lip = made(admin, network_id=network["id"])
    on_lb = admin.port(network["id"], **{"binding:host_id": lb_host})
    assert on_lb["binding:vif_type"] == "bridge", on_lb
    error = expect_error(associate(admin, lip["id"], fixed_port_id=on_lb["id"]), 409,
                         "LocalIPNotSupportedOnLinuxBridge")
    assert "only Open vSwitch" in error["message"]
    on_ovs = admin.port(network["id"], **{"binding:host_id": ovs_host})
    assert on_ovs["binding:vif_type"] == "ovs", on_ovs
    resp = associate(admin, lip["id"], fixed_port_id=on_ovs["id"])
    assert resp.status_code == 201, resp.text
    assert resp.json()["port_association"]["host"] == ovs_host
    assert admin.get(associations(lip["id"])).json()["port_associations"][0][
        "host"] == ovs_host
