"""rbac-policies: share a network with chosen projects (``access_as_shared``) or
offer it to them as an external network (``access_as_external``); share
security groups, subnet pools, address scopes and address groups
(``access_as_shared``: rbac-security-groups, rbac-subnetpool,
rbac-address-scope, rbac-address-group)."""

from typing import Any

from neutrino import exceptions as exc
from neutrino.definitions import validators as v
from neutrino.definitions.base import REQUIRED, Attr, Extension, Resource, attrs

ACCESS_SHARED = "access_as_shared"
ACCESS_EXTERNAL = "access_as_external"
WILDCARD = "*"  # every project
OBJECT_TYPES = ("network", "security_group", "subnetpool", "address_scope", "address_group",
                "qos_policy")
ACTIONS = (ACCESS_SHARED, ACCESS_EXTERNAL)


class RbacPolicyNotFound(exc.NotFound):
    message = "RBAC policy of type %(object_type)s with ID %(id)s not found"


class RbacPolicyInUse(exc.Conflict):
    message = ("RBAC policy on object %(object_id)s cannot be removed because other objects "
               "depend on it.\nDetails: %(details)s")


class DuplicateRbacPolicy(exc.Conflict):
    message = "An RBAC policy already exists with those values."


class RbacPolicyInitError(exc.Conflict):
    """Neutron's PolicyInitError (which its API turns into a 500): a 409 here,
    the entry conflicting with how the pool's address scope is shared."""

    message = "Failed to create RBAC policy on object %(object_id)s because %(reason)s."


class InvalidActionForType(exc.InvalidInput):
    message = ("Invalid action '%(action)s' for object type '%(object_type)s'. Valid "
               "actions: %(valid_actions)s")


def _not_found(rbac_policy_id: str) -> RbacPolicyNotFound:
    """The controller's 404: the type of an entry not found is not known."""
    return RbacPolicyNotFound(object_type="unknown", id=rbac_policy_id)


def view(row: Any) -> dict[str, Any]:
    """An entry of any type (a row with ``object_type``)."""
    return {"id": row.id, "project_id": row.project_id, "tenant_id": row.project_id,
            "object_type": row.object_type, "object_id": row.object_id,
            "target_tenant": row.target_project, "action": row.action}


RESOURCE = Resource(
    hyphenated=True,
    name="rbac_policy",
    collection="rbac_policies",
    not_found=_not_found,
    attrs=attrs(
        Attr("id", validate=v.uuid, sort=True),
        Attr("project_id", allow_post=True, validate=v.project_id, sort=True),
        Attr("tenant_id", allow_post=True, validate=v.project_id, sort=True),
        Attr("object_type", allow_post=True, default=REQUIRED,
             validate=v.one_of(*OBJECT_TYPES), sort=True),
        Attr("object_id", allow_post=True, default=REQUIRED, validate=v.uuid, sort=True),
        Attr("target_tenant", allow_post=True, allow_put=True, default=REQUIRED,
             validate=v.string(255), sort=True),
        Attr("action", allow_post=True, default=REQUIRED, validate=v.one_of(*ACTIONS),
             sort=True),
    ),
)

EXTENSIONS = (
    Extension("rbac-policies", "RBAC Policies",
              "Policies that share a resource with chosen projects.",
              updated="2015-06-17T12:15:12-00:00", resources=(RESOURCE,)),
    Extension("rbac-security-groups", "Add security_group type to network RBAC",
              "Security groups shared with chosen projects.",
              updated="2019-02-14T00:00:00-00:00", required=("rbac-policies", "security-group")),
    Extension("rbac-subnetpool", "Add subnetpool type to RBAC",
              "Subnet pools shared with chosen projects.",
              updated="2020-02-05T00:00:00-00:00",
              required=("rbac-policies", "rbac-address-scope")),
    Extension("rbac-address-scope", "Add address_scope type to RBAC",
              "Address scopes shared with chosen projects.",
              updated="2020-02-12T00:00:00-00:00", required=("rbac-policies", "address-scope")),
    Extension("rbac-address-group", "Add address_group type to RBAC",
              "Address groups shared with chosen projects.",
              updated="2021-01-20T00:00:00-00:00", required=("rbac-policies", "security-group")),
)
