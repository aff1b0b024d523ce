"""Port extras over HTTP: allowed address pairs and extra DHCP options (built into
ML2), DNS names and domains (the ``dns`` extension driver)."""

import pytest

from tests.conftest import BACKENDS
from tests.harness import create_database, expect_error, start_server

PAIRS = "allowed_address_pairs"
OPTS = "extra_dhcp_opts"


def _post(client, network_id: str, **attrs):
    return client.post("/v2.0/ports", json={"port": {"network_id": network_id, **attrs}})


def _put(client, port_id: str, **attrs):
    return client.put(f"/v2.0/ports/{port_id}", json={"port": attrs})


def _aliases(client) -> set[str]:
    return {e["alias"] for e in client.get("/v2.0/extensions").json()["extensions"]}


def _ports_of(client, network_id: str) -> list[dict]:
    resp = client.get("/v2.0/ports", params={"network_id": network_id})
    assert resp.status_code == 200, resp.text
    return resp.json()["ports"]


@pytest.fixture
def net(user):
    net = user.network()
    user.subnet(net["id"], "10.0.0.0/24")
    return net


def test_pairs_and_dhcp_options_are_built_in(user, net):
    assert {"allowed-address-pairs", "extra_dhcp_opt"} <= _aliases(user)
    assert "dns-integration" not in _aliases(user)
    port = user.port(net["id"])
    assert port[PAIRS] == [] and port[OPTS] == []
    assert user.show("ports", port["id"])[PAIRS] == []


# --- allowed address pairs ---------------------------------------------------------------


def test_pairs_take_the_port_mac_and_stay_as_written(user, net):
    pairs = [{"ip_address": "10.0.0.50"},
             {"ip_address": "10.1.0.0/24", "mac_address": "fa:16:3e:aa:bb:cc"},
             {"ip_address": "10.0.0.51/32"},  # Neutron keeps a host /32 as written
             {"ip_address": "2001:DB8::1/128", "mac_address": "FA:16:3E:AA:BB:CD"}]
    port = user.port(net["id"], allowed_address_pairs=pairs)
    mac = port["mac_address"]
    expected = [{"ip_address": "10.0.0.50", "mac_address": mac},
                {"ip_address": "10.1.0.0/24", "mac_address": "fa:16:3e:aa:bb:cc"},
                {"ip_address": "10.0.0.51/32", "mac_address": mac},
                {"ip_address": "2001:DB8::1/128", "mac_address": "FA:16:3E:AA:BB:CD"}]
    assert port[PAIRS] == expected
    assert user.show("ports", port["id"])[PAIRS] == expected
    [listed] = [p for p in _ports_of(user, net["id"]) if p["id"] == port["id"]]
    assert listed[PAIRS] == expected


def test_update_replaces_the_pairs(user, net):
    port = user.port(net["id"], allowed_address_pairs=[{"ip_address": "10.0.0.50"},
                                                       {"ip_address": "10.0.0.51"}])
    resp = _put(user, port["id"], allowed_address_pairs=[{"ip_address": "10.0.0.52"}])
    assert resp.status_code == 200, resp.text
    assert resp.json()["port"][PAIRS] == [{"ip_address": "10.0.0.52",
                                           "mac_address": port["mac_address"]}]
    # an update of something else leaves them alone
    assert _put(user, port["id"], name="x").json()["port"][PAIRS][0]["ip_address"] == (
        "10.0.0.52")
    assert _put(user, port["id"], allowed_address_pairs=[]).json()["port"][PAIRS] == []
    _put(user, port["id"], allowed_address_pairs=[{"ip_address": "10.0.0.53"}])
    assert _put(user, port["id"], allowed_address_pairs=None).json()["port"][PAIRS] == []
    assert user.show("ports", port["id"])[PAIRS] == []


