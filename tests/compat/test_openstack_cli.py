"""The ``openstack`` CLI (python-openstackclient) against a no-auth neutrino.

The scenario runs as one interactive session (``tests/compat/cli.py``) with
``OS_CLOUD`` and the documented clouds.yaml. The two other documented ways
(``OS_AUTH_TYPE``/``OS_ENDPOINT`` and the ``--os-auth-type``/``--os-endpoint``
options) run one command each, in parallel with the session.

Not covered because the CLI cannot do it without keystone: ``quota show``/
``quota set`` and ``--project`` (they look the project up in the identity
service, or read it from a keystone token).
"""

from __future__ import annotations

import ipaddress
import subprocess

import httpx
import pytest

from tests.compat.cli import OPENSTACK, cli_env, run_scenario

# (key, command); keys name outputs for the tests below. Names are unique in
# the fresh database of this module, so the CLI may find resources by name.
SCENARIO = [
    # networks
    ("net-create", "network create cli-net --description first --tag t1 -f json"),
    ("other-create", "network create cli-other -f json"),
    ("ext-create", "network create cli-ext --external --share --disable -f json"),
    ("net-set", "network set cli-net --name cli-net2 --description second --tag t2"),
    ("net-show", "network show cli-net2 -f json"),
    ("net-unset-tag", "network unset cli-net2 --tag t1"),
    ("list-tag-t2", "network list --tags t2 -f json"),
    ("list-not-tag-t2", "network list --not-tags t2 -f json"),
    ("list-external", "network list --external -f json"),
    ("list-long", "network list --long -f json"),
    ("net-tags-after-unset", "network show cli-net2 -f json -c tags"),
    ("net-no-tag", "network set cli-net2 --no-tag"),
    ("net-tags-cleared", "network show cli-net2 -f json -c tags"),
    ("ext-set", "network set cli-ext --internal --no-share --enable"),
    ("ext-show", "network show cli-ext -f json"),
    # subnets
    ("v4-create", "subnet create cli-v4 --network cli-net2 --subnet-range 10.10.0.0/24 "
                  "--gateway 10.10.0.1 --allocation-pool start=10.10.0.10,end=10.10.0.99 "
                  "--dns-nameserver 192.0.2.53 "
                  "--host-route destination=198.51.100.0/24,gateway=10.10.0.254 -f json"),
    ("v6-create", "subnet create cli-v6 --network cli-net2 --ip-version 6 "
                  "--subnet-range fd00:10::/64 --ipv6-ra-mode slaac "
                  "--ipv6-address-mode slaac -f json"),
    ("nogw-create", "subnet create cli-nogw --network cli-ext --subnet-range 10.11.0.0/24 "
                    "--gateway none --no-dhcp -f json"),
    ("subnet-list-net", "subnet list --network cli-net2 -f json"),
    ("subnet-list-v6", "subnet list --ip-version 6 -f json"),
    ("v4-set", "subnet set cli-v4 --name cli-v4b --dns-nameserver 192.0.2.54 --tag st"),
    ("v4-unset", "subnet unset cli-v4b --dns-nameserver 192.0.2.53 "
                 "--host-route destination=198.51.100.0/24,gateway=10.10.0.254"),
    ("v4-show", "subnet show cli-v4b -f json"),
    ("net-subnets", "network show cli-net2 -f json -c subnets"),
    # ports
    ("port-create", "port create cli-port --network cli-net2 "
                    "--fixed-ip subnet=cli-v4b,ip-address=10.10.0.20 "
                    "--mac-address fa:16:3e:aa:bb:cc --device-owner compute:nova "
                    "--device vm-1 -f json"),
    ("port-auto", "port create cli-port-auto --network cli-net2 -f json"),
    ("port-noip", "port create cli-port-noip --network cli-net2 --no-fixed-ip -f json"),
    ("port-list-net", "port list --network cli-net2 -f json"),
    ("port-list-ip", "port list --fixed-ip ip-address=10.10.0.20 -f json"),
    ("port-list-owner", "port list --device-owner compute:nova -f json"),
    ("port-set", "port set cli-port --name cli-port2 --description pd --tag pt "
                 "--fixed-ip subnet=cli-v4b,ip-address=10.10.0.21"),
    ("port-unset", "port unset cli-port2 --fixed-ip subnet=cli-v4b,ip-address=10.10.0.20"),
    ("port-show", "port show cli-port2 -f json"),
    ("port-set-subnet", "port set cli-port2 --fixed-ip subnet=cli-v4b"),
    ("port-show-subnet", "port show cli-port2 -f json"),
    ("port-in-use", "network delete cli-net2"),
    ("port-delete", "port delete cli-port2 cli-port-auto cli-port-noip"),
    ("port-list-empty", "port list --network cli-net2 -f json"),
    # subnet pools
    ("pool-create", "subnet pool create cli-pool --pool-prefix 10.200.0.0/16 "
                    "--default-prefix-length 24 --min-prefix-length 20 "
                    "--max-prefix-length 28 -f json"),
    ("pool6-create", "subnet pool create cli-pool6 --pool-prefix fd20::/48 "
                     "--default-prefix-length 64 --share -f json"),
    ("pool-set", "subnet pool set cli-pool --name cli-pool2 --description pd "
                 "--pool-prefix 10.201.0.0/16 --tag pl"),
    ("pool-show", "subnet pool show cli-pool2 -f json"),
    ("pool-list", "subnet pool list --long -f json"),
    ("pool-list-share", "subnet pool list --share -f json"),
    ("pool-subnet", "subnet create cli-from-pool --network cli-other --subnet-pool cli-pool2 "
                    "--prefix-length 26 -f json"),
    ("pool6-subnet", "subnet create cli-from-pool6 --network cli-other --ip-version 6 "
                     "--subnet-pool cli-pool6 -f json"),
    ("pool-in-use", "subnet pool delete cli-pool2"),
    # extensions and deletes
    ("extensions", "extension list --network -f json"),
    ("subnet-delete", "subnet delete cli-from-pool cli-from-pool6 cli-nogw"),
    ("pool-delete", "subnet pool delete cli-pool2 cli-pool6"),
    ("pool-list-empty", "subnet pool list -f json"),
    ("net-delete", "network delete cli-net2 cli-other cli-ext"),
    ("net-list-after", "network list -f json"),
    ("subnet-list-after", "subnet list -f json"),
    ("net-show-gone", "network show cli-net2"),
]


