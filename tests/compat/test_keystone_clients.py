"""Real clients against neutrino with keystone authentication, as users run them.

openstacksdk and the ``openstack`` CLI read a clouds.yaml with one cloud per
keystone user (tests/keystone.py) and no ``network_endpoint_override``: they
authenticate to keystone and find neutrino in its catalog, where the server
fixture registers it as the ``network`` service.

Users: alice (member) and rita (reader) in alpha, bob (member) in beta,
carol (member) in gamma, admin.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import httpx
import openstack
import openstack.config
import pytest
from openstack import exceptions as sdk_exc

from tests.compat.cli import MARK, OPENSTACK, Session, cli_env
from tests.harness import Server, free_port, start_server
from tests.keystone import Keystone, clouds_yaml, keystone_fixture  # noqa: F401

pytestmark = pytest.mark.slow

EXT_CIDR = "172.24.50.0/24"


@pytest.fixture(scope="module")
def server(keystone: Keystone, tmp_path_factory) -> Server:
    tmp = tmp_path_factory.mktemp("keystone-clients")
    srv = start_server(tmp, f"sqlite:///{tmp}/neutrino.db", auth="keystone",
                       extra="service_plugins = router,octavia\n\n" +
                       keystone.authtoken_section(), octavia_port=free_port())
    keystone.register_network_endpoint(srv.url)
    keystone.register_endpoint("octavia", "load-balancer", srv.octavia_url)
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def clouds(server: Server, keystone: Keystone, tmp_path_factory) -> Path:
    """clouds.yaml: one cloud per user, the network endpoint from the catalog."""
    return clouds_yaml(tmp_path_factory.mktemp("clouds") / "clouds.yaml", keystone)


@pytest.fixture(scope="module")
def external(server: Server, keystone: Keystone) -> dict:
    """The admin's external network ``public`` and its subnet (plain HTTP)."""
    headers = {"X-Auth-Token": keystone.token("admin")[0]}
    with httpx.Client(base_url=server.url, headers=headers, timeout=30) as http:
        resp = http.post("/v2.0/networks", json={"network": {
            "name": "public", "router:external": True}})
        assert resp.status_code == 201, resp.text
        net = resp.json()["network"]
        resp = http.post("/v2.0/subnets", json={"subnet": {
            "name": "public-sub", "network_id": net["id"], "ip_version": 4,
            "cidr": EXT_CIDR}})
        assert resp.status_code == 201, resp.text
    return net


# -- openstacksdk ---------------------------------------------------------------


@pytest.fixture(scope="module")
def connect(clouds: Path):
    config = openstack.config.OpenStackConfig(
        config_files=[str(clouds)], vendor_files=[], secure_files=[], load_envvars=False)
    made: dict[str, openstack.connection.Connection] = {}

    def connection(user: str) -> openstack.connection.Connection:
        if user not in made:
            made[user] = openstack.connection.Connection(config=config.get_one(cloud=user))
        return made[user]

    yield connection
    for conn in made.values():
        conn.close()


LISTS = {
    "network": "networks", "subnet": "subnets", "port": "ports", "router": "routers",
    "floating_ip": "ips", "security_group": "security_groups",
    "security_group_rule": "security_group_rules",
}


def listed(conn, **query) -> dict[str, dict[str, object]]:
    """Every collection of LISTS as ``conn`` lists it: kind -> {id: resource}."""
    return {kind: {item.id: item for item in getattr(conn.network, method)(**query)}
            for kind, method in LISTS.items()}


@pytest.fixture(scope="module")
def alices(connect, external, server, keystone) -> dict[str, object]:
    """What alice makes with openstacksdk, by kind."""
    conn = connect("alice")
    net = conn.network.create_network(name="sdk-alpha-net")
    subnet = conn.network.create_subnet(network_id=net.id, ip_version=4,
                                        cidr="10.60.0.0/24", name="sdk-alpha-sub")
    port = conn.network.create_port(network_id=net.id, name="sdk-alpha-port")
    router = conn.network.create_router(
        name="sdk-alpha-router", external_gateway_info={"network_id": external["id"]})
    conn.network.add_interface_to_router(router, subnet_id=subnet.id)
    fip = conn.network.create_ip(floating_network_id=external["id"], port_id=port.id)
    group = conn.network.create_security_group(name="sdk-alpha-sg")
    rule = conn.network.create_security_group_rule(
        security_group_id=group.id, direction="ingress", ethertype="IPv4",
        protocol="tcp", port_range_min=22, port_range_max=22,
        remote_ip_prefix="0.0.0.0/0")
    return {"network": net, "subnet": subnet, "port": port, "router": router,
            "floating_ip": fip, "security_group": group, "security_group_rule": rule}


