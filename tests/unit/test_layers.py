"""Imports point one way (DESIGN.md): the agents and the host seam import
nothing of the server; what both sides share lives in ``neutrino.rpc``."""

from __future__ import annotations

import ast
from pathlib import Path

import neutrino

ROOT = Path(neutrino.__file__).parent
SERVER = ("neutrino.plugins", "neutrino.services", "neutrino.db", "neutrino.api",
          "neutrino.cmd", "neutrino.ipam", "neutrino.definitions")


def imported(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
    return found


def test_agents_and_the_host_seam_import_no_server_code():
    wrong = {f"{path.relative_to(ROOT.parent)}: {name}"
             for layer in ("agents", "linux")
             for path in sorted((ROOT / layer).rglob("*.py"))
             for name in imported(path)
             if name == "neutrino.services" or name.startswith(tuple(
                 f"{server}." for server in SERVER)) or name in SERVER}
    assert not wrong, sorted(wrong)
