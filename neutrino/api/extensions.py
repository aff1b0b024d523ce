"""The extension manager: which aliases the loaded plugins serve, and the
resources and attributes that this adds to the API."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from neutrino.definitions import CORE_RESOURCES, EXTENSIONS
from neutrino.definitions.base import Extension, Resource


class ExtensionError(Exception):
    """A start-up error in the set of extensions; the message is one line."""


def plugin_name(plugin: Any) -> str:
    return type(plugin).__name__


def claimed(plugins: Iterable[Any], known: Mapping[str, Extension] = EXTENSIONS
            ) -> dict[str, Any]:
    """alias -> the plugin serving it; two claimants or an unknown alias is fatal."""
    owners: dict[str, Any] = {}
    for plugin in plugins:
        for alias in plugin.supported_extension_aliases:
            if alias not in known:
                raise ExtensionError(f"plugin {plugin_name(plugin)} claims unknown extension "
                                     f"{alias!r}")
            if alias in owners:
                raise ExtensionError(
                    f"extension {alias!r} is claimed by both {plugin_name(owners[alias])} "
                    f"and {plugin_name(plugin)}")
            owners[alias] = plugin
    for alias in owners:
        missing = [r for r in known[alias].required if r not in owners]
        if missing:
            raise ExtensionError(f"extension {alias!r} requires {', '.join(missing)}, "
                                 "which no loaded plugin provides")
    return owners


def api_resources(core_plugin: Any, owners: Mapping[str, Any],
                  known: Mapping[str, Extension] = EXTENSIONS
                  ) -> dict[str, tuple[Resource, Any]]:
    """API path (``networks``, ``ports/bindings``) -> (resource with its loaded
    extension attributes, serving plugin)."""
    served: dict[str, tuple[Resource, Any]] = {
        r.path: (r, core_plugin) for r in CORE_RESOURCES}
    for alias, plugin in owners.items():
        for resource in known[alias].resources:
            served[resource.path] = (resource, plugin)
    for alias in known:  # registry order, so a later extension refines an earlier one
        if alias not in owners:
            continue
        for collection, extra in known[alias].attributes.items():
            if collection in served:
                resource, plugin = served[collection]
                served[collection] = (resource.extended(extra), plugin)
    return served