def test_sdk_finds_neutrino_in_the_catalog(connect, server, keystone):
    conn = connect("alice")
    assert conn.network.get_endpoint().rstrip("/") == f"{server.url}/v2.0"
    assert conn.current_project_id == keystone.project_ids["alpha"]


def test_sdk_alice_makes_and_sees_her_resources(connect, alices, external, keystone):
    alpha = keystone.project_ids["alpha"]
    router = connect("alice").network.get_router(alices["router"].id)
    assert router.external_gateway_info["network_id"] == external["id"]
    fip = alices["floating_ip"]
    assert fip.floating_network_id == external["id"] and fip.port_id == alices["port"].id
    assert fip.fixed_ip_address == alices["port"].fixed_ips[0]["ip_address"]
    seen = listed(connect("alice"))
    for kind, item in alices.items():
        assert item.id in seen[kind], kind
        assert seen[kind][item.id].project_id == alpha, kind
    assert external["id"] in seen["network"]


def test_sdk_bob_sees_none_of_alices(connect, alices, external):
    seen = listed(connect("bob"))
    for kind, item in alices.items():
        assert item.id not in seen[kind], kind
    assert external["id"] in seen["network"]
    with pytest.raises(sdk_exc.NotFoundException):
        connect("bob").network.get_network(alices["network"].id)


def test_sdk_rita_reads_but_may_not_write(connect, alices, keystone):
    rita = connect("rita")
    seen = listed(rita)
    for kind, item in alices.items():
        assert item.id in seen[kind], kind
        assert seen[kind][item.id].project_id == keystone.project_ids["alpha"], kind
    with pytest.raises(sdk_exc.ForbiddenException) as raised:
        rita.network.create_network(name="rita-net")
    assert raised.value.status_code == 403
    with pytest.raises(sdk_exc.HttpException) as raised:
        rita.network.update_network(alices["network"].id, name="rita's")
    assert raised.value.status_code == 403


def test_sdk_admin_lists_alpha_with_a_project_filter(connect, alices, keystone):
    alpha = keystone.project_ids["alpha"]
    seen = listed(connect("admin"), project_id=alpha)
    for kind, item in alices.items():
        assert item.id in seen[kind], kind
    for kind, items in seen.items():
        assert {item.project_id for item in items.values()} == {alpha}, kind


def test_sdk_load_balancers_by_keystone_roles(connect):
    """The load-balancer API found in the catalog; Octavia's policy on keystone's
    roles: alice (member) makes, rita (reader) reads, bob (another project)
    sees none, the admin offers a flavor."""
    alice, rita, bob, admin = (connect(u) for u in ("alice", "rita", "bob", "admin"))
    net = alice.network.create_network(name="lb-net")
    subnet = alice.network.create_subnet(network_id=net.id, cidr="10.93.0.0/24", ip_version=4)
    profile = admin.load_balancer.create_flavor_profile(
        name="ks-fp", provider_name="noop", flavor_data="{}")
    flavor = admin.load_balancer.create_flavor(name="ks-small", flavor_profile_id=profile.id)
    lb = None
    try:
        with pytest.raises(sdk_exc.ForbiddenException):
            alice.load_balancer.create_flavor(name="mine", flavor_profile_id=profile.id)
        assert [f.name for f in alice.load_balancer.flavors()] == ["ks-small"]
        lb = alice.load_balancer.create_load_balancer(name="ks-lb", vip_subnet_id=subnet.id,
                                                      flavor_id=flavor.id)
        lb = alice.load_balancer.wait_for_load_balancer(lb.id, wait=30)
        assert lb.project_id == alice.current_project_id
        assert [x.id for x in rita.load_balancer.load_balancers()] == [lb.id]
        with pytest.raises(sdk_exc.ForbiddenException):
            rita.load_balancer.update_load_balancer(lb, description="no")
        assert list(bob.load_balancer.load_balancers()) == []
    finally:
        if lb is not None:
            alice.load_balancer.delete_load_balancer(lb)
        admin.load_balancer.delete_flavor(flavor)
        admin.load_balancer.delete_flavor_profile(profile)


def test_sdk_rbac_shares_a_network_with_beta(connect, keystone, server):
    alice, bob, carol = connect("alice"), connect("bob"), connect("carol")
    net = alice.network.create_network(name="sdk-for-beta")
    beta = keystone.project_ids["beta"]
    policy = alice.network.create_rbac_policy(
        object_type="network", object_id=net.id, action="access_as_shared",
        target_project_id=beta)
    assert (policy.target_project_id, policy.project_id) == (
        beta, keystone.project_ids["alpha"])
    assert policy.id in {p.id for p in alice.network.rbac_policies()}
    assert net.id in {n.id for n in bob.network.networks()}
    assert bob.network.get_network(net.id).is_shared is True
    assert net.id not in {n.id for n in carol.network.networks()}
    assert policy.id not in {p.id for p in bob.network.rbac_policies()}


