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

CREATION = Extension(
    alias="tag-creation",
    name="Tag support on creation",
    description="Enables to set tags on resources during creation.",
    required=("standard-attr-tag",),
)
