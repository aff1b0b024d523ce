"""The router plugin's service providers (``L3_ROUTER_NAT``), which a router
flavor's profile names: what each says of HA and distributed routers.

Neutron's four: single node (never HA), HA (always), DVR and DVR-HA (always
distributed). neutrino's routers are never distributed, so the last two are
configurable (a Neutron deployment's profiles keep their meaning) but serve no
router. An operator names them in ``[service_providers]``, by entry point
(``single_node``, ``ha``, ``dvr``, ``dvrha``) or by dotted path; each provider
of the type must be one of these classes, checked when the plugin starts.
"""

from __future__ import annotations

from neutrino import exceptions as exc
from neutrino.config import ConfigError
from neutrino.plugins.providers import Provider, ServiceProviderNotFound, ServiceProviders

SERVICE_TYPE = "L3_ROUTER_NAT"


class L3Provider:
    """A router provider: a declaration, nothing to run (the L3 agents serve
    every router the same way). Its routers are HA, or distributed, or not:
    neither is optional, as with Neutron's four."""

    ha = False
    distributed = False

    def __init__(self, plugin: object):
        self.plugin = plugin


class SingleNodeDriver(L3Provider):
    """A router on one L3 agent."""


class HaDriver(L3Provider):
    """A router on several L3 agents, kept by VRRP."""

    ha = True


class DvrDriver(L3Provider):
    """A distributed router (not served)."""

    distributed = True


class DvrHaDriver(L3Provider):
    """A distributed HA router (not served)."""

    ha = True
    distributed = True


def check_config(providers: ServiceProviders) -> None:
    """Every ``L3_ROUTER_NAT`` provider is a router provider, or the server
    does not start."""
    for provider in providers.drivers_for(SERVICE_TYPE).values():
        if not issubclass(provider.driver_class, L3Provider):
            raise ConfigError(
                f"service provider {provider.name} of {SERVICE_TYPE}: driver "
                f"{provider.driver} is not a router provider (one of "
                "single_node, ha, dvr, dvrha)")


def router_is_ha(provider: Provider, wanted: bool | None) -> bool:
    """Whether a router of ``provider`` is HA; ``wanted``: the create's explicit
    ``ha``, which must agree (Neutron's InvalidInput otherwise)."""
    if provider.service_type != SERVICE_TYPE:
        raise ServiceProviderNotFound(provider=provider.name, service_type=SERVICE_TYPE)
    driver = provider.driver_class
    assert issubclass(driver, L3Provider)  # check_config saw to it
    if driver.distributed:
        raise _unsupported(provider, "distributed", False)
    if wanted is not None and wanted != driver.ha:
        raise _unsupported(provider, "ha", wanted)
    return driver.ha


def _unsupported(provider: Provider, key: str, flag: bool) -> exc.InvalidInput:
    return exc.InvalidInput(
        error_message=f"Provider {provider.name} does not support {key}={flag}")
