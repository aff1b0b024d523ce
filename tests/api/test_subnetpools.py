"""Subnet pools over HTTP: defaults, validation, updates, carving subnets, quotas, sharing."""

import ipaddress

from tests.harness import expect_error

POOL_KEYS = {
    "id", "name", "tenant_id", "project_id", "prefixes", "ip_version", "default_prefixlen",
    "min_prefixlen", "max_prefixlen", "default_quota", "shared", "is_default",
    "address_scope_id", "description", "tags", "created_at", "updated_at", "revision_number",
}


def _post_pool(client, **attrs):
    return client.post("/v2.0/subnetpools", json={"subnetpool": attrs})


def _pool(client, prefixes, name="pool", **attrs):
    resp = _post_pool(client, name=name, prefixes=prefixes, **attrs)
    assert resp.status_code == 201, resp.text
    return resp.json()["subnetpool"]


def _put_pool(client, pool_id, **attrs):
    return client.put(f"/v2.0/subnetpools/{pool_id}", json={"subnetpool": attrs})


def _post_subnet(client, network_id, ip_version=4, **attrs):
    return client.post("/v2.0/subnets", json={"subnet": {
        "network_id": network_id, "ip_version": ip_version, **attrs}})


def _subnet(client, network_id, ip_version=4, **attrs):
    resp = _post_subnet(client, network_id, ip_version, **attrs)
    assert resp.status_code == 201, resp.text
    return resp.json()["subnet"]


def _bounds_error(resp, text: str) -> None:
    expect_error(resp, 400, "IllegalSubnetPoolPrefixBounds", f"Illegal prefix bounds: {text}.")


# --- create ------------------------------------------------------------------------------


def test_ipv4_defaults(user):
    pool = _pool(user, ["10.10.0.0/16"], name="v4")
    assert set(pool) == POOL_KEYS
    assert pool["ip_version"] == 4
    assert pool["prefixes"] == ["10.10.0.0/16"]
    # Neutron shows the prefix lengths as strings
    assert (pool["min_prefixlen"], pool["max_prefixlen"], pool["default_prefixlen"]) == (
        "8", "32", "8")
    assert pool["default_quota"] is None and pool["address_scope_id"] is None
    assert pool["shared"] is False and pool["is_default"] is False
    assert pool["project_id"] == pool["tenant_id"] == user.project_id
    assert pool["description"] == "" and pool["tags"] == []
    assert pool["revision_number"] == 0
    assert user.show("subnetpools", pool["id"]) == pool


def test_ipv6_defaults(user):
    pool = _pool(user, ["2001:db8::/48"])
    assert pool["ip_version"] == 6
    assert (pool["min_prefixlen"], pool["max_prefixlen"], pool["default_prefixlen"]) == (
        "64", "128", "64")


def test_explicit_bounds_and_default_prefixlen(user):
    pool = _pool(user, ["10.0.0.0/16"], min_prefixlen=20, max_prefixlen=28)
    assert (pool["min_prefixlen"], pool["max_prefixlen"], pool["default_prefixlen"]) == (
        "20", "28", "20")
    pool = _pool(user, ["10.0.0.0/16"], min_prefixlen="20", max_prefixlen=28,
                 default_prefixlen=24, default_quota=1024, description="d")
    assert (pool["min_prefixlen"], pool["default_prefixlen"], pool["default_quota"]) == (
        "20", "24", 1024)
    assert pool["description"] == "d"


def test_prefixes_are_merged_and_normalised(user):
    pool = _pool(user, ["10.0.1.0/24", "10.0.0.0/24", "10.0.0.128/25", "10.9.0.7/16"])
    assert pool["prefixes"] == ["10.0.0.0/23", "10.9.0.0/16"]
    assert user.show("subnetpools", pool["id"])["prefixes"] == pool["prefixes"]
    pool = _pool(user, ["2001:db8:0:1::/64", "2001:db8::/64"])
    assert pool["prefixes"] == ["2001:db8::/63"]