@pytest.fixture(scope="module")
def cli(noauth_server, clouds_yaml, tmp_path_factory):
    """Runs the scenario, and the two one-command variants alongside it."""
    home = tmp_path_factory.mktemp("home")
    seed = httpx.post(f"{noauth_server.url}/v2.0/networks",
                      json={"network": {"name": "cli-seed"}}).json()["network"]
    show = ["network", "show", seed["id"], "-f", "value", "-c", "name"]
    by_env = subprocess.Popen(
        [OPENSTACK, *show], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        cwd=home, env=cli_env(home, OS_AUTH_TYPE="none", OS_ENDPOINT=noauth_server.url))
    by_options = subprocess.Popen(
        [OPENSTACK, "--os-auth-type", "none", "--os-endpoint", noauth_server.url, *show],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=home,
        env=cli_env(home))
    result = run_scenario(SCENARIO, clouds_yaml, home)
    variants = {"env": by_env.communicate(timeout=60), "options": by_options.communicate(
        timeout=60)}
    result.variants = {k: (v[0], p.returncode) for (k, v), p in
                       zip(variants.items(), (by_env, by_options), strict=True)}
    result.seed = seed
    httpx.delete(f"{noauth_server.url}/v2.0/networks/{seed['id']}")
    return result


def test_env_and_option_settings(cli):
    for way, (out, code) in cli.variants.items():
        assert (out.strip(), code) == ("cli-seed", 0), way


