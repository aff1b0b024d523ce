"""quotas and quota_details: per-project limits, served by a dedicated controller."""

from neutrino.definitions.base import Extension

EXTENSION = Extension(
    alias="quotas",
    name="Quota management support",
    description="Expose functions for quotas management per project",
)

DETAILS = Extension(
    alias="quota_details",
    name="Quota details management support",
    description="Expose functions for quotas usage statistics per project",
    required=("quotas",),
)
