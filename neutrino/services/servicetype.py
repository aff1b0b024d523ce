"""The service-type extension: /v2.0/service-providers lists the providers of
``[service_providers]`` (``plugins.providers``), read only.

The server always brings this plugin along, as Neutron's default flavors
plugin serves the extension; with no provider configured the list is empty.
Neutron ignores sort parameters here; neutrino sorts when asked and
otherwise keeps the configured order.
"""

from __future__ import annotations

import operator
from typing import Any, ClassVar

from neutrino import exceptions as exc
from neutrino.context import Context
from neutrino.db.query import CollectionQuery
from neutrino.plugins.base import Environment, Plugin
from neutrino.plugins.providers import Provider


class ServiceTypePlugin(Plugin):
    supported_extension_aliases = ("service-type",)
    # as Neutron: the configured driver may be filtered on, though not shown
    extra_filters: ClassVar[dict[str, tuple[str, ...]]] = {"service-providers": ("driver",)}

    def __init__(self, env: Environment):
        super().__init__(env)
        self.providers = env.providers

    def get_service_providers(self, ctx: Context, query: CollectionQuery
                              ) -> list[dict[str, Any]]:
        found = [p for p in self.providers.providers if _matches(p, query.filters)]
        for key, ascending in reversed(query.sorts):  # stable: the first key sorts last
            found.sort(key=operator.attrgetter(key), reverse=not ascending)
        return [p.view() for p in found]

    def get_service_provider(self, ctx: Context, provider_id: str) -> dict[str, Any]:
        raise exc.HTTPNotFound()  # no provider has an id to be fetched by


def _matches(provider: Provider, filters: dict[str, list[Any]]) -> bool:
    return all(getattr(provider, key) in wanted for key, wanted in filters.items())
