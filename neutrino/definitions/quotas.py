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

CHECK_LIMIT = Extension(
    alias="quota-check-limit",
    name="Quota engine limit check",
    description="A quota update may ask that no new limit be below the project's use "
                "(check_limit).",
    required=("quotas",),
)

CHECK_LIMIT_DEFAULT = Extension(
    alias="quota-check-limit-default",
    name="Quota engine limit check by default",
    description="Every quota update refuses a limit below the project's use unless it "
                "says force.",
    required=("quota-check-limit",),
)
