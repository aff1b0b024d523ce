"""Finding an agent's extensions (``[agent] extensions``) and calling them.

A name is looked up in the agent's own entry point group, then taken as a
dotted path (``package.module:Class`` or ``package.module.Class``). A name of
another agent's group (``port_forwarding`` seen by the DHCP agent, say, when
agents share a file or run in one process) is left to that agent. A name
found nowhere stops the agent at start: ``ExtensionNotFound`` names the
option and its file in one line.

Unset, the option means each agent's defaults (``Agent.default_extensions``:
the L3 agent's ``port_forwarding``, on before extensions existed); set,
exactly the listed extensions run (``extensions =`` runs none), as in Neutron.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Awaitable, Callable, Coroutine, Iterator, Sequence
from typing import Any, Generic, TypeVar

from neutrino.agents.extensions.api import GROUPS, AgentExtension, AgentHandles
from neutrino.config import Config, Opt, OptGroup, parse_list
from neutrino.entry_points import of_group

LOG = logging.getLogger(__name__)

E = TypeVar("E", bound=AgentExtension)
R = TypeVar("R")

EXTENSION_OPTIONS = OptGroup("agent", [
    Opt("extensions", parse_list, None,
        "Agent extensions to run, by name (Neutron's: port_forwarding, qos, "
        "fwaas_v2, vpnaas, metering, log, ...) or dotted path; names that are "
        "another agent's are left to it. Unset: the agent's own defaults (the L3 "
        "agent runs port_forwarding); empty: none."),
])


class ExtensionNotFound(ValueError):
    """A configured extension that no agent has: one line, with the setting."""


def _import(path: str) -> object:
    module_name, sep, attr = path.partition(":")
    if not sep:
        module_name, _, attr = path.rpartition(".")
    return getattr(importlib.import_module(module_name), attr)


def _find(name: str, kind: str, setting: str) -> type[AgentExtension] | None:
    """The class of extension ``name`` for agents of ``kind``; None when it is
    another kind of agent's."""
    for group_kind, group in GROUPS.items():
        for point in of_group(group, name):
            return point.load() if group_kind == kind else None
    if "." not in name and ":" not in name:
        known = sorted({p.name for g in GROUPS.values() for p in of_group(g)})
        raise ExtensionNotFound(f"{setting}: no agent extension named {name!r} "
                                f"(known: {', '.join(known) or 'none'})")
    try:
        found = _import(name)
    except (ImportError, AttributeError, ValueError) as error:
        raise ExtensionNotFound(f"{setting}: cannot import {name!r}: {error}") from None
    if not (isinstance(found, type) and issubclass(found, AgentExtension)):
        raise ExtensionNotFound(f"{setting}: {name!r} is not an agent extension")
    return found if found.kind == kind else None


def load(conf: Config, kind: str, defaults: Sequence[str]) -> list[tuple[str, AgentExtension]]:
    """The extensions an agent of ``kind`` runs, by name, built; the first name
    not found raises ``ExtensionNotFound``."""
    names = getattr(conf.group("agent"), "extensions", None)
    if names is None:
        names = list(defaults)
    setting = conf.setting("agent", "extensions")
    loaded: list[tuple[str, AgentExtension]] = []
    for name in dict.fromkeys(names):
        cls = _find(name, kind, setting)
        if cls is None:
            LOG.debug("extension %s is another agent's", name)
            continue
        loaded.append((name, cls()))
    return loaded


class Extensions(Generic[E]):
    """An agent's extensions, each called so that its failure is one line in
    the log and nothing more."""

    def __init__(self, loaded: Sequence[tuple[str, E]] = ()):
        self._loaded = list(loaded)

    def __iter__(self) -> Iterator[E]:
        return (extension for _, extension in self._loaded)

    def __len__(self) -> int:
        return len(self._loaded)

    @property
    def names(self) -> list[str]:
        return [name for name, _ in self._loaded]

    def initialize(self, handles: AgentHandles) -> None:
        """``initialize`` each; one that fails is dropped (logged)."""
        kept = []
        for name, extension in self._loaded:
            try:
                extension.initialize(handles)
            except Exception as error:
                _failed(name, "initialize", error)
                continue
            kept.append((name, extension))
            LOG.info("agent extension %s loaded", name)
        self._loaded = kept

    def rpc_endpoints(self) -> dict[str, list[object]]:
        """Topic -> the objects the extensions serve there."""
        found: dict[str, list[object]] = {}
        for name, extension in self._loaded:
            try:
                for topic, objects in extension.rpc_endpoints():
                    found.setdefault(topic, []).extend(objects)
            except Exception as error:
                _failed(name, "rpc_endpoints", error)
        return found

    def background(self) -> list[Callable[[], Coroutine[Any, Any, None]]]:
        """The extensions' background work, each logged when it fails."""
        found: list[Callable[[], Coroutine[Any, Any, None]]] = []
        for name, extension in self._loaded:
            try:
                works = list(extension.background())
            except Exception as error:
                _failed(name, "background", error)
                continue
            found.extend(_guarded(name, work) for work in works)
        return found

    async def each(self, hook: str, call: Callable[[E], Awaitable[None]]) -> None:
        """``call(extension)`` for each, in order; failures logged."""
        for name, extension in self._loaded:
            try:
                await call(extension)
            except Exception as error:
                _failed(name, hook, error)

    def gather(self, hook: str, call: Callable[[E], R]) -> list[R]:
        """The results of a pure hook, of those that did not fail."""
        results = []
        for name, extension in self._loaded:
            try:
                results.append(call(extension))
            except Exception as error:
                _failed(name, hook, error)
        return results

    def fold(self, hook: str, call: Callable[[E, R], R], value: R) -> R:
        """``value`` passed through each extension's pure hook in turn; one
        that fails leaves it as it was."""
        for name, extension in self._loaded:
            try:
                value = call(extension, value)
            except Exception as error:
                _failed(name, hook, error)
        return value


def _guarded(name: str, work: Callable[[], Coroutine[Any, Any, None]]
             ) -> Callable[[], Coroutine[Any, Any, None]]:
    async def run() -> None:
        try:
            await work()
        except Exception as error:
            _failed(name, "background", error)
    return run


def _failed(name: str, hook: str, error: Exception) -> None:
    LOG.error("agent extension %s: %s failed: %s: %s", name, hook,
              type(error).__name__, error)
    LOG.debug("agent extension %s: %s failed", name, hook, exc_info=error)
