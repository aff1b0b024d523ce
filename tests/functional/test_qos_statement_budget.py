"""The qos extension driver's cost on the hot API calls: what it adds to the
statement budget (tests/functional/test_statement_budget.py) when loaded, for
resources without a policy; without it nothing changes (that test's budget)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from neutrino.cmd.server import build_app, load_config
from neutrino.db import migrate
from tests.functional.test_statement_budget import BUDGET, CONFIG, Counter, measured

QOS_CONFIG = CONFIG.replace("service_plugins = router,port_forwarding",
                            "service_plugins = router,port_forwarding,qos").replace(
    "extension_drivers = port_security,dns", "extension_drivers = port_security,dns,qos")

#: operation -> statements the qos driver adds: one read of a port's or a list's
#: policies (whatever its length); a network create, its project's default policy
ADDED = {"network create": 1, "port create": 1, "port show": 1, "port update": 1, "port delete": 1,
         "network list": 1, "port list": 1}


@pytest.fixture(scope="module")
def counter(tmp_path_factory) -> Iterator[Counter]:
    tmp = tmp_path_factory.mktemp("qos-budget")
    url = f"sqlite:///{tmp / 'neutrino.db'}"
    assert "qos" in QOS_CONFIG
    (tmp / "neutrino.conf").write_text(QOS_CONFIG.format(tmp=tmp, url=url))
    migrate.upgrade(url)
    app = build_app(load_config([str(tmp / "neutrino.conf")]), sync=True)
    yield Counter(app)
    app.on_shutdown()


def test_the_qos_driver_adds_one_statement_per_read(counter: Counter) -> None:
    found = {name: (len(statements), txns) for name, statements, txns in measured(counter)}
    expected = {name: (BUDGET[name][0] + ADDED.get(name, 0), BUDGET[name][1])
                for name in found}
    assert found == expected