def test_pairs_keep_the_mac_they_were_given(admin, net):
    port = admin.port(net["id"], allowed_address_pairs=[{"ip_address": "10.0.0.50"}])
    old_mac = port["mac_address"]
    moved = _put(admin, port["id"], mac_address="fa:16:3e:12:34:56").json()["port"]
    assert moved[PAIRS] == [{"ip_address": "10.0.0.50", "mac_address": old_mac}]
    # new pairs without a MAC take the port's new one
    again = _put(admin, port["id"], allowed_address_pairs=[{"ip_address": "10.0.0.50"}])
    assert again.json()["port"][PAIRS] == [{"ip_address": "10.0.0.50",
                                            "mac_address": "fa:16:3e:12:34:56"}]


@pytest.mark.parametrize("pairs, type_, message", [
    ("10.0.0.5", "HTTPBadRequest", "Allowed address pairs must be a list."),
    (["10.0.0.5"], "HTTPBadRequest",
     "Invalid input for allowed_address_pairs. Reason: '10.0.0.5' is not a dictionary."),
    ([{"ip_address": "10.0.0.5", "mac_address": "fa:16:3e:zz:00:01"}], "HTTPBadRequest",
     "'fa:16:3e:zz:00:01' is not a valid MAC address"),
    ([{"mac_address": "fa:16:3e:00:00:01"}], "AllowedAddressPairsMissingIP",
     "AllowedAddressPair must contain ip_address"),
    ([{"ip_address": "10.0.0.5"}, {"ip_address": "10.0.0.5"}], "DuplicateAddressPairInRequest",
     "Request contains duplicate address pair: mac_address None ip_address 10.0.0.5."),
    ([{"ip_address": "10.0.0.5", "color": "red"}], "HTTPBadRequest",
     "Unrecognized attribute(s) 'color'"),
    ([{"ip_address": "10.0.0.300"}], "HTTPBadRequest", "'10.0.0.300' is not a valid IP address"),
    ([{"ip_address": "010.0.0.5"}], "HTTPBadRequest",
     "'010.0.0.5' is not an accepted IP address, '10.0.0.5' is recommended"),
    ([{"ip_address": "10.0.0.0/33"}], "HTTPBadRequest", "'10.0.0.0/33' is not a valid IP subnet"),
    ([{"ip_address": 5}], "HTTPBadRequest", "'5' is not a valid IP address"),
    # aap-reject-multicast
    ([{"ip_address": "224.0.0.5"}], "HTTPBadRequest",
     "IP 224.0.0.5 is a multicast address, which is not supported."),
    ([{"ip_address": "ff02::1"}], "HTTPBadRequest",
     "IP ff02::1 is a multicast address, which is not supported."),
    ([{"ip_address": "192.0.0.0/2"}], "HTTPBadRequest",
     "Subnet 192.0.0.0/2 overlaps with multicast range 224.0.0.0/4, which is not "
     "supported."),
    ([{"ip_address": "10.0.0.5", "mac_address": "01:00:5e:00:00:05"}], "HTTPBadRequest",
     "MAC address 01:00:5e:00:00:05 is a multicast address, which is not supported."),
])
def test_bad_pairs(user, net, pairs, type_, message):
    expect_error(_post(user, net["id"], allowed_address_pairs=pairs), 400, type_, message)
    port = user.port(net["id"])
    expect_error(_put(user, port["id"], allowed_address_pairs=pairs), 400, type_, message)
    assert _ports_of(user, net["id"]) == [user.show("ports", port["id"])]


def test_a_default_route_pair_is_no_multicast_range(user, net):
    port = user.port(net["id"], allowed_address_pairs=[{"ip_address": "0.0.0.0/0"}])
    assert port["allowed_address_pairs"][0]["ip_address"] == "0.0.0.0/0"


def test_a_pair_given_twice_once_with_the_port_mac(user, net):
    port = user.port(net["id"])
    twice = [{"ip_address": "10.0.0.5"},
             {"ip_address": "10.0.0.5", "mac_address": port["mac_address"].upper()}]
    expect_error(_put(user, port["id"], allowed_address_pairs=twice), 400,
                 "DuplicateAddressPairInRequest",
                 "Request contains duplicate address pair: mac_address "
                 f"{port['mac_address'].upper()} ip_address 10.0.0.5.")
    assert user.show("ports", port["id"])[PAIRS] == []