def test_name_and_prefixes_required(user):
    resp = _post_pool(user, name="", prefixes=["10.0.0.0/8"])
    expect_error(resp, 400, "HTTPBadRequest",
           "Invalid input for name. Reason: '' Blank strings are not permitted.")
    resp = _post_pool(user, prefixes=["10.0.0.0/8"])
    expect_error(resp, 400, "HTTPBadRequest",
           "Failed to parse request. Required attribute 'name' not specified")
    resp = _post_pool(user, name="p")
    expect_error(resp, 400, "HTTPBadRequest",
           "Failed to parse request. Required attribute 'prefixes' not specified")
    resp = _post_pool(user, name="p", prefixes=[])
    expect_error(resp, 400, "EmptySubnetPoolPrefixList", "Empty subnet pool prefix list.")
    resp = _post_pool(user, name="p", prefixes=["10.0.0.0/33"])
    expect_error(resp, 400, "HTTPBadRequest",
           "Invalid input for prefixes. Reason: '10.0.0.0/33' is not a valid IP subnet.")
    resp = _post_pool(user, name="p", prefixes=["10.0.0.0/8", "10.0.0.0/8"])
    expect_error(resp, 400, "HTTPBadRequest",
           "Invalid input for prefixes. Reason: Duplicate items in the list: '10.0.0.0/8'.")


def test_mixed_versions(user):
    resp = _post_pool(user, name="p", prefixes=["10.0.0.0/8", "2001:db8::/32"])
    expect_error(resp, 400, "PrefixVersionMismatch",
           "Cannot mix IPv4 and IPv6 prefixes in a subnet pool.")


def test_bounds_errors(user):
    _bounds_error(_post_pool(user, name="p", prefixes=["10.0.0.0/8"], min_prefixlen=30,
                             max_prefixlen=24), "min_prefixlen=30, max_prefixlen=24")
    _bounds_error(_post_pool(user, name="p", prefixes=["10.0.0.0/8"], max_prefixlen=33),
                  "max_prefixlen=33, ip_version_max=32")
    _bounds_error(_post_pool(user, name="p", prefixes=["2001:db8::/32"], max_prefixlen=129),
                  "max_prefixlen=129, ip_version_max=128")
    _bounds_error(_post_pool(user, name="p", prefixes=["10.0.0.0/8"], default_prefixlen=4),
                  "default_prefixlen=4, min_prefixlen=8")
    _bounds_error(_post_pool(user, name="p", prefixes=["10.0.0.0/8"], default_prefixlen=30,
                             max_prefixlen=28), "default_prefixlen=30, max_prefixlen=28")
    resp = _post_pool(user, name="p", prefixes=["10.0.0.0/8"], min_prefixlen=-1)
    expect_error(resp, 400, "HTTPBadRequest",
           "Invalid input for min_prefixlen. Reason: '-1' should be non-negative.")
    resp = _post_pool(user, name="p", prefixes=["10.0.0.0/8"], default_quota=-5)
    expect_error(resp, 400, "HTTPBadRequest",
           "Invalid input for default_quota. Reason: '-5' should be non-negative.")


def test_non_admin_cannot_share_or_make_default(user):
    resp = _post_pool(user, name="p", prefixes=["10.0.0.0/8"], shared=True)
    expect_error(resp, 403, "PolicyNotAuthorized",
                 "create_subnetpool:shared is disallowed by policy")
    resp = _post_pool(user, name="p", prefixes=["10.0.0.0/8"], is_default=True)
    expect_error(resp, 403, "PolicyNotAuthorized",
           "create_subnetpool:is_default is disallowed by policy")
    pool = _pool(user, ["10.0.0.0/8"])
    expect_error(_put_pool(user, pool["id"], is_default=True), 403, "PolicyNotAuthorized",
           "update_subnetpool:is_default is disallowed by policy")


