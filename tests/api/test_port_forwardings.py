"""Port forwardings on floating IPs, and their conflicts with association."""

from __future__ import annotations

import pytest

from tests.harness import ApiClient, expect_error, start_server

PF_KEYS = {"id", "internal_port_id", "internal_ip_address", "protocol", "external_port",
           "internal_port", "external_port_range", "internal_port_range", "description"}


@pytest.fixture
def setup(user, admin):
    """A floating IP, and an instance port behind a router to its network."""
    ext = admin.network(**{"router:external": True})
    admin.subnet(ext["id"], "203.0.113.0/24")
    net = user.network()
    subnet = user.subnet(net["id"], "10.40.0.0/24")
    router = user.post("/v2.0/routers", json={"router": {
        "external_gateway_info": {"network_id": ext["id"]}}}).json()["router"]
    user.put(f"/v2.0/routers/{router['id']}/add_router_interface",
             json={"subnet_id": subnet["id"]})
    fip = user.post("/v2.0/floatingips", json={"floatingip": {
        "floating_network_id": ext["id"]}}).json()["floatingip"]
    port = user.port(net["id"])
    return {"ext": ext, "net": net, "subnet": subnet, "router": router, "fip": fip,
            "port": port, "address": port["fixed_ips"][0]["ip_address"]}


def path(setup, pf_id: str = "") -> str:
    return f"/v2.0/floatingips/{setup['fip']['id']}/port_forwardings" + (
        f"/{pf_id}" if pf_id else "")


def forward(client: ApiClient, setup, **attrs):
    body = {"internal_port_id": setup["port"]["id"],
            "internal_ip_address": setup["address"], "protocol": "tcp", **attrs}
    return client.post(path(setup), json={"port_forwarding": body})


def test_create_show_list_update_delete(user, setup):
    resp = forward(user, setup, external_port=2222, internal_port=22, description="ssh")
    assert resp.status_code == 201, resp.text
    made = resp.json()["port_forwarding"]
    assert set(made) == PF_KEYS
    assert (made["external_port"], made["internal_port"]) == (2222, 22)
    assert (made["external_port_range"], made["internal_port_range"]) == ("2222:2222", "22:22")
    assert made["description"] == "ssh"
    assert user.get(path(setup, made["id"])).json()["port_forwarding"] == made
    assert user.get(path(setup)).json()["port_forwardings"] == [made]
    assert user.get(path(setup), params={"protocol": "udp"}).json()["port_forwardings"] == []
    # the floating IP now goes through the router, with no port of its own
    fip = user.show("floatingips", setup["fip"]["id"])
    assert (fip["router_id"], fip["port_id"]) == (setup["router"]["id"], None)
    resp = user.put(path(setup, made["id"]), json={"port_forwarding": {
        "external_port": 2200}})
    assert resp.status_code == 200, resp.text
    assert resp.json()["port_forwarding"]["external_port"] == 2200
    assert resp.json()["port_forwarding"]["internal_port"] == 22
    assert user.delete(path(setup, made["id"])).status_code == 204
    expect_error(user.get(path(setup, made["id"])), 404, "PortForwardingNotFound")
    assert user.show("floatingips", setup["fip"]["id"])["router_id"] is None


def test_ranges(user, setup):
    resp = forward(user, setup, external_port_range="8000:8009",
                   internal_port_range="9000:9009")
    assert resp.status_code == 201, resp.text
    made = resp.json()["port_forwarding"]
    assert (made["external_port"], made["internal_port"]) == (None, None)
    assert made["external_port_range"] == "8000:8009"
    expect_error(forward(user, setup, external_port_range="8100:8109",
                         internal_port_range="9100:9104"), 400, "BadRequest")
    one_to_many = forward(user, setup, external_port_range="8200:8209", internal_port=80)
    assert one_to_many.status_code == 201, one_to_many.text
    expect_error(forward(user, setup, external_port=8005, internal_port=22), 400,
                 "BadRequest", "Bad port_forwarding request: There is a port collision with "
                 "the external_port_range. The following ranges collides: 8000:8009 and "
                 "8005:8005.")
    expect_error(forward(user, setup, external_port=7000, internal_port=9005), 400,
                 "BadRequest", "Bad port_forwarding request: There is a port collision with "
                 "the internal_port_range. The following ranges collides: 9000:9009 and "
                 "9005:9005.")
    # another protocol does not collide
    assert forward(user, setup, protocol="udp", external_port=8005,
                   internal_port=9005).status_code == 201
    for bad in ("9:1", "0:5", "1:2:3", "x"):
        expect_error(forward(user, setup, external_port_range=bad, internal_port=1), 400,
                     "HTTPBadRequest")
    expect_error(forward(user, setup, external_port=1, external_port_range="1:1",
                         internal_port=1), 400, "BadRequest")
    expect_error(forward(user, setup, internal_port=1), 400, "BadRequest")