def test_pair_limit(user, net):
    eleven = [{"ip_address": f"10.0.1.{n}"} for n in range(11)]
    message = "The number of allowed address pair exceeds the maximum 10."
    expect_error(_post(user, net["id"], allowed_address_pairs=eleven), 400,
                 "AllowedAddressPairExhausted", message)
    port = user.port(net["id"], allowed_address_pairs=eleven[:10])
    assert len(port[PAIRS]) == 10
    expect_error(_put(user, port["id"], allowed_address_pairs=eleven), 400,
                 "AllowedAddressPairExhausted", message)
    assert len(user.show("ports", port["id"])[PAIRS]) == 10


PORTSEC_REQUIRED = ("Port Security must be enabled in order to have allowed address pairs "
                    "on a port.")


def test_pairs_need_port_security_on_create(user, net):
    pair = [{"ip_address": "10.0.0.50"}]
    for attrs in ({"port_security_enabled": False}, {}):
        target = net if attrs else user.network(port_security_enabled=False)
        resp = _post(user, target["id"], allowed_address_pairs=pair,
                     fixed_ips=[{"ip_address": "10.0.0.7"}] if attrs else [], **attrs)
        expect_error(resp, 409, "AddressPairAndPortSecurityRequired", PORTSEC_REQUIRED)
    # nothing stays behind: no port, and its address is free again
    assert _ports_of(user, net["id"]) == []
    user.port(net["id"], fixed_ips=[{"ip_address": "10.0.0.7"}])
    # an empty list is no pairs
    assert user.port(net["id"], port_security_enabled=False,
                     allowed_address_pairs=[])[PAIRS] == []


def test_pairs_and_port_security_on_update(user, net):
    open_port = user.port(net["id"], port_security_enabled=False)
    expect_error(_put(user, open_port["id"], allowed_address_pairs=[{"ip_address": "10.0.0.5"}]),
                 409, "AddressPairAndPortSecurityRequired", PORTSEC_REQUIRED)
    assert _put(user, open_port["id"], allowed_address_pairs=[]).status_code == 200
    # turning security on and adding pairs at once is fine
    both = _put(user, open_port["id"], port_security_enabled=True,
                allowed_address_pairs=[{"ip_address": "10.0.0.5"}])
    assert both.status_code == 200, both.text
    # security may not go off while pairs are kept ...
    expect_error(_put(user, open_port["id"], port_security_enabled=False), 409,
                 "AddressPairAndPortSecurityRequired", PORTSEC_REQUIRED)
    expect_error(_put(user, open_port["id"], port_security_enabled=False,
                      allowed_address_pairs=[{"ip_address": "10.0.0.6"}]),
                 409, "AddressPairAndPortSecurityRequired", PORTSEC_REQUIRED)
    kept = user.show("ports", open_port["id"])
    assert kept["port_security_enabled"] is True and len(kept[PAIRS]) == 1
    # ... unless the same request clears them
    cleared = _put(user, open_port["id"], port_security_enabled=False,
                   allowed_address_pairs=[]).json()["port"]
    assert cleared["port_security_enabled"] is False and cleared[PAIRS] == []


def test_bulk_create_is_all_or_nothing(user, net):
    resp = user.post("/v2.0/ports", json={"ports": [
        {"network_id": net["id"], "allowed_address_pairs": [{"ip_address": "10.0.0.50"}],
         "extra_dhcp_opts": [{"opt_name": "tftp-server", "opt_value": "10.0.0.9"}]},
        {"network_id": net["id"], "port_security_enabled": False,
         "allowed_address_pairs": [{"ip_address": "10.0.0.51"}]},
    ]})
    expect_error(resp, 409, "AddressPairAndPortSecurityRequired")
    assert _ports_of(user, net["id"]) == []