# --- update -------------------------------------------------------------------------------


def test_update_prefixes_must_grow(user):
    pool = _pool(user, ["10.0.0.0/24"], min_prefixlen=24)
    resp = _put_pool(user, pool["id"], prefixes=["10.0.0.0/23"], name="grown")
    assert resp.status_code == 200, resp.text
    updated = resp.json()["subnetpool"]
    assert updated["prefixes"] == ["10.0.0.0/23"] and updated["name"] == "grown"
    assert updated["revision_number"] == pool["revision_number"] + 1
    updated = _put_pool(user, pool["id"], prefixes=["10.0.0.0/23", "10.7.0.0/24"]).json()[
        "subnetpool"]
    assert updated["prefixes"] == ["10.0.0.0/23", "10.7.0.0/24"]
    for shrunk in (["10.0.0.0/24"], ["10.0.0.0/23"], ["10.8.0.0/16"]):
        expect_error(_put_pool(user, pool["id"], prefixes=shrunk), 400,
               "IllegalSubnetPoolPrefixUpdate",
               "Illegal update to prefixes: Existing prefixes must be a subset of the new "
               "prefixes.")
    expect_error(_put_pool(user, pool["id"], prefixes=["2001:db8::/32"]), 400,
           "PrefixVersionMismatch")
    shown = user.show("subnetpools", pool["id"])
    assert shown["prefixes"] == ["10.0.0.0/23", "10.7.0.0/24"]
    assert shown["revision_number"] == pool["revision_number"] + 2


def test_update_bounds_and_read_only(user):
    pool = _pool(user, ["10.0.0.0/16"], min_prefixlen=16, max_prefixlen=28)
    updated = _put_pool(user, pool["id"], default_prefixlen=24,
                        default_quota=4096).json()["subnetpool"]
    # an update's answer has them as integers, as Neutron's (built another way)
    assert (updated["default_prefixlen"], updated["min_prefixlen"], updated["max_prefixlen"],
            updated["default_quota"]) == (24, 16, 28, 4096)
    _bounds_error(_put_pool(user, pool["id"], min_prefixlen=30),
                  "min_prefixlen=30, max_prefixlen=28")
    _bounds_error(_put_pool(user, pool["id"], max_prefixlen=20),
                  "default_prefixlen=24, max_prefixlen=20")
    for attr, value in (("ip_version", 6), ("shared", True)):
        expect_error(_put_pool(user, pool["id"], **{attr: value}), 400, "HTTPBadRequest",
               f"Cannot update read-only attribute {attr}")
    shown = user.show("subnetpools", pool["id"])
    assert (shown["default_prefixlen"], shown["min_prefixlen"]) == ("24", "16")
    listed = user.get("/v2.0/subnetpools", params={"id": pool["id"]}).json()["subnetpools"]
    assert listed[0]["max_prefixlen"] == "28"


# --- subnets from pools -------------------------------------------------------------------


def test_subnet_with_prefixlen_and_default_prefixlen(user):
    pool = _pool(user, ["10.20.0.0/16"], min_prefixlen=20, max_prefixlen=28,
                 default_prefixlen=24)
    net = user.network()
    first = _subnet(user, net["id"], subnetpool_id=pool["id"])
    assert first["cidr"] == "10.20.0.0/24"
    assert first["subnetpool_id"] == pool["id"]
    assert first["gateway_ip"] == "10.20.0.1"
    assert first["allocation_pools"] == [{"start": "10.20.0.2", "end": "10.20.0.254"}]
    assert "prefixlen" not in first
    small = _subnet(user, net["id"], subnetpool_id=pool["id"], prefixlen=28)
    # the most specific free block is used first, so big blocks stay whole
    assert small["cidr"] == "10.20.1.0/28"
    assert _subnet(user, net["id"], subnetpool_id=pool["id"], prefixlen="28")[
        "cidr"] == "10.20.1.16/28"
    assert _subnet(user, net["id"], subnetpool_id=pool["id"], prefixlen=24)[
        "cidr"] == "10.20.2.0/24"
    no_gateway = _subnet(user, net["id"], subnetpool_id=pool["id"], gateway_ip=None)
    assert no_gateway["gateway_ip"] is None


