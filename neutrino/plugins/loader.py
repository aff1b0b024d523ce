"""Find plugins by entry point name or dotted path."""

from __future__ import annotations

import importlib

from neutrino.entry_points import of_group

CORE_GROUP = "neutrino.core_plugins"
SERVICE_GROUP = "neutrino.service_plugins"
ML2_TYPE_GROUP = "neutrino.ml2.type_drivers"
ML2_MECHANISM_GROUP = "neutrino.ml2.mechanism_drivers"
ML2_EXTENSION_GROUP = "neutrino.ml2.extension_drivers"

KINDS = {CORE_GROUP: "core plugin", SERVICE_GROUP: "service plugin",
         ML2_TYPE_GROUP: "ml2 type driver", ML2_MECHANISM_GROUP: "ml2 mechanism driver",
         ML2_EXTENSION_GROUP: "ml2 extension driver"}


class PluginLoadError(Exception):
    pass


def find(group: str, name: str) -> type:
    for ep in of_group(group, name):
        return ep.load()
    module_name, _, attr = name.replace(":", ".").rpartition(".")
    if module_name:
        try:
            return getattr(importlib.import_module(module_name), attr)
        except (ImportError, AttributeError):
            pass
    kind = KINDS.get(group, group)
    known = sorted(ep.name for ep in of_group(group))
    raise PluginLoadError(f"unknown {kind} {name!r} (known: {', '.join(known) or 'none'})")