def test_pairs_on_a_shared_network_need_its_owner(admin, user, other):
    net = admin.network(shared=True)
    admin.subnet(net["id"], "10.0.0.0/24")
    pair = [{"ip_address": "10.0.0.50"}]
    expect_error(_post(other, net["id"], allowed_address_pairs=pair), 403,
                 "PolicyNotAuthorized", "create_port:allowed_address_pairs is disallowed by policy")
    port = other.port(net["id"])
    expect_error(_put(other, port["id"], allowed_address_pairs=pair), 403,
                 "PolicyNotAuthorized", "update_port:allowed_address_pairs is disallowed by policy")
    assert _put(admin, port["id"], allowed_address_pairs=pair).status_code == 200
    assert other.show("ports", port["id"])[PAIRS][0]["ip_address"] == "10.0.0.50"
    # the network's owner may
    owned = user.port(net["id"], allowed_address_pairs=pair)
    assert owned[PAIRS][0]["ip_address"] == "10.0.0.50"


def test_pairs_and_options_are_not_filters(user):
    for name in (PAIRS, OPTS):
        expect_error(user.get("/v2.0/ports", params={name: "x"}), 400, "HTTPBadRequest")


# --- extra DHCP options ------------------------------------------------------------------


def _opts(port) -> list[tuple]:
    return [(o["opt_name"], o["opt_value"], o["ip_version"]) for o in port[OPTS]]


def test_dhcp_options_on_create(user, net):
    port = user.port(net["id"], extra_dhcp_opts=[
        {"opt_name": "bootfile-name", "opt_value": "pxelinux.0"},
        {"opt_name": "tftp-server", "opt_value": "2001:db8::9", "ip_version": "6"},
        {"opt_name": "router", "opt_value": ""},  # may be blank
        {"opt_name": "classless-static-route", "opt_value": None},  # no value: not kept
        {"opt_name": "server-ip-address", "opt_value": None},
        {"opt_name": "TFTP-server", "opt_value": "10.0.0.9", "ip_version": 4},
    ])
    expected = [("bootfile-name", "pxelinux.0", 4), ("tftp-server", "2001:db8::9", 6),
                ("router", "", 4), ("TFTP-server", "10.0.0.9", 4)]
    assert _opts(port) == expected
    assert _opts(user.show("ports", port["id"])) == expected
    assert user.port(net["id"], extra_dhcp_opts=None)[OPTS] == []


def test_dhcp_options_update_merges(user, net):
    port = user.port(net["id"], extra_dhcp_opts=[
        {"opt_name": "a", "opt_value": "1"}, {"opt_name": "b", "opt_value": "2"},
        {"opt_name": "a", "opt_value": "3", "ip_version": 6}])
    resp = _put(user, port["id"], extra_dhcp_opts=[
        {"opt_name": "a", "opt_value": "9"},  # replaced
        {"opt_name": "b", "opt_value": None},  # removed
        {"opt_name": "c", "opt_value": "new", "ip_version": 6},  # added
        {"opt_name": "z", "opt_value": None},  # nothing to remove
    ])
    assert resp.status_code == 200, resp.text
    expected = [("a", "9", 4), ("a", "3", 6), ("c", "new", 6)]
    assert _opts(resp.json()["port"]) == expected
    for unchanged in ([], None):  # as Neutron: an empty list changes nothing
        assert _opts(_put(user, port["id"], extra_dhcp_opts=unchanged).json()["port"]) == (
            expected)
    assert _opts(_put(user, port["id"], name="x").json()["port"]) == expected
    assert _opts(user.show("ports", port["id"])) == expected