def test_ipv6_subnet_from_pool(user):
    pool = _pool(user, ["2001:db8:100::/56"])
    net = user.network()
    subnet = _subnet(user, net["id"], 6, subnetpool_id=pool["id"], ipv6_address_mode="slaac",
                     ipv6_ra_mode="slaac")
    assert subnet["cidr"] == "2001:db8:100::/64"
    assert subnet["gateway_ip"] == "2001:db8:100::1"
    expect_error(_post_subnet(user, net["id"], 4, subnetpool_id=pool["id"]), 400, "BadRequest",
           "Bad subnets request: Cannot allocate IPv4 subnet from IPv6 subnet pool.")


def test_subnet_with_cidr_inside_and_outside_pool(user):
    pool = _pool(user, ["10.30.0.0/16"], min_prefixlen=16, max_prefixlen=28)
    net = user.network()
    inside = _subnet(user, net["id"], subnetpool_id=pool["id"], cidr="10.30.4.0/24")
    assert inside["cidr"] == "10.30.4.0/24" and inside["subnetpool_id"] == pool["id"]
    message = ("Failed to allocate subnet: Cannot allocate requested subnet from the "
               "available set of prefixes.")
    other_net = user.network()
    for cidr in ("10.31.0.0/24", "10.30.4.128/25", "10.30.0.0/16"):
        expect_error(_post_subnet(user, other_net["id"], subnetpool_id=pool["id"], cidr=cidr), 409,
               "SubnetAllocationError", message)
    expect_error(_post_subnet(user, net["id"], subnetpool_id=pool["id"], cidr="10.30.5.0/24",
                        prefixlen=24), 400, "BadRequest",
           "Bad subnets request: cidr and prefixlen must not be supplied together.")
    expect_error(_post_subnet(user, net["id"], subnetpool_id=pool["id"],
                        allocation_pools=[{"start": "10.30.5.2", "end": "10.30.5.9"}]), 400,
           # Neutron's own sentence ends with a full stop, so the message has two
           "BadRequest", "Bad subnets request: allocation_pools allowed only for specific "
                         "subnet requests..")
    expect_error(_post_subnet(user, net["id"]), 400, "BadRequest",
           "Bad subnets request: a subnetpool must be specified in the absence of a cidr.")


def test_gateway_without_cidr_picks_the_block_around_it(user):
    pool = _pool(user, ["10.35.0.0/16"], default_prefixlen=24, min_prefixlen=16)
    net = user.network()
    subnet = _subnet(user, net["id"], subnetpool_id=pool["id"], gateway_ip="10.35.7.254")
    assert subnet["cidr"] == "10.35.7.0/24" and subnet["gateway_ip"] == "10.35.7.254"
    assert subnet["allocation_pools"] == [{"start": "10.35.7.1", "end": "10.35.7.253"}]
    subnet = _subnet(user, net["id"], subnetpool_id=pool["id"], gateway_ip="10.35.8.1",
                     prefixlen=28)
    assert subnet["cidr"] == "10.35.8.0/28"
    expect_error(_post_subnet(user, net["id"], subnetpool_id=pool["id"], gateway_ip="10.36.0.1"),
           409, "SubnetAllocationError")
    resp = _post_subnet(user, net["id"], subnetpool_id=pool["id"], gateway_ip="2001:db8::1")
    expect_error(resp, 400, "InvalidInput", "Invalid input for operation: gateway_ip '2001:db8::1' "
                                      "does not match the ip_version '4'.")