# -- the openstack CLI ----------------------------------------------------------


def run_as(user: str, scenario: list[tuple[str, str]], clouds: Path, home: Path
           ) -> subprocess.Popen:
    """Start one interactive ``openstack`` session as ``user`` over the scenario
    (tests/compat/cli.py's way); ``collect`` reads its outputs. The cloud comes
    from ``OS_CLOUD``: ``openstack --os-cloud <user>`` would select it too, but
    cmd2 then also runs the words of its command line as commands."""
    script = "".join(f"{command}\n!echo {MARK}\n" for _, command in scenario)
    proc = subprocess.Popen(
        [OPENSTACK], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True, cwd=home,
        env=cli_env(home, OS_CLIENT_CONFIG_FILE=str(clouds), OS_CLOUD=user))
    proc.stdin.write(script)
    proc.stdin.close()
    proc.scenario = scenario
    return proc


def collect(proc: subprocess.Popen) -> Session:
    out = proc.stdout.read()
    proc.wait(timeout=180)
    chunks = out.split(MARK + "\n")
    assert len(chunks) == len(proc.scenario) + 1, out
    return Session({key: chunk for (key, _), chunk in zip(proc.scenario, chunks,
                                                          strict=False)})


def alice_first(beta_id: str) -> list[tuple[str, str]]:
    return [
        ("private", "network create cli-alpha-private -f json"),
        ("shared", "network create cli-alpha-shared -f json"),
        ("by-name", "network create cli-alpha-by-name -f json"),
        # a member may not look projects up in keystone: the CLI then sends the name
        ("rbac-name", "network rbac create --target-project beta --action access_as_shared "
                      "--type network cli-alpha-by-name -f json"),
        ("rbac", f"network rbac create --target-project {beta_id} "
                 "--action access_as_shared --type network cli-alpha-shared -f json"),
        ("rbac-list", "network rbac list -f json"),
        ("sg", "security group create cli-alpha-sg -f json"),
        ("rbac-sg", f"network rbac create --target-project {beta_id} "
                    "--action access_as_shared --type security_group cli-alpha-sg -f json"),
    ]


BOB = [
    ("net", "network create cli-beta-net -f json"),
    ("subnet", "subnet create cli-beta-sub --network cli-beta-net "
               "--subnet-range 10.61.0.0/24 -f json"),
    ("port", "port create cli-beta-port --network cli-beta-net -f json"),
    ("router", "router create cli-beta-router -f json"),
    ("add-subnet", "router add subnet cli-beta-router cli-beta-sub"),
    ("gateway", "router set cli-beta-router --external-gateway public"),
    ("router-show", "router show cli-beta-router -f json"),
    ("fip", "floating ip create public --port cli-beta-port -f json"),
    ("sg", "security group create cli-beta-sg -f json"),
    ("rule", "security group rule create cli-beta-sg --protocol tcp --dst-port 22 "
             "--remote-ip 0.0.0.0/0 -f json"),
    ("networks", "network list -f json"),
    ("rbac-list", "network rbac list -f json"),
    ("alphas-sg", "security group show cli-alpha-sg -f json"),
    # python-octaviaclient finds the load-balancer API in the catalog too
    ("lb", "loadbalancer create --name cli-beta-lb --vip-subnet-id cli-beta-sub -f json"),
    ("lbs", "loadbalancer list -f json"),
    ("lb-delete", "loadbalancer delete cli-beta-lb"),
]
ALICE_LAST = [("networks", "network list -f json")]
ADMIN = [
    ("quota", "quota show beta -f json"),
    ("quota-usage", "quota show --network --usage beta -f json"),
    ("alpha-networks", "network list --project alpha -f json"),
    # the admin may look projects up: the CLI sends gamma's id
    ("rbac-gamma", "network rbac create --target-project gamma --action access_as_shared "
                   "--type network cli-alpha-private -f json"),
]


@pytest.fixture(scope="module")
def cli(clouds, external, keystone, tmp_path_factory) -> dict[str, Session]:
    """alice shares networks with beta, then bob builds and looks; then alice
    looks while the admin looks at beta's quota and alpha's networks."""
    home = tmp_path_factory.mktemp("home")
    sessions = {"alice-first": collect(run_as(
        "alice", alice_first(keystone.project_ids["beta"]), clouds, home))}
    sessions["bob"] = collect(run_as("bob", BOB, clouds, home))
    admin = run_as("admin", ADMIN, clouds, home)
    sessions["alice-last"] = collect(run_as("alice", ALICE_LAST, clouds, home))
    sessions["admin"] = collect(admin)
    return sessions


