"""Service providers: which driver serves each advanced service, from
``[service_providers] service_provider = TYPE:name:driver[:default]``.

The option is multi-valued as in Neutron: every occurrence counts, repeated
in one file or spread over several (a service's own file, such as
neutron_vpnaas.conf, passed with another ``--config-file``). A service plugin
asks the registry for its drivers and its default; the ``service-type``
extension lists them. Every entry is checked and its driver loaded at start,
so a mistake stops the server with one line naming the entry and its file,
never a request later.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from neutrino import exceptions as exc
from neutrino.config import Config, ConfigError, Opt, OptGroup
from neutrino.entry_points import of_group

SECTION = "service_providers"
OPTION = "service_provider"
#: entry point group of provider drivers; a driver may also be a dotted path
ENTRY_POINT_GROUP = "neutrino.service_providers"
#: Neutron's service type names, for the services neutrino serves or will serve
SERVICE_TYPES = ("FIREWALL", "FIREWALL_V2", "L3_ROUTER_NAT", "LOADBALANCERV2", "LOGGING",
                 "METERING", "QOS", "TRUNK", "VPN")
NAME_MAX_LEN = 255

GROUP = OptGroup(SECTION, [
    Opt(OPTION, str, [], "A service's driver: TYPE:name:driver[:default].", multi=True),
])


class ServiceProviderNotFound(exc.InvalidInput):
    message = ("Service provider '%(provider)s' could not be found for service type "
               "%(service_type)s")


class DefaultServiceProviderNotFound(exc.InvalidInput):
    message = "Service type %(service_type)s does not have a default service provider"


@dataclass(frozen=True)
class Provider:
    service_type: str
    name: str  # lower case, as Neutron keeps it
    driver: str  # as configured: an entry point name or a dotted path
    default: bool
    driver_class: type

    def view(self) -> dict[str, Any]:
        """What the API shows of it (not the driver, as in Neutron)."""
        return {"service_type": self.service_type, "name": self.name, "default": self.default}


class ServiceProviders:
    """The configured providers, in the order the files give them."""

    def __init__(self, providers: Iterable[Provider] = ()):
        self.providers = tuple(providers)

    @classmethod
    def from_config(cls, conf: Config) -> ServiceProviders:
        """Parse, check and load every entry; ``ConfigError`` (one line) if one is wrong."""
        providers: list[Provider] = []
        for text, path in conf.occurrences(SECTION, OPTION):
            if text.strip():
                providers.append(_checked(_parse(text, path), providers, text, path))
        return cls(providers)

    def drivers_for(self, service_type: str) -> dict[str, Provider]:
        """name -> provider, for a service plugin to build its drivers from."""
        return {p.name: p for p in self.providers if p.service_type == service_type}

    def default_for(self, service_type: str) -> Provider | None:
        return next((p for p in self.providers
                     if p.service_type == service_type and p.default), None)

    def require(self, service_type: str, plugin: str) -> dict[str, Provider]:
        """The drivers of a service that cannot run without one; none is a start-up
        error (Neutron exits too)."""
        found = self.drivers_for(service_type)
        if not found:
            raise ConfigError(
                f"service plugin {plugin} needs a provider: set {OPTION} = "
                f"{service_type}:NAME:DRIVER:default in [{SECTION}]")
        return found

    def provider_for(self, service_type: str, name: str | None = None) -> Provider:
        """The provider a request names, or the default when it names none (400s
        otherwise, as in Neutron)."""
        if name is None:
            default = self.default_for(service_type)
            if default is None:
                raise DefaultServiceProviderNotFound(service_type=service_type)
            return default
        found = self.drivers_for(service_type).get(name.lower())
        if found is None:
            raise ServiceProviderNotFound(provider=name, service_type=service_type)
        return found


def _error(text: str, path: str, reason: str) -> ConfigError:
    return ConfigError(f"invalid value {text!r} for option {OPTION} in [{SECTION}] of {path}: "
                       f"{reason}")


def _parse(text: str, path: str) -> Provider:
    fields = [field.strip() for field in text.split(":")]
    if len(fields) not in (3, 4) or not all(fields[:3]):
        raise _error(text, path, "expected TYPE:name:driver or TYPE:name:driver:default")
    service_type, name, driver = fields[:3]
    if service_type not in SERVICE_TYPES:
        raise _error(text, path, f"unknown service type {service_type!r} "
                                 f"(known: {', '.join(SERVICE_TYPES)})")
    if len(name) > NAME_MAX_LEN:
        raise _error(text, path, f"the provider name is longer than {NAME_MAX_LEN} characters")
    flag = fields[3] if len(fields) == 4 else ""
    if flag not in ("", "default"):
        raise _error(text, path, f"the last field must be 'default' or empty, not {flag!r}")
    try:
        driver_class = load_driver(driver)
    except ValueError as error:
        raise _error(text, path, str(error)) from None
    return Provider(service_type, name.lower(), driver, flag == "default", driver_class)


def _checked(new: Provider, earlier: list[Provider], text: str, path: str) -> Provider:
    """Neutron's rules across entries: a name once per type, one default per
    type, a driver for one provider only."""
    for old in earlier:
        if old.service_type != new.service_type:
            continue
        if old.name == new.name:
            raise _error(text, path, f"service type {new.service_type} already has a "
                                     f"provider named {new.name!r}")
        if old.default and new.default:
            raise _error(text, path, f"service type {new.service_type} already has a "
                                     f"default provider ({old.name})")
    for old in earlier:
        if old.driver_class is new.driver_class:
            raise _error(text, path, f"driver {new.driver} already serves provider "
                                     f"{old.name} of {old.service_type}")
    return new


def load_driver(name: str) -> type:
    """A driver class by entry point name (``neutrino.service_providers``) or
    dotted path; ``ValueError`` says why it cannot be had."""
    points = {ep.name: ep for ep in of_group(ENTRY_POINT_GROUP)}
    module_name, _, attr = name.rpartition(".")
    if name not in points and not module_name:
        raise ValueError(f"unknown driver {name!r}: neither a dotted path nor an entry "
                         f"point (known: {', '.join(sorted(points)) or 'none'})")
    try:  # whatever a module raises as it is imported, it is a driver that does not load
        found = (points[name].load() if name in points
                 else getattr(importlib.import_module(module_name), attr, None))
    except Exception as error:
        reason = (str(error).strip().splitlines() or [type(error).__name__])[0]
        raise ValueError(f"cannot load driver {name}: {reason}") from None
    if found is None:
        raise ValueError(f"cannot load driver {name}: module {module_name} has no {attr}")
    if not isinstance(found, type):
        raise ValueError(f"driver {name} is not a class")
    return found