def test_exhaustion(user):
    pool = _pool(user, ["10.40.0.0/24"], min_prefixlen=24, max_prefixlen=28,
                 default_prefixlen=26)
    net = user.network()
    cidrs = [_subnet(user, net["id"], subnetpool_id=pool["id"])["cidr"] for _ in range(4)]
    assert cidrs == ["10.40.0.0/26", "10.40.0.64/26", "10.40.0.128/26", "10.40.0.192/26"]
    expect_error(_post_subnet(user, net["id"], subnetpool_id=pool["id"]), 409,
           "SubnetAllocationError",
           "Failed to allocate subnet: Insufficient prefix space to allocate subnet size /26.")
    # growing the pool makes room
    _put_pool(user, pool["id"], prefixes=["10.40.0.0/24", "10.41.0.0/24"])
    assert _subnet(user, net["id"], subnetpool_id=pool["id"])["cidr"] == "10.41.0.0/26"


def test_prefixlen_outside_bounds(user):
    pool = _pool(user, ["10.50.0.0/16"], min_prefixlen=20, max_prefixlen=28)
    net = user.network()
    expect_error(_post_subnet(user, net["id"], subnetpool_id=pool["id"], prefixlen=29), 400,
           "MaxPrefixSubnetAllocationError",
           "Unable to allocate subnet with prefix length 29, maximum allowed prefix is 28.")
    expect_error(_post_subnet(user, net["id"], subnetpool_id=pool["id"], prefixlen=18), 400,
           "MinPrefixSubnetAllocationError",
           "Unable to allocate subnet with prefix length 18, minimum allowed prefix is 20.")
    expect_error(_post_subnet(user, net["id"], subnetpool_id=pool["id"], cidr="10.50.0.0/30"), 400,
           "MaxPrefixSubnetAllocationError")


def test_one_pool_per_network_and_version(user):
    first = _pool(user, ["10.60.0.0/16"], default_prefixlen=24)
    second = _pool(user, ["10.61.0.0/16"], default_prefixlen=24)
    net = user.network()
    _subnet(user, net["id"], subnetpool_id=first["id"])
    message = "Subnets hosted on the same network must be allocated from the same subnet pool."
    expect_error(_post_subnet(user, net["id"], subnetpool_id=second["id"]), 400,
           "NetworkSubnetPoolAffinityError", message)
    expect_error(_post_subnet(user, net["id"], cidr="10.99.0.0/24"), 400,
           "NetworkSubnetPoolAffinityError", message)
    # another IP version may come from elsewhere
    assert _subnet(user, net["id"], 6, cidr="2001:db8:60::/64")["subnetpool_id"] is None


def test_default_quota(user, other, admin):
    pool = _pool(admin, ["10.70.0.0/16"], shared=True, default_quota=512, min_prefixlen=24)
    mine, theirs = user.network(), other.network()
    _subnet(user, mine["id"], subnetpool_id=pool["id"], prefixlen=24)
    _subnet(user, mine["id"], subnetpool_id=pool["id"], prefixlen=24)
    expect_error(_post_subnet(user, mine["id"], subnetpool_id=pool["id"], prefixlen=28), 409,
           "SubnetPoolQuotaExceeded", "Per-project subnet pool prefix quota exceeded.")
    expect_error(_post_subnet(user, mine["id"], subnetpool_id=pool["id"], cidr="10.70.200.0/28"),
           409, "SubnetPoolQuotaExceeded")
    # the quota is per project
    assert _subnet(other, theirs["id"], subnetpool_id=pool["id"], prefixlen=24)