def test_two_values_for_one_option(user, net):
    twice = [{"opt_name": "a", "opt_value": "1"}, {"opt_name": "a", "opt_value": "2"}]
    error = expect_error(_post(user, net["id"], extra_dhcp_opts=twice), 409,
                         "NeutronDbObjectDuplicateEntry")
    assert error["message"].startswith("Failed to create a duplicate ExtraDhcpOpt: for "
                                       "attribute(s) ['port_id', 'opt_name', 'ip_version']")
    assert _ports_of(user, net["id"]) == []
    port = user.port(net["id"])
    expect_error(_put(user, port["id"], extra_dhcp_opts=twice), 409,
                 "NeutronDbObjectDuplicateEntry")
    assert user.show("ports", port["id"])[OPTS] == []
    # one for each IP version is two options
    both = [{"opt_name": "a", "opt_value": "1"},
            {"opt_name": "a", "opt_value": "2", "ip_version": 6}]
    assert len(_put(user, port["id"], extra_dhcp_opts=both).json()["port"][OPTS]) == 2


def _no_spec(item) -> str:
    return f"Invalid input for operation: No valid key specs matched for: {item}."


@pytest.mark.parametrize("opts, message", [
    ("tftp", "Invalid input for operation: 'tftp' is not a list."),
    ([{"opt_name": "a", "opt_value": "1"}, {"opt_name": "a", "opt_value": "1"}],
     "Invalid input for operation: Duplicate items in the list: "
     "'{'opt_name': 'a', 'opt_value': '1'}'."),
    (["tftp"], _no_spec("tftp")),
    ([{"opt_name": "a"}], _no_spec({"opt_name": "a"})),
    ([{"opt_value": "1"}], _no_spec({"opt_value": "1"})),
    ([{"opt_name": "a", "opt_value": "1", "extra": 1}],
     _no_spec({"opt_name": "a", "opt_value": "1", "extra": 1})),
    ([{"opt_name": "a", "opt_value": ""}], _no_spec({"opt_name": "a", "opt_value": ""})),
    ([{"opt_name": " ", "opt_value": "1"}], _no_spec({"opt_name": " ", "opt_value": "1"})),
    ([{"opt_name": "a" * 65, "opt_value": "1"}],
     _no_spec({"opt_name": "a" * 65, "opt_value": "1"})),
    ([{"opt_name": "a", "opt_value": "1" * 256}],
     _no_spec({"opt_name": "a", "opt_value": "1" * 256})),
    ([{"opt_name": "a\nb", "opt_value": "1"}], _no_spec({"opt_name": "a\nb", "opt_value": "1"})),
    ([{"opt_name": "a", "opt_value": "1\n2"}], _no_spec({"opt_name": "a", "opt_value": "1\n2"})),
    ([{"opt_name": "a", "opt_value": 1}], _no_spec({"opt_name": "a", "opt_value": 1})),
    ([{"opt_name": "a", "opt_value": "1", "ip_version": "5"}],
     _no_spec({"opt_name": "a", "opt_value": "1", "ip_version": 5})),
    ([{"opt_name": "a", "opt_value": "1", "ip_version": "six"}],
     "Invalid input for operation: 'six' is not an integer."),
])
def test_bad_dhcp_options(user, net, opts, message):
    expect_error(_post(user, net["id"], extra_dhcp_opts=opts), 400, "InvalidInput", message)
    port = user.port(net["id"])
    expect_error(_put(user, port["id"], extra_dhcp_opts=opts), 400, "InvalidInput", message)
    assert user.show("ports", port["id"])[OPTS] == []


def test_list_gives_each_port_its_own_extras(user, net):
    made = {}
    for n in range(6):
        port = user.port(net["id"], allowed_address_pairs=[
            {"ip_address": f"10.2.{n}.0/24"}] * (n % 2),
            extra_dhcp_opts=[{"opt_name": f"opt-{n}", "opt_value": str(n)}] if n % 3 else [])
        made[port["id"]] = port
    listed = _ports_of(user, net["id"])
    assert {p["id"]: (p[PAIRS], p[OPTS]) for p in listed} == {
        i: (p[PAIRS], p[OPTS]) for i, p in made.items()}
    page = user.get("/v2.0/ports", params={"network_id": net["id"], "fields": [OPTS, "id"]})
    assert all(set(p) == {"id", OPTS} for p in page.json()["ports"])


# --- DNS ---------------------------------------------------------------------------------

