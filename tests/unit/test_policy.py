"""The policy rule language and Neutron's default rules."""

import pytest

from neutrino.api.policy import Policy
from neutrino.context import Context


def ctx(project="p1", roles=("member",)):
    return Context(project_id=project, roles=frozenset(roles), is_admin="admin" in roles)


@pytest.mark.parametrize("rule,context,target,expected", [
    ("", ctx(), {}, True),
    ("@", ctx(), {}, True),
    ("!", ctx(), {}, False),
    ("role:member", ctx(), {}, True),
    ("role:admin", ctx(), {}, False),
    ("project_id:%(project_id)s", ctx(), {"project_id": "p1"}, True),
    ("project_id:%(project_id)s", ctx(), {"project_id": "p2"}, False),
    ("project_id:%(network:project_id)s", ctx(), {"network:project_id": "p1"}, True),
    ("field:networks:shared=True", ctx(), {"shared": True}, True),
    ("field:networks:shared=True", ctx(), {"shared": False}, False),
    ("field:ports:device_owner=network:*", ctx(), {"device_owner": "network:dhcp"}, True),
    ("field:ports:device_owner=network:*", ctx(), {"device_owner": "compute:nova"}, False),
    ("not role:reader or role:member", ctx(roles=("reader",)), {}, False),
    ("not role:reader or role:member", ctx(roles=("reader", "member")), {}, True),
    ("(role:a or role:b) and role:c", ctx(roles=("b", "c")), {}, True),
    ("(role:a or role:b) and role:c", ctx(roles=("b",)), {}, False),
    ("role:a or role:b and role:c", ctx(roles=("a",)), {}, True),
])
def test_rule_language(rule, context, target, expected):
    policy = Policy({"under_test": rule})
    assert policy.allows("under_test", context, target) is expected


def test_broken_rule_fails_at_construction():
    with pytest.raises(ValueError):
        Policy({"broken": "(role:a or"})


def test_default_rules():
    policy = Policy()
    owner, stranger = ctx("p1"), ctx("p2")
    network = {"project_id": "p1", "shared": True, "router:external": False}
    assert policy.allows("update_network", owner, network)
    assert not policy.allows("update_network", stranger, network)
    assert not policy.allows("create_network:shared", owner, {})
    assert policy.allows("create_network:shared", ctx(roles=("admin",)), {})
    reader = ctx("p1", roles=("reader",))
    assert not policy.allows("create_network", reader, {"project_id": "p1"})
    port = {"project_id": "p2", "network:project_id": "p1", "device_owner": "compute:x"}
    assert policy.allows("delete_port", owner, port)  # the network owner may
    assert policy.allows("create_port:device_owner", stranger, port)
    assert not policy.allows("create_port:device_owner", stranger,
                             {**port, "device_owner": "network:dhcp"})