def test_delete(user):
    pool = _pool(user, ["10.80.0.0/16"], default_prefixlen=24)
    net = user.network()
    subnet = _subnet(user, net["id"], subnetpool_id=pool["id"])
    url = f"/v2.0/subnetpools/{pool['id']}"
    expect_error(user.delete(url), 400, "SubnetPoolDeleteError",
           "Unable to delete subnet pool: Subnet pool has existing allocations.")
    assert user.delete(f"/v2.0/subnets/{subnet['id']}").status_code == 204
    # a freed prefix can be carved again
    again = _subnet(user, net["id"], subnetpool_id=pool["id"])
    assert again["cidr"] == subnet["cidr"]
    assert user.delete(f"/v2.0/subnets/{again['id']}").status_code == 204
    assert user.delete(url).status_code == 204
    expect_error(user.get(url), 404, "SubnetPoolNotFound",
           f"Subnet pool {pool['id']} could not be found.")
    expect_error(user.delete(url), 404, "SubnetPoolNotFound")


def test_shared_pool_visible_to_others(admin, user, other):
    shared = _pool(admin, ["10.90.0.0/16"], shared=True, default_prefixlen=24)
    private = _pool(user, ["10.91.0.0/16"], default_prefixlen=24)
    assert other.show("subnetpools", shared["id"])["shared"] is True
    seen = {p["id"] for p in other.get("/v2.0/subnetpools").json()["subnetpools"]}
    assert shared["id"] in seen and private["id"] not in seen
    expect_error(other.get(f"/v2.0/subnetpools/{private['id']}"), 404, "SubnetPoolNotFound")
    net = other.network()
    subnet = _subnet(other, net["id"], subnetpool_id=shared["id"])
    assert ipaddress.ip_network(subnet["cidr"]).subnet_of(ipaddress.ip_network("10.90.0.0/16"))
    expect_error(_post_subnet(other, net["id"], subnetpool_id=private["id"]), 404,
           "SubnetPoolNotFound")
    expect_error(_put_pool(other, shared["id"], name="mine"), 403, "PolicyNotAuthorized",
           "update_subnetpool is disallowed by policy")
    expect_error(other.delete(f"/v2.0/subnetpools/{shared['id']}"), 403, "PolicyNotAuthorized",
           "delete_subnetpool is disallowed by policy")


def test_default_pool_and_use_default_subnetpool(admin, user):
    """One test, as the default pool of a family is global to the server."""
    net = user.network()
    expect_error(_post_subnet(user, net["id"], use_default_subnetpool=True,
                        subnetpool_id="6f4b8a52-0d3c-4c43-9a1e-2b3c4d5e6f70"), 400, "BadRequest",
           "Bad subnets request: subnetpool_id and use_default_subnetpool cannot both be "
           "specified.")
    existing = admin.get("/v2.0/subnetpools", params={"is_default": "true",
                                                      "ip_version": "4"}).json()["subnetpools"]
    assert existing == [], "another test left a default IPv4 subnet pool"
    expect_error(_post_subnet(user, net["id"], use_default_subnetpool=True), 400, "BadRequest",
           "Bad subnets request: No default subnetpool found for IPv4.")
    pool = _pool(admin, ["10.100.0.0/16"], is_default=True, shared=True, default_prefixlen=24)
    try:
        assert pool["is_default"] is True
        resp = _post_pool(admin, name="second", prefixes=["10.101.0.0/16"], is_default=True)
        expect_error(resp, 400, "InvalidInput",
               "Invalid input for operation: A default subnetpool for this IP family has "
               "already been set. Only one default may exist per IP family.")
        plain = _pool(admin, ["10.102.0.0/16"])
        expect_error(_put_pool(admin, plain["id"], is_default=True), 400, "InvalidInput")
        # a default IPv6 pool may exist beside it
        subnet = _subnet(user, net["id"], use_default_subnetpool=True)
        assert subnet["subnetpool_id"] == pool["id"]
        assert subnet["cidr"] == "10.100.0.0/24"
        assert "use_default_subnetpool" not in subnet
        assert user.delete(f"/v2.0/subnets/{subnet['id']}").status_code == 204
    finally:
        assert admin.delete(f"/v2.0/subnetpools/{pool['id']}").status_code == 204


