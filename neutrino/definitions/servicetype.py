"""service-type: the service providers configured for the advanced services
(/v2.0/service-providers), read only.

A provider has no id: the list is served whole (limit and marker do not
apply), as Neutron serves it. Which driver a provider loads is not shown.
"""

from __future__ import annotations

from neutrino.definitions import validators as v
from neutrino.definitions.base import Attr, Extension, Resource, attrs

RESOURCE = Resource(
    hyphenated=True,  # /v2.0/service-providers
    name="service_provider",
    collection="service_providers",
    attrs=attrs(
        Attr("service_type", sort=True),
        Attr("name", sort=True),
        Attr("default", sort=True, convert_filter=v.to_boolean),
    ),
)

EXTENSION = Extension(
    alias="service-type",
    name="Neutron Service Type Management",
    description="API for retrieving service providers for Neutron advanced services",
    updated="2013-01-20T00:00:00-00:00",
    resources=(RESOURCE,),
)