def test_networks(cli):
    created = cli.json("net-create")
    assert (created["name"], created["description"], created["tags"]) == (
        "cli-net", "first", ["t1"])
    assert created["status"] == "ACTIVE" and created["admin_state_up"] is True
    ext = cli.json("ext-create")
    assert (ext["router:external"], ext["shared"], ext["admin_state_up"]) == (True, True, False)

    cli.quiet("net-set")
    shown = cli.json("net-show")
    assert (shown["id"], shown["name"], shown["description"]) == (
        created["id"], "cli-net2", "second")
    assert sorted(shown["tags"]) == ["t1", "t2"]
    assert shown["revision_number"] > created["revision_number"]

    assert cli.names("list-external") == ["cli-ext"]
    long_rows = {row["Name"]: row for row in cli.json("list-long")}
    assert long_rows["cli-ext"]["Shared"] is True and long_rows["cli-ext"]["State"] is False
    assert long_rows["cli-ext"]["Router Type"] is True

    cli.quiet("ext-set")
    ext = cli.json("ext-show")
    assert (ext["router:external"], ext["shared"], ext["admin_state_up"]) == (False, False, True)


def test_network_tags(cli):
    cli.quiet("net-unset-tag")
    assert cli.json("net-tags-after-unset")["tags"] == ["t2"]
    assert cli.names("list-tag-t2") == ["cli-net2"]
    assert "cli-net2" not in cli.names("list-not-tag-t2")
    assert {"cli-other", "cli-ext"} <= set(cli.names("list-not-tag-t2"))
    cli.quiet("net-no-tag")
    assert cli.json("net-tags-cleared")["tags"] == []


def test_subnets(cli):
    v4 = cli.json("v4-create")
    assert (v4["cidr"], v4["ip_version"], v4["gateway_ip"], v4["enable_dhcp"]) == (
        "10.10.0.0/24", 4, "10.10.0.1", True)
    assert v4["allocation_pools"] == [{"start": "10.10.0.10", "end": "10.10.0.99"}]
    assert v4["dns_nameservers"] == ["192.0.2.53"]
    assert v4["host_routes"] == [{"destination": "198.51.100.0/24", "nexthop": "10.10.0.254"}]

    v6 = cli.json("v6-create")
    # Neutron 29: an IPv6 subnet's default gateway is its subnet-router anycast address
    assert (v6["cidr"], v6["ip_version"], v6["gateway_ip"]) == ("fd00:10::/64", 6, "fd00:10::")
    assert (v6["ipv6_ra_mode"], v6["ipv6_address_mode"]) == ("slaac", "slaac")

    nogw = cli.json("nogw-create")
    assert (nogw["gateway_ip"], nogw["enable_dhcp"]) == (None, False)
    assert nogw["allocation_pools"] == [{"start": "10.11.0.1", "end": "10.11.0.254"}]

    assert cli.names("subnet-list-net") == ["cli-v4", "cli-v6"]
    assert cli.names("subnet-list-v6") == ["cli-v6"]
    assert set(cli.json("net-subnets")["subnets"]) == {v4["id"], v6["id"]}

    cli.quiet("v4-set")
    cli.quiet("v4-unset")
    shown = cli.json("v4-show")
    assert (shown["name"], shown["dns_nameservers"], shown["host_routes"], shown["tags"]) == (
        "cli-v4b", ["192.0.2.54"], [], ["st"])