DOMAIN = "example.org."
LONG_PQDN = ".".join(["a" * 60] * 4)  # 243 characters: with ".example.org." over 255


def _dns_server(tmp, backend, dns_domain=None, driver="dns"):
    url, drop = create_database(backend, tmp)
    domain = f"dns_domain = {dns_domain}\n" if dns_domain else ""
    srv = start_server(tmp, url, auth="trusted_headers",
                       extra=f"{domain}[ml2]\nextension_drivers = port_security,{driver}\n")
    return srv, drop


@pytest.fixture(scope="module", params=BACKENDS)
def dns_server(request, tmp_path_factory):
    # dns_domain_ports: the dns driver and ports' own domains; the plain driver
    # serves default_domain_server below
    srv, drop = _dns_server(tmp_path_factory.mktemp(f"dns-{request.param}"), request.param,
                            DOMAIN, "dns_domain_ports")
    yield srv
    srv.stop()
    drop()


@pytest.fixture
def dns_user(dns_server, project):
    return dns_server.client(project, roles=("member",))


@pytest.fixture
def dns_net(dns_user):
    net = dns_user.network()
    dns_user.subnet(net["id"], "10.0.0.0/24")
    dns_user.subnet(net["id"], "2001:db8::/64", ipv6_address_mode="dhcpv6-stateful",
                    ipv6_ra_mode="dhcpv6-stateful")
    return net


def _assignment(port) -> list[tuple[str, str, str]]:
    return sorted((a["ip_address"], a["hostname"], a["fqdn"]) for a in port["dns_assignment"])


def _addresses(port) -> list[str]:
    return sorted(ip["ip_address"] for ip in port["fixed_ips"])


def _host(address: str) -> str:
    return "host-" + address.replace(".", "-").replace(":", "-")


def test_networks_get_a_dns_domain(dns_user):
    assert "dns-integration" in _aliases(dns_user)
    plain = dns_user.network()
    assert plain["dns_domain"] == ""
    net = dns_user.network(dns_domain="Lab.Example.ORG.")
    assert net["dns_domain"] == "lab.example.org."
    assert dns_user.show("networks", net["id"])["dns_domain"] == "lab.example.org."
    listed = dns_user.get("/v2.0/networks", params={"id": [net["id"], plain["id"]]})
    assert {n["id"]: n["dns_domain"] for n in listed.json()["networks"]} == {
        net["id"]: "lab.example.org.", plain["id"]: ""}
    path = f"/v2.0/networks/{net['id']}"
    assert dns_user.put(path, json={"network": {"dns_domain": "b.org."}}
                        ).json()["network"]["dns_domain"] == "b.org."
    assert dns_user.put(path, json={"network": {"dns_domain": ""}}
                        ).json()["network"]["dns_domain"] == ""
    assert dns_user.show("networks", net["id"])["dns_domain"] == ""


@pytest.mark.parametrize("domain, message", [
    ("example.org", "'example.org' is not a FQDN"),
    ("-x.org.", "'-x.org.' not a valid PQDN or FQDN. Reason: Name '-x' must not start or end "
                "with a hyphen"),
    ("a..org.", "'a..org.' not a valid PQDN or FQDN. Reason: Encountered an empty component"),
    ("a_b.org.", "'a_b.org.' not a valid PQDN or FQDN. Reason: Name 'a_b' must be 1-63 "
                 "characters long, each of which can only be alphanumeric or a hyphen"),
    ("example.123.", "'example.123.' not a valid PQDN or FQDN. Reason: TLD '123' must not be "
                     "all numeric"),
    ("a." * 127, f"'{'a.' * 127}' contains 254 characters. Adding a sub-domain will cause it "
                 "to exceed the maximum length of a FQDN of '255'"),
])
def test_bad_dns_domains(dns_user, domain, message):
    resp = dns_user.post("/v2.0/networks", json={"network": {"dns_domain": domain}})
    expect_error(resp, 400, "HTTPBadRequest",
                 f"Invalid input for dns_domain. Reason: {message}.")
    net = dns_user.network()
    resp = dns_user.put(f"/v2.0/networks/{net['id']}", json={"network": {"dns_domain": domain}})
    expect_error(resp, 400, "HTTPBadRequest",
                 f"Invalid input for dns_domain. Reason: {message}.")
    resp = dns_user.post("/v2.0/networks", json={"network": {"dns_domain": 5}})
    expect_error(resp, 400, "InvalidInput",
                 "Invalid input for operation: Input value 5 must be string type.")