def test_cli_bob_builds_a_project_network(cli, external, keystone):
    bob = cli["bob"]
    beta = keystone.project_ids["beta"]
    net, subnet, port = bob.json("net"), bob.json("subnet"), bob.json("port")
    for item in (net, subnet, port, bob.json("router"), bob.json("fip"), bob.json("sg"),
                 bob.json("rule")):
        assert item["project_id"] == beta, item
    assert subnet["network_id"] == net["id"] and port["network_id"] == net["id"]
    bob.quiet("add-subnet")
    bob.quiet("gateway")
    router = bob.json("router-show")
    assert router["external_gateway_info"]["network_id"] == external["id"]
    assert [i["subnet_id"] for i in router["interfaces_info"]] == [subnet["id"]]
    fip = bob.json("fip")
    assert fip["floating_network_id"] == external["id"] and fip["port_id"] == port["id"]
    rule = bob.json("rule")
    assert rule["security_group_id"] == bob.json("sg")["id"]
    assert (rule["protocol"], rule["port_range_min"], rule["port_range_max"]) == (
        "tcp", 22, 22)
    lb = bob.json("lb")
    assert (lb["project_id"], lb["vip_subnet_id"]) == (beta, subnet["id"])
    assert [row["name"] for row in bob.json("lbs")] == ["cli-beta-lb"]
    bob.quiet("lb-delete")


def test_cli_who_sees_which_network(cli):
    bob = {name for name in cli["bob"].names("networks") if not name.startswith("sdk-")}
    alice = set(cli["alice-last"].names("networks"))
    # bob: his own, the external one and the one alice shared with beta's id
    assert bob == {"cli-beta-net", "public", "cli-alpha-shared"}
    # alice: hers and the external one, not bob's
    assert {"cli-alpha-private", "cli-alpha-shared", "cli-alpha-by-name", "public"} <= alice
    assert "cli-beta-net" not in alice


def test_cli_rbac_policies(cli, keystone):
    alice = cli["alice-first"]
    shared, policy = alice.json("shared"), alice.json("rbac")
    assert policy["target_project_id"] == keystone.project_ids["beta"]
    assert policy["object_id"] == shared["id"]
    assert policy["project_id"] == keystone.project_ids["alpha"]
    assert (policy["object_type"], policy["action"]) == ("network", "access_as_shared")
    # keystone refuses a member's project lookup (403): the CLI sends the name
    # as it is, and the server keeps it as Neutron does (it shares with nobody)
    by_name = alice.json("rbac-name")
    assert by_name["target_project_id"] == "beta"
    mine = {alice.json(key)["id"] for key in ("private", "shared", "by-name")}
    assert {p["ID"] for p in alice.json("rbac-list") if p["Object ID"] in mine} == {
        policy["id"], by_name["id"]}
    # bob, the target, does not see alice's policies
    assert cli["bob"].json("rbac-list") == []
    # a security group shared with beta: bob finds it by name
    group, entry = alice.json("sg"), alice.json("rbac-sg")
    assert (entry["object_type"], entry["object_id"]) == ("security_group", group["id"])
    assert cli["bob"].json("alphas-sg")["id"] == group["id"]
    # the admin's CLI resolves gamma through keystone
    gamma = cli["admin"].json("rbac-gamma")
    assert gamma["target_project_id"] == keystone.project_ids["gamma"]
    # the policy is the requester's, as in Neutron (no --project given)
    assert gamma["project_id"] == keystone.project_ids["admin"]


def test_cli_admin_shows_betas_quota(cli):
    admin = cli["admin"]
    limits = {row["Resource"]: row["Limit"] for row in admin.json("quota")}
    for name in ("networks", "subnets", "ports", "routers", "floating_ips",
                 "security_groups", "security_group_rules"):
        assert isinstance(limits[name], int), (name, limits)
    usage = {row["Resource"]: row for row in admin.json("quota-usage")}
    # bob's port and his router's interface; his group and beta's default one,
    # with their 4 + 2 default rules and his own
    assert {name: usage[name]["In Use"] for name in (
        "networks", "subnets", "ports", "routers", "floating_ips", "security_groups",
        "security_group_rules")} == {
        "networks": 1, "subnets": 1, "ports": 2, "routers": 1, "floating_ips": 1,
        "security_groups": 2, "security_group_rules": 7}
    assert usage["networks"]["Limit"] == limits["networks"]
    alpha = [name for name in admin.names("alpha-networks") if name.startswith("cli-")]
    assert alpha == ["cli-alpha-by-name", "cli-alpha-private", "cli-alpha-shared"]