def test_validation_errors(user, other, setup):
    expect_error(forward(user, setup, external_port=70000, internal_port=22), 400,
                 "HTTPBadRequest")
    expect_error(forward(user, setup, external_port=22, internal_port=22, protocol="icmp"),
                 400, "HTTPBadRequest")
    expect_error(forward(user, setup, external_port=22, internal_port=22,
                         internal_ip_address="10.40.0.254"), 400, "BadRequest")
    isolated = user.network()
    user.subnet(isolated["id"], "10.41.0.0/24")
    lonely = user.port(isolated["id"])
    expect_error(forward(user, setup, external_port=22, internal_port=22,
                         internal_port_id=lonely["id"],
                         internal_ip_address=lonely["fixed_ips"][0]["ip_address"]), 400,
                 "BadRequest")
    missing = "00000000-0000-0000-0000-000000000000"
    expect_error(user.post(f"/v2.0/floatingips/{missing}/port_forwardings", json={
        "port_forwarding": {}}), 404, "FloatingIPNotFound")
    expect_error(user.get(path(setup, missing)), 404, "PortForwardingNotFound")
    # another project sees neither the floating IP nor its forwardings
    expect_error(other.get(path(setup)), 404, "FloatingIPNotFound")
    expect_error(forward(other, setup, external_port=22, internal_port=22), 404,
                 "FloatingIPNotFound")


def test_conflicts_with_association(user, setup):
    made = forward(user, setup, external_port=2222, internal_port=22).json()["port_forwarding"]
    fip_path = f"/v2.0/floatingips/{setup['fip']['id']}"
    expect_error(user.put(fip_path, json={"floatingip": {"port_id": setup["port"]["id"]}}),
                 409, "FipInUseByPortForwarding")
    expect_error(user.delete(fip_path), 409, "FipInUseByPortForwarding")
    # the router interface the forwarding goes through stays
    expect_error(user.put(f"/v2.0/routers/{setup['router']['id']}/remove_router_interface",
                          json={"subnet_id": setup["subnet"]["id"]}), 409,
                 "RouterInterfaceInUseByFloatingIP")
    # a floating IP bound to a port takes no forwardings, and a bound port neither
    bound = user.post("/v2.0/floatingips", json={"floatingip": {
        "floating_network_id": setup["ext"]["id"]}}).json()["floatingip"]
    other_port = user.port(setup["net"]["id"])
    user.put(f"/v2.0/floatingips/{bound['id']}", json={"floatingip": {
        "port_id": other_port["id"]}})
    resp = user.post(f"/v2.0/floatingips/{bound['id']}/port_forwardings", json={
        "port_forwarding": {"internal_port_id": setup["port"]["id"],
                            "internal_ip_address": setup["address"], "protocol": "tcp",
                            "external_port": 80, "internal_port": 80}})
    expect_error(resp, 409, "FloatingIPPortAlreadyAssociated")
    expect_error(forward(user, setup, external_port=80, internal_port=80,
                         internal_port_id=other_port["id"],
                         internal_ip_address=other_port["fixed_ips"][0]["ip_address"]),
                 409, "PortHasBindingFloatingIP")
    # deleting the internal port takes its forwardings with it
    assert user.delete(f"/v2.0/ports/{setup['port']['id']}").status_code == 204
    expect_error(user.get(path(setup, made["id"])), 404, "PortForwardingNotFound")
    assert user.show("floatingips", setup["fip"]["id"])["router_id"] is None
    assert user.delete(fip_path).status_code == 204


def test_floatingip_lists_its_forwardings(user, setup):
    """expose-port-forwarding-in-fip: a floating IP shows its forwardings, the
    single ports only where they are not ranges, as Neutron shows them."""
    aliases = {e["alias"] for e in user.get("/v2.0/extensions").json()["extensions"]}
    assert {"expose-port-forwarding-in-fip", "floating-ip-port-forwarding-detail"} <= aliases
    fip_id = setup["fip"]["id"]
    assert user.show("floatingips", fip_id)["port_forwardings"] == []
    single = forward(user, setup, external_port=2222, internal_port=22).json()
    ranged = forward(user, setup, protocol="udp", external_port_range="3000:3001",
                     internal_port_range="4000:4001").json()
    common = {"internal_ip_address": setup["address"],
              "internal_port_id": setup["port"]["id"]}
    wanted = sorted([
        {**common, "id": single["port_forwarding"]["id"], "protocol": "tcp",
         "internal_port": 22, "external_port": 2222},
        {**common, "id": ranged["port_forwarding"]["id"], "protocol": "udp"},
    ], key=lambda pf: pf["id"])
    assert sorted(user.show("floatingips", fip_id)["port_forwardings"],
                  key=lambda pf: pf["id"]) == wanted
    listed = user.get("/v2.0/floatingips", params={"id": fip_id}).json()["floatingips"]
    assert sorted(listed[0]["port_forwardings"], key=lambda pf: pf["id"]) == wanted
    only = user.get(f"/v2.0/floatingips/{fip_id}", params={"fields": "port_forwardings"})
    assert set(only.json()["floatingip"]) == {"port_forwardings"}


def test_no_forwardings_in_floatingips_without_the_plugin(tmp_path):
    """Without the port_forwarding plugin neither the alias nor the attribute."""
    srv = start_server(tmp_path, f"sqlite:///{tmp_path / 'nopf.db'}", auth="noauth")
    try:
        admin = srv.client("p1", roles=("admin",))
        aliases = {e["alias"] for e in admin.get("/v2.0/extensions").json()["extensions"]}
        assert "expose-port-forwarding-in-fip" not in aliases
        net = admin.network(**{"router:external": True})
        admin.subnet(net["id"], "203.0.113.0/24")
        made = admin.post("/v2.0/floatingips", json={"floatingip": {
            "floating_network_id": net["id"]}}).json()["floatingip"]
        assert "port_forwardings" not in made
        assert "port_forwardings" not in admin.show("floatingips", made["id"])
    finally:
        srv.stop()
