"""rbac-policies: share a network with chosen projects (``access_as_shared``) or
offer it to them as an external network (``access_as_external``)."""

from neutrino import exceptions as exc
from neutrino.definitions import validators as v
from neutrino.definitions.base import REQUIRED, Attr, Extension, Resource, attrs

ACCESS_SHARED = "access_as_shared"
ACCESS_EXTERNAL = "access_as_external"
WILDCARD = "*"  # every project
OBJECT_TYPES = ("network",)
ACTIONS = (ACCESS_SHARED, ACCESS_EXTERNAL)


class RbacPolicyNotFound(exc.NotFound):
    message = "RBAC policy of type %(object_type)s with ID %(id)s not found"


class RbacPolicyInUse(exc.Conflict):
    message = ("RBAC policy on object %(object_id)s cannot be removed because other objects "
               "depend on it.\nDetails: %(details)s")


class DuplicateRbacPolicy(exc.Conflict):
    message = "An RBAC policy already exists with those values."


def _not_found(rbac_policy_id: str) -> RbacPolicyNotFound:
    """The controller's 404; every object type here is a network."""
    return RbacPolicyNotFound(object_type="network", id=rbac_policy_id)


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
)