def test_ports_with_fixed_ips(cli):
    v4, v6 = cli.json("v4-create")["id"], cli.json("v6-create")["id"]
    port = cli.json("port-create")
    assert (port["name"], port["mac_address"], port["device_owner"], port["device_id"]) == (
        "cli-port", "fa:16:3e:aa:bb:cc", "compute:nova", "vm-1")
    # the fixed v4 address, and the SLAAC (EUI-64) address every port gets
    assert sorted((f["subnet_id"], f["ip_address"]) for f in port["fixed_ips"]) == sorted(
        [(v4, "10.10.0.20"), (v6, "fd00:10::f816:3eff:feaa:bbcc")])

    auto = cli.json("port-auto")
    auto_v4 = [f["ip_address"] for f in auto["fixed_ips"] if f["subnet_id"] == v4]
    assert len(auto_v4) == 1
    assert ipaddress.ip_address("10.10.0.10") <= ipaddress.ip_address(auto_v4[0]) <= \
        ipaddress.ip_address("10.10.0.99")
    # --no-fixed-ip: no address from the v4 subnet (SLAAC ones are automatic)
    assert [f for f in cli.json("port-noip")["fixed_ips"] if f["subnet_id"] == v4] == []

    assert cli.names("port-list-net") == ["cli-port", "cli-port-auto", "cli-port-noip"]
    assert cli.names("port-list-ip") == ["cli-port"]
    assert cli.names("port-list-owner") == ["cli-port"]

    cli.quiet("port-set")  # --fixed-ip on set adds an address
    cli.quiet("port-unset")
    shown = cli.json("port-show")
    assert (shown["name"], shown["description"], shown["tags"]) == ("cli-port2", "pd", ["pt"])
    assert sorted(f["ip_address"] for f in shown["fixed_ips"]) == [
        "10.10.0.21", "fd00:10::f816:3eff:feaa:bbcc"]
    # --fixed-ip subnet=S on a port with an address on S gives it a second one, as Neutron
    cli.quiet("port-set-subnet")
    on_v4 = sorted(f["ip_address"] for f in cli.json("port-show-subnet")["fixed_ips"]
                   if f["subnet_id"] == v4)
    assert len(on_v4) == 2 and "10.10.0.21" in on_v4

    assert "ports still in use" in cli.text("port-in-use")
    cli.quiet("port-delete")
    assert cli.json("port-list-empty") == []


def test_subnet_pools(cli):
    pool = cli.json("pool-create")
    assert (pool["prefixes"], pool["ip_version"], pool["default_prefixlen"],
            pool["min_prefixlen"], pool["max_prefixlen"]) == (["10.200.0.0/16"], 4, 24, 20, 28)
    pool6 = cli.json("pool6-create")
    assert (pool6["ip_version"], pool6["shared"], pool6["min_prefixlen"]) == (6, True, 64)

    cli.quiet("pool-set")
    shown = cli.json("pool-show")
    assert (shown["name"], shown["description"], shown["tags"]) == ("cli-pool2", "pd", ["pl"])
    assert shown["prefixes"] == ["10.200.0.0/15"]  # merged, as Neutron does
    assert cli.names("pool-list") == ["cli-pool2", "cli-pool6"]
    assert cli.names("pool-list-share") == ["cli-pool6"]

    carved = cli.json("pool-subnet")
    assert carved["subnetpool_id"] == pool["id"]
    assert ipaddress.ip_network(carved["cidr"]).prefixlen == 26
    assert ipaddress.ip_network(carved["cidr"]).subnet_of(ipaddress.ip_network("10.200.0.0/15"))
    carved6 = cli.json("pool6-subnet")
    assert carved6["subnetpool_id"] == pool6["id"]
    assert ipaddress.ip_network(carved6["cidr"]).prefixlen == 64
    assert ipaddress.ip_network(carved6["cidr"]).subnet_of(ipaddress.ip_network("fd20::/48"))
    assert "existing allocations" in cli.text("pool-in-use")


def test_extensions(cli):
    aliases = {row["Alias"] for row in cli.json("extensions")}
    assert {"external-net", "standard-attr-tag", "quotas", "subnet_allocation"} <= aliases


def test_deletes(cli):
    cli.quiet("subnet-delete")
    cli.quiet("pool-delete")
    assert cli.json("pool-list-empty") == []
    cli.quiet("net-delete")
    assert cli.names("net-list-after") == ["cli-seed"]
    assert cli.json("subnet-list-after") == []
    assert "No Network found for cli-net2" in cli.text("net-show-gone")