def test_prefixes_join_and_leave_a_pool(user, other):
    """subnetpool-prefix-ops: add_prefixes collapses, remove_prefixes keeps what
    subnets use."""
    pool = user.create("subnetpools", name="ops", prefixes=["10.60.0.0/24"],
                       default_prefixlen=26)
    path = f"/v2.0/subnetpools/{pool['id']}"
    resp = user.put(f"{path}/add_prefixes", json={"prefixes": ["10.60.1.0/24",
                                                               "10.70.0.0/24"]})
    assert resp.status_code == 200, resp.text
    assert resp.json() == {"prefixes": ["10.60.0.0/23", "10.70.0.0/24"]}
    assert user.show("subnetpools", pool["id"])["prefixes"] == ["10.60.0.0/23", "10.70.0.0/24"]
    net = user.network()
    subnet = user.create("subnets", network_id=net["id"], ip_version=4,
                         subnetpool_id=pool["id"], cidr="10.70.0.0/26")
    resp = user.put(f"{path}/remove_prefixes", json={"prefixes": ["10.70.0.0/24"]})
    expect_error(resp, 400, "IllegalSubnetPoolPrefixUpdate")
    resp = user.put(f"{path}/remove_prefixes", json={"prefixes": ["10.60.1.0/24"]})
    assert resp.status_code == 200 and resp.json() == {
        "prefixes": ["10.60.0.0/24", "10.70.0.0/24"]}
    # prefixes the pool does not have: nothing to do
    resp = user.put(f"{path}/remove_prefixes", json={"prefixes": ["192.168.0.0/24"]})
    assert resp.json() == {"prefixes": ["10.60.0.0/24", "10.70.0.0/24"]}
    for body in ({"prefixes": "10.1.0.0/24"}, {"prefixes": ["not-a-cidr"]}, {}):
        expect_error(user.put(f"{path}/add_prefixes", json=body), 400, "InvalidInput")
    expect_error(user.put(f"{path}/add_prefixes", json={"prefixes": ["fd00::/64"]}), 400,
                 "PrefixVersionMismatch")
    # another project's pool is not its to change
    resp = other.put(f"{path}/add_prefixes", json={"prefixes": ["10.80.0.0/24"]})
    assert resp.status_code == 404, resp.text
    assert subnet["cidr"] == "10.70.0.0/26"


def test_a_networks_subnets_join_a_pool(user, other):
    """subnet_onboard: the network's subnets of the pool's version join it, their
    CIDRs with them; none may overlap what the pool has given out."""
    pool = user.create("subnetpools", name="onboard", prefixes=["10.90.0.0/24"])
    net = user.network()
    first = user.subnet(net["id"], "10.91.0.0/24")
    second = user.subnet(net["id"], "10.92.0.0/25")
    user.subnet(net["id"], "fd90::/64")  # another IP version stays out
    path = f"/v2.0/subnetpools/{pool['id']}/onboard_network_subnets"
    resp = user.put(path, json={"network_id": net["id"]})
    assert resp.status_code == 200, resp.text
    assert sorted(resp.json(), key=lambda s: s["cidr"]) == [
        {"id": first["id"], "cidr": "10.91.0.0/24"}, {"id": second["id"], "cidr": "10.92.0.0/25"}]
    assert user.show("subnets", first["id"])["subnetpool_id"] == pool["id"]
    assert user.show("subnetpools", pool["id"])["prefixes"] == [
        "10.90.0.0/24", "10.91.0.0/24", "10.92.0.0/25"]
    # onboarded again: they overlap what the pool now holds
    expect_error(user.put(path, json={"network_id": net["id"]}), 400, "IllegalSubnetPoolUpdate")
    expect_error(user.put(path, json={}), 400, "InvalidInput")
    expect_error(user.put(path, json={"network_id": "nope"}), 404, "NetworkNotFound")
    # another project's network is not the caller's to move
    theirs = other.network()
    resp = user.put(path, json={"network_id": theirs["id"]})
    assert resp.status_code == 403, resp.text