def test_port_dns_name_and_assignment(dns_user, dns_net):
    named = dns_user.port(dns_net["id"], dns_name="Web-1")
    assert named["dns_name"] == "web-1"
    assert _assignment(named) == sorted(
        (a, "web-1", "web-1.example.org.") for a in _addresses(named))
    assert len(named["dns_assignment"]) == 2
    assert _assignment(dns_user.show("ports", named["id"])) == _assignment(named)

    plain = dns_user.port(dns_net["id"])
    assert plain["dns_name"] == ""
    assert _assignment(plain) == sorted(
        (a, _host(a), f"{_host(a)}.example.org.") for a in _addresses(plain))
    assert any("--" in host for _, host, _ in _assignment(plain))  # IPv6: "::" -> "--"

    longest = dns_user.port(dns_net["id"], dns_name=LONG_PQDN + ".example.org.")
    assert longest["dns_name"] == LONG_PQDN + ".example.org."  # 256 characters
    absolute = dns_user.port(dns_net["id"], dns_name="db.example.org.")
    assert {(h, f) for _, h, f in _assignment(absolute)} == {
        ("db.example.org.", "db.example.org.")}

    listed = {p["id"]: p for p in _ports_of(dns_user, dns_net["id"])}
    assert {i: _assignment(p) for i, p in listed.items()} == {
        p["id"]: _assignment(p) for p in (named, plain, longest, absolute)}


def test_port_dns_name_updates(dns_user, dns_net):
    port = dns_user.port(dns_net["id"])
    renamed = _put(dns_user, port["id"], dns_name="app").json()["port"]
    assert renamed["dns_name"] == "app"
    assert {h for _, h, _ in _assignment(renamed)} == {"app"}
    other = _put(dns_user, port["id"], name="still-app").json()["port"]
    assert other["dns_name"] == "app"
    # the assignment follows the addresses
    [v4] = [ip for ip in port["fixed_ips"] if ":" not in ip["ip_address"]]
    moved = _put(dns_user, port["id"], fixed_ips=[{"subnet_id": v4["subnet_id"],
                                                   "ip_address": "10.0.0.200"}]).json()["port"]
    assert _assignment(moved) == [("10.0.0.200", "app", "app.example.org.")]
    cleared = _put(dns_user, port["id"], dns_name="").json()["port"]
    assert cleared["dns_name"] == ""
    assert _assignment(cleared) == [("10.0.0.200", "host-10-0-0-200",
                                     "host-10-0-0-200.example.org.")]


@pytest.mark.parametrize("name, reason", [
    ("web_1", "'web_1' not a valid PQDN or FQDN. Reason: Name 'web_1' must be 1-63 characters "
              "long, each of which can only be alphanumeric or a hyphen"),
    ("web-", "'web-' not a valid PQDN or FQDN. Reason: Name 'web-' must not start or end with "
             "a hyphen"),
    ("a" * 64, f"'{'a' * 64}' not a valid PQDN or FQDN. Reason: Name '{'a' * 64}' must be "
               "1-63 characters long, each of which can only be alphanumeric or a hyphen"),
    ("web.123", "'web.123' not a valid PQDN or FQDN. Reason: TLD '123' must not be all numeric"),
    ("db.other.org.", "The dns_name passed is a FQDN. Its higher level labels must be equal to "
                      "the dns_domain option in neutron.conf, that has been set to "
                      "'example.org.'. It must also include one or more valid DNS labels to "
                      "the left of 'example.org.'"),
    ("example.org.", "The dns_name passed is a FQDN. Its higher level labels must be equal to "
                     "the dns_domain option in neutron.conf, that has been set to "
                     "'example.org.'. It must also include one or more valid DNS labels to "
                     "the left of 'example.org.'"),
    (LONG_PQDN, "The dns_name passed is a PQDN and its size is '243'. The dns_domain option "
                "in neutron.conf is set to example.org., with a length of '13'. When the two "
                "are concatenated to form a FQDN (with a '.' at the end), the resulting "
                "length exceeds the maximum size of '255'"),
])
def test_bad_dns_names(dns_user, dns_net, name, reason):
    message = f"Invalid input for dns_name. Reason: {reason}."
    expect_error(_post(dns_user, dns_net["id"], dns_name=name), 400, "HTTPBadRequest", message)
    assert _ports_of(dns_user, dns_net["id"]) == []
    port = dns_user.port(dns_net["id"], dns_name="kept")
    expect_error(_put(dns_user, port["id"], dns_name=name), 400, "HTTPBadRequest", message)
    assert dns_user.show("ports", port["id"])["dns_name"] == "kept"


