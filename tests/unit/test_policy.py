"""The policy rule language and Neutron's default rules."""

import pytest

from neutrino.api.policy import Policy, read_policy_file
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
    ("field:ports:device_owner=~^network:", ctx(), {"device_owner": "network:dhcp"}, True),
    ("field:ports:device_owner=~^network:", ctx(), {"device_owner": "compute:nova"}, False),
    # '*' is a value like any other (restrict_wildcard depends on it)
    ("field:rbac_policy:target_tenant=*", ctx(), {"target_tenant": "*"}, True),
    ("field:rbac_policy:target_tenant=*", ctx(), {"target_tenant": "p2"}, False),
    ("field:rbac_policy:target_tenant=*", ctx(), {}, False),
    ("is_admin:True", ctx(roles=("admin",)), {}, True),
    ("is_admin:True", ctx(), {}, False),
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


def test_readers_read_and_members_write():
    policy = Policy()
    reader, member = ctx("p1", roles=("reader",)), ctx("p1", roles=("member", "reader"))
    mine, theirs = {"project_id": "p1"}, {"project_id": "p2"}
    for resource in ("network", "router", "floatingip", "security_group", "rbac_policy"):
        assert policy.allows(f"get_{resource}", reader, mine)
        assert not policy.allows(f"get_{resource}", reader, theirs)
        assert not policy.allows(f"update_{resource}", reader, mine)
        assert policy.allows(f"update_{resource}", member, mine)
        assert not policy.allows(f"update_{resource}", member, theirs)
    # a shared network is readable by anyone, even without a role
    assert policy.allows("get_network", ctx("p2", roles=()), {"project_id": "p1",
                                                                "shared": True})


def test_only_admins_share_with_everyone():
    policy = Policy()
    member, admin = ctx(), ctx(roles=("admin",))
    assert policy.allows("create_rbac_policy:target_tenant", member, {"target_tenant": "p2"})
    assert not policy.allows("create_rbac_policy:target_tenant", member,
                             {"target_tenant": "*"})
    assert policy.allows("create_rbac_policy:target_tenant", admin, {"target_tenant": "*"})


def test_tokens_without_a_project_are_refused_when_scope_is_enforced():
    system_admin = Context(project_id=None, roles=frozenset({"admin"}), system_scope="all")
    assert not Policy().is_admin(system_admin)
    assert not Policy().allows("get_network", system_admin, {})
    assert Policy(enforce_scope=False).is_admin(system_admin)


def test_policy_file_overrides_and_errors(tmp_path):
    path = tmp_path / "policy.yaml"
    path.write_text('"create_network": "rule:admin_only"\n'
                    '"context_is_admin": "role:admin or role:netadmin"\n')
    policy = Policy(read_policy_file(str(path)))
    assert not policy.allows("create_network", ctx(), {"project_id": "p1"})
    assert policy.is_admin(ctx(roles=("netadmin",)))
    (tmp_path / "p.json").write_text('{"get_network": "rule:admin_only"}')
    assert read_policy_file(str(tmp_path / "p.json")) == {"get_network": "rule:admin_only"}
    for text, complaint in (('"a": "(role:x or"', "rule a"), ("- 1\n- 2", "must map"),
                            ('"a": [', "cannot parse")):
        path.write_text(text)
        with pytest.raises(ValueError, match=complaint):
            read_policy_file(str(path))
    with pytest.raises(ValueError, match="cannot read"):
        read_policy_file(str(tmp_path / "missing.yaml"))
