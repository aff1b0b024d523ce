"""The ``e2e`` marker: tests that need root, because they make namespaces,
devices and daemons on this host. They all reach the host through
``tests.dataplane`` (its root check, runner and sandboxes), so a test module
that imports from it is marked as a whole; ``pytest -m "not e2e"`` is then a
run that needs no root and no host packages."""

from __future__ import annotations

import pytest

DATAPLANE = "tests.dataplane"


def _uses_dataplane(module: object) -> bool:
    return any(getattr(value, "__module__", None) == DATAPLANE
               for value in vars(module).values())


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        module = getattr(item, "module", None)
        if module is not None and _uses_dataplane(module):
            item.add_marker(pytest.mark.e2e)