def test_ports_keep_a_domain_of_their_own(dns_user, dns_net):
    """dns-domain-ports: the port's dns_domain is kept beside its name."""
    assert "dns-domain-ports" in _aliases(dns_user)
    port = dns_user.port(dns_net["id"], dns_name="web", dns_domain="Zone.Example.NET.")
    assert (port["dns_name"], port["dns_domain"]) == ("web", "zone.example.net.")
    path = f"/v2.0/ports/{port['id']}"
    resp = dns_user.put(path, json={"port": {"dns_name": "api"}})
    assert resp.json()["port"]["dns_domain"] == "zone.example.net."  # kept
    resp = dns_user.put(path, json={"port": {"dns_domain": ""}})
    assert (resp.json()["port"]["dns_name"], resp.json()["port"]["dns_domain"]) == ("api", "")
    assert dns_user.show("ports", port["id"])["dns_domain"] == ""
    plain = dns_user.port(dns_net["id"])
    assert plain["dns_domain"] == ""
    resp = dns_user.put(f"/v2.0/ports/{plain['id']}", json={"port": {"dns_domain": "bad_.x."}})
    assert resp.status_code == 400, resp.text


def test_dns_assignment_is_read_only(dns_user, dns_net):
    expect_error(_post(dns_user, dns_net["id"], dns_assignment=[]), 400, "HTTPBadRequest",
                 "Attribute 'dns_assignment' not allowed in POST")
    port = dns_user.port(dns_net["id"])
    expect_error(_put(dns_user, port["id"], dns_assignment=[]), 400, "HTTPBadRequest",
                 "Cannot update read-only attribute dns_assignment")
    expect_error(_post(dns_user, dns_net["id"], dns_name=5), 400, "InvalidInput",
                 "Invalid input for operation: Input value 5 must be string type.")


@pytest.fixture(scope="module")
def default_domain_server(tmp_path_factory):
    srv, drop = _dns_server(tmp_path_factory.mktemp("dns-default"), "sqlite")
    yield srv
    srv.stop()
    drop()


def test_default_domain_ignores_port_names(default_domain_server, project):
    """Neutron's rule: under ``openstacklocal`` a port's dns_name is not used, nor kept."""
    user = default_domain_server.client(project, roles=("member",))
    net = user.network()
    user.subnet(net["id"], "10.0.0.0/24")
    port = user.port(net["id"], dns_name="web")
    [address] = _addresses(port)
    assert port["dns_name"] == ""
    assert _assignment(port) == [(address, _host(address), f"{_host(address)}.openstacklocal.")]
    updated = _put(user, port["id"], dns_name="web").json()["port"]
    assert updated["dns_name"] == "" and _assignment(updated) == _assignment(port)
    # the form of a name is still checked, the domain is not
    expect_error(_put(user, port["id"], dns_name="web_1"), 400, "HTTPBadRequest")
    assert _put(user, port["id"], dns_name="a.b.c.").status_code == 200
