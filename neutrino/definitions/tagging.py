"""standard-attr-tag: tags on every taggable resource, and the tag filters."""

from neutrino.definitions import validators as v
from neutrino.definitions.base import Extension

EXTENSION = Extension(
    alias="standard-attr-tag",
    name="Tag support for resources with standard attribute: subnet, trunk, router, "
         "network, policy, subnetpool, port, security_group, floatingip",
    description="Enables to set tag on resources with standard attribute.",
)

TAG_FILTERS = ("tags", "tags-any", "not-tags", "not-tags-any")
MAX_TAG_LEN = 255
MAX_TAGS = v.MAX_TAGS

# POST /{collection}/{id}/tags adds tags to those a resource has.
CREATION = Extension(
    alias="tag-creation",
    name="Tag creation extension",
    description="Allow to create multiple tags for a resource",
    updated="2024-23-07T10:00:00-00:00",  # sic: Neutron's
)

BULK_PORTS = Extension(
    alias="tag-ports-during-bulk-creation",
    name="Tag Ports During Bulk Creation",
    description="Each port of a bulk create may carry its own tags.",
    updated="2019-12-16T10:00:00-00:00",
    required=("standard-attr-tag",),
)
