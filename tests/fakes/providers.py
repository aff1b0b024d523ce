"""Service provider drivers for tests only (loaded by dotted path)."""

from __future__ import annotations

from typing import Any


class VpnDriver:
    """What a service plugin would build: the driver gets the plugin."""

    def __init__(self, plugin: Any):
        self.plugin = plugin


class OtherVpnDriver(VpnDriver):
    pass


class FirewallDriver(VpnDriver):
    pass


NOT_A_CLASS = "a driver must be a class"
