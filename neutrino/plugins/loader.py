"""Find plugins by entry point name or dotted path."""

from __future__ import annotations

import importlib
from importlib.metadata import entry_points

CORE_GROUP = "neutrino.core_plugins"
SERVICE_GROUP = "neutrino.service_plugins"


class PluginLoadError(Exception):
    pass


def find(group: str, name: str) -> type:
    for ep in entry_points(group=group):
        if ep.name == name:
            return ep.load()
    module_name, _, attr = name.replace(":", ".").rpartition(".")
    if module_name:
        try:
            return getattr(importlib.import_module(module_name), attr)
        except (ImportError, AttributeError):
            pass
    kind = "core plugin" if group == CORE_GROUP else "service plugin"
    known = sorted(ep.name for ep in entry_points(group=group))
    raise PluginLoadError(f"unknown {kind} {name!r} (known: {', '.join(known) or 'none'})")
