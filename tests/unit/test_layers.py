"""Imports point one way (DESIGN.md): ``cmd -> api -> (plugins, services) ->
(definitions, ipam, db, rpc)`` and ``agents -> (rpc, linux)``. The agents and
the host seam import nothing of the server; what both sides share lives in
``neutrino.rpc`` (the contracts in ``neutrino.rpc.contracts``).

Between plugins and services the direction is: a service plugin may use the
plugin framework (the contract, hooks, loader, providers, periodic tasks) and
reaches the core plugin only through the ``Environment`` it is given; the
core plugin (ML2 and its table code) imports no service.
"""

from __future__ import annotations

import ast
from pathlib import Path

import neutrino

ROOT = Path(neutrino.__file__).parent

#: small modules every layer may use; they import only each other
FOUNDATION = frozenset({"config", "context", "exceptions", "log", "addresses", "metrics",
                        "entry_points"})
#: the plugin framework: what a service plugin may take from ``neutrino.plugins``
PLUGIN_FRAMEWORK = ("neutrino.plugins.base", "neutrino.plugins.hooks",
                    "neutrino.plugins.loader", "neutrino.plugins.providers",
                    "neutrino.plugins.periodic", "neutrino.plugins.extension_driver")

#: layer -> the layers (or modules, dotted) it may import besides itself and FOUNDATION
ALLOWED: dict[str, tuple[str, ...]] = {
    "definitions": (),
    "linux": (),
    "rpc": (),
    "db": ("definitions",),
    "ipam": ("definitions", "db"),
    "metadata": ("linux", "rpc"),
    # OVN's databases: their connections and names, for the server and the agents
    "ovn": (),
    "agents": ("rpc", "linux", "metadata", "ovn"),
    "plugins": ("definitions", "ipam", "db", "rpc", "ovn"),
    "services": ("definitions", "ipam", "db", "rpc", "ovn", *PLUGIN_FRAMEWORK),
    # the API reads the collection query's shape; the rest of db is the plugins'
    "api": ("plugins", "services", "definitions", "neutrino.db.query"),
}
#: layers that wire everything together
TOP = frozenset({"cmd", "cli"})

#: imports that still run the wrong way, each to be removed; the test below
#: fails once one of them is gone, so the list only shrinks
NOT_YET: frozenset[tuple[str, str]] = frozenset()


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(path: Path) -> set[str]:
    """Absolute names of the neutrino modules ``path`` imports (relative
    imports resolved; ``from a import b`` counts as ``a``)."""
    found = set()
    package = module_name(path).rsplit(".", 1)[0] if path.name != "__init__.py" \
        else module_name(path)
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                found.add(f"{base}.{node.module}" if node.module else base)
            elif node.module:
                found.add(node.module)
    return {name for name in found if name == "neutrino" or name.startswith("neutrino.")}


def layer_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def allowed(importer: str, name: str) -> bool:
    mine, theirs = layer_of(importer), layer_of(name)
    if theirs in ("", mine) or mine in TOP:
        return True
    if mine in FOUNDATION:
        return theirs in FOUNDATION
    if theirs in FOUNDATION:
        return True
    rules = ALLOWED.get(mine)
    if rules is None:
        return False  # a new layer: say in ALLOWED what it may import
    return any(rule == theirs if "." not in rule
               else name == rule or name.startswith(rule + ".") for rule in rules)


def wrong_imports() -> set[tuple[str, str]]:
    return {(module_name(path), name)
            for path in sorted(ROOT.rglob("*.py"))
            for name in imported(path)
            if not allowed(module_name(path), name)}


def test_no_import_runs_up_the_layers():
    wrong = wrong_imports() - NOT_YET
    assert not wrong, "\n".join(f"{a} imports {b}" for a, b in sorted(wrong))


def test_the_list_of_known_wrong_imports_only_shrinks():
    fixed = NOT_YET - wrong_imports()
    assert not fixed, f"no longer imported, take off NOT_YET: {sorted(fixed)}"


def test_every_layer_has_rules():
    layers = {layer_of(module_name(p)) for p in ROOT.rglob("*.py")} - {""}
    assert not layers - set(ALLOWED) - FOUNDATION - TOP


def test_the_agents_and_the_host_seam_import_nothing_of_the_server():
    server = ("plugins", "services", "db", "api", "cmd", "ipam", "definitions")
    wrong = {(module_name(path), name)
             for layer in ("agents", "linux", "rpc", "metadata")
             for path in sorted((ROOT / layer).rglob("*.py"))
             for name in imported(path) if layer_of(name) in server}
    assert not wrong, sorted(wrong)


def test_the_rules_catch_an_import_up_the_layers(tmp_path):
    """The check itself can fail: an agent importing ML2 is caught."""
    assert not allowed("neutrino.agents.dhcp", "neutrino.plugins.ml2.dhcp_rpc")
    assert not allowed("neutrino.rpc.server", "neutrino.plugins.base")
    assert not allowed("neutrino.definitions.port", "neutrino.db.models")
    assert not allowed("neutrino.services.secgroups.plugin", "neutrino.plugins.ml2.api")
    assert not allowed("neutrino.api.tags", "neutrino.db.tags")
    assert allowed("neutrino.services.l3.plugin", "neutrino.plugins.base")
    assert allowed("neutrino.agents.dhcp", "neutrino.rpc.contracts.dhcp")
