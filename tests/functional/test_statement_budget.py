"""The performance budget: SQL statements per hot API call, all extensions loaded.

Wall-clock tests are noise on a shared machine; statement counts are not.
Each hot operation (port create/show/update/delete, network and subnet create,
lists) is run in process against SQLite with the extension set a typical
cloud loads, and the statements it sends are counted. A change that adds one
fails here until BUDGET says so: the next service plugin cannot quietly slow
port creation. A change that saves one fails too, so the budget stays tight
(lower it). Lists are counted at two sizes: their count must not grow with
the number of rows (no N+1, no chunked IN lists).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import orjson
import pytest
from sqlalchemy import event

from neutrino.api.app import ApiApp
from neutrino.cmd.server import build_app, load_config
from neutrino.db import migrate
from neutrino.db.query import FEW

CONFIG = ("[DEFAULT]\nstate_path = {tmp}\nservice_plugins = router,port_forwarding\n"
          "[quotas]\nquota_port = 10000\n"
          "[ml2]\nextension_drivers = port_security,dns\n"
          "[database]\nconnection = {url}\n")

#: operation -> (statements, transactions); a transaction's BEGIN and COMMIT
#: are statements (round trips) too
BUDGET: dict[str, tuple[int, int]] = {
    "network create": (7, 1),
    "subnet create": (12, 2),
    "port create": (9, 1),
    "port show": (11, 1),
    "port update": (17, 1),
    "port delete": (19, 1),
    "network list": (11, 1),
    "subnet list": (5, 1),
    "port list": (11, 1),
    "port list of id, fixed_ips": (4, 1),
}


class Counter:
    """Counts what SQLite itself runs (its trace callback), whichever layer sent it."""

    def __init__(self, app: ApiApp):
        self.app = app
        self.statements: list[str] = []
        engine = app.router.controllers["ports"].plugin.db.engine
        engine.dispose()  # every connection from now on is traced
        event.listen(engine, "connect", self._trace)

    def _trace(self, dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.set_trace_callback(self._statement)

    def _statement(self, statement: str) -> None:
        text = " ".join(statement.split())
        # SQLite reports each foreign key action (ON DELETE CASCADE) as the
        # statement again, at once: no round trip of ours
        if not self.statements or self.statements[-1] != text:
            self.statements.append(text)

    def call(self, method: str, path: str, body: Any = None, query: str = "") -> Any:
        scope = {"method": method, "path": path, "query_string": query.encode(),
                 "headers": [(b"x-project-id", b"budget")], "scheme": "http",
                 "server": ("127.0.0.1", 9696)}
        status, _, payload = self.app.handle(scope, orjson.dumps(body) if body else b"")
        assert status < 300, payload
        return orjson.loads(payload) if payload else None

    def count(self, work: Callable[[], Any]) -> tuple[Any, list[str], int]:
        self.statements = []
        result = work()
        found = [s for s in self.statements if not s.startswith("PRAGMA")]
        return result, found, sum(s.startswith("BEGIN") for s in found)


@pytest.fixture(scope="module")
def counter(tmp_path_factory) -> Iterator[Counter]:
    tmp = tmp_path_factory.mktemp("budget")
    url = f"sqlite:///{tmp / 'neutrino.db'}"
    (tmp / "neutrino.conf").write_text(CONFIG.format(tmp=tmp, url=url))
    migrate.upgrade(url)
    app = build_app(load_config([str(tmp / "neutrino.conf")]), sync=True)
    yield Counter(app)
    app.on_shutdown()


def measured(counter: Counter) -> Iterator[tuple[str, list[str], int]]:
    """Each budgeted operation, once warm (the project's default security group
    exists, as it does after a project's first call)."""
    def net() -> dict:
        return counter.call("POST", "/v2.0/networks", {"network": {"name": "n"}})["network"]

    def subnet(network_id: str, cidr: str) -> dict:
        return counter.call("POST", "/v2.0/subnets", {"subnet": {
            "network_id": network_id, "cidr": cidr, "ip_version": 4}})["subnet"]

    def port(network_id: str) -> dict:
        return counter.call("POST", "/v2.0/ports", {"port": {"network_id": network_id}})["port"]

    first = net()
    subnet(first["id"], "10.1.0.0/16")
    port(first["id"])
    network, statements, txns = counter.count(net)
    yield "network create", statements, txns
    _, statements, txns = counter.count(lambda: subnet(network["id"], "10.2.0.0/16"))
    yield "subnet create", statements, txns
    created, statements, txns = counter.count(lambda: port(network["id"]))
    yield "port create", statements, txns
    path = f"/v2.0/ports/{created['id']}"
    _, statements, txns = counter.count(lambda: counter.call("GET", path))
    yield "port show", statements, txns
    _, statements, txns = counter.count(
        lambda: counter.call("PUT", path, {"port": {"name": "renamed"}}))
    yield "port update", statements, txns
    _, statements, txns = counter.count(lambda: counter.call("DELETE", path))
    yield "port delete", statements, txns
    lists = ("networks", "subnets", "ports")
    few = {name: counter.count(lambda name=name: counter.call("GET", f"/v2.0/{name}"))
           for name in lists}
    for n in range(30):
        port(subnet(net()["id"], f"10.{10 + n}.0.0/24")["network_id"])
    for _ in range(FEW):  # a long page is read by its condition, not by its ids
        port(network["id"])
    for name in lists:
        _, many, txns = counter.count(lambda name=name: counter.call("GET", f"/v2.0/{name}"))
        assert len(many) == len(few[name][1]), f"a {name} list's statements grow with its rows"
        yield f"{name[:-1]} list", many, txns
    _, few_fields, txns = counter.count(
        lambda: counter.call("GET", "/v2.0/ports", query="fields=id&fields=fixed_ips"))
    yield "port list of id, fixed_ips", few_fields, txns


def test_hot_operations_stay_within_their_statement_budget(counter: Counter) -> None:
    found = {name: (statements, txns) for name, statements, txns in measured(counter)}
    report = "\n".join(f"{name}: {len(s)} statements, {t} transactions (budget "
                       f"{BUDGET[name][0]}, {BUDGET[name][1]})\n    " + "\n    ".join(s)
                       for name, (s, t) in found.items())
    counts = {name: (len(s), t) for name, (s, t) in found.items()}
    assert counts == {name: BUDGET[name] for name in counts}, report


@pytest.fixture(scope="module")
def trunk_counter(tmp_path_factory) -> Iterator[Counter]:
    tmp = tmp_path_factory.mktemp("budget-trunk")
    url = f"sqlite:///{tmp / 'neutrino.db'}"
    (tmp / "neutrino.conf").write_text(CONFIG.format(tmp=tmp, url=url).replace(
        "service_plugins = router,port_forwarding", "service_plugins = router,trunk"))
    migrate.upgrade(url)
    app = build_app(load_config([str(tmp / "neutrino.conf")]), sync=True)
    yield Counter(app)
    app.on_shutdown()


def test_trunk_details_cost_a_port_read_one_statement(trunk_counter: Counter) -> None:
    """With the trunk plugin, a port list or show reads the trunks of its ports in
    one more statement, however many ports and trunks; a list of other fields none."""
    c = trunk_counter
    network = c.call("POST", "/v2.0/networks", {"network": {"name": "n"}})["network"]
    c.call("POST", "/v2.0/subnets", {"subnet": {"network_id": network["id"],
                                                "cidr": "10.1.0.0/16", "ip_version": 4}})

    def port() -> dict:
        return c.call("POST", "/v2.0/ports", {"port": {"network_id": network["id"]}})["port"]

    def trunk(subports: int) -> None:
        c.call("POST", "/v2.0/trunks", {"trunk": {"port_id": port()["id"], "sub_ports": [
            {"port_id": port()["id"], "segmentation_type": "vlan", "segmentation_id": n + 1}
            for n in range(subports)]}})

    trunk(1)
    _, few, _ = c.count(lambda: c.call("GET", "/v2.0/ports"))
    for _ in range(FEW // 4):
        trunk(3)
    listed, many, _ = c.count(lambda: c.call("GET", "/v2.0/ports"))
    assert sum("trunk_details" in p for p in listed["ports"]) == FEW // 4 + 1
    assert len(few) == len(many) == BUDGET["port list"][0] + 1, many
    _, shown, _ = c.count(lambda: c.call("GET", f"/v2.0/ports/{listed['ports'][0]['id']}"))
    assert len(shown) == BUDGET["port show"][0] + 1, shown
    _, fields, _ = c.count(
        lambda: c.call("GET", "/v2.0/ports", query="fields=id&fields=fixed_ips"))
    assert len(fields) == BUDGET["port list of id, fixed_ips"][0], fields
