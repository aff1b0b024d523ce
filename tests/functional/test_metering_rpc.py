"""What the routers' sync data carries of metering labels, from a real database."""

from __future__ import annotations

import pytest
from sqlalchemy import event

from neutrino.context import Context
from neutrino.rpc.contracts.l3 import METERING_LABELS
from tests.conftest import BACKENDS
from tests.functional.test_l3_rpc import CTX, Cloud, agent, topology  # noqa: F401

ADMIN = Context.admin()


def _cloud(backend, tmp_path_factory):
    from neutrino.cmd.server import build_app, load_config
    from neutrino.db import migrate
    from tests.harness import create_database

    tmp = tmp_path_factory.mktemp(f"metering-rpc-{backend}")
    url, drop = create_database(backend, tmp)
    path = tmp / "neutrino.conf"
    path.write_text(f"[DEFAULT]\nstate_path = {tmp}\nservice_plugins = router,metering\n"
                    f"[database]\nconnection = {url}\n"
                    "[quotas]\nquota_router = -1\nquota_floatingip = -1\n"
                    "quota_network = -1\nquota_subnet = -1\nquota_port = -1\n")
    conf = load_config([str(path)])
    migrate.upgrade(url)
    return Cloud(build_app(conf, sync=True)), drop


@pytest.fixture(scope="module", params=BACKENDS)
def cloud(request, tmp_path_factory):
    made, drop = _cloud(request.param, tmp_path_factory)
    made.metering = made.app.router.controllers["metering/metering-labels"].plugin
    yield made
    made.app.on_shutdown()
    drop()


def label(cloud, project: str, shared: bool = False, *prefixes: str) -> dict:
    made = cloud.metering.create_metering_label(ADMIN, {"project_id": project, "name": "l",
                                                        "shared": shared})
    for prefix in prefixes:
        cloud.metering.create_metering_label_rule(ADMIN, {
            "metering_label_id": made["id"], "direction": "egress",
            "remote_ip_prefix": prefix})
    return made


def test_routers_carry_their_projects_labels_and_the_shared_ones(cloud, agent):  # noqa: F811
    host = agent()
    router = topology(cloud)["router"]  # of project p1
    own = label(cloud, "p1", False, "10.0.0.0/8")
    shared = label(cloud, "p2", True)
    theirs = label(cloud, "p2", False, "192.168.0.0/16")
    [data] = cloud.rpc.sync_routers(CTX, host=host, router_ids=[router["id"]])
    carried = {item["id"]: item for item in data[METERING_LABELS]}
    assert own["id"] in carried and shared["id"] in carried and theirs["id"] not in carried
    [rule] = carried[own["id"]]["rules"]
    assert (rule["direction"], rule["remote_ip_prefix"], rule["excluded"]) == (
        "egress", "10.0.0.0/8", False)
    assert carried[shared["id"]] == {"id": shared["id"], "name": "l", "shared": True,
                                     "project_id": "p2", "rules": []}
    cloud.metering.delete_metering_label(ADMIN, own["id"])
    [data] = cloud.rpc.sync_routers(CTX, host=host, router_ids=[router["id"]])
    assert own["id"] not in {item["id"] for item in data[METERING_LABELS]}


def test_label_reads_do_not_grow_with_routers(cloud, agent):  # noqa: F811
    host = agent()
    made = [topology(cloud)["router"]["id"] for _ in range(6)]
    label(cloud, "p1", False, "10.1.0.0/16", "10.2.0.0/16")
    cloud.rpc.sync_routers(CTX, host=host, router_ids=made)  # binds their ports
    statements: list[str] = []

    def count(conn, cursor, statement, *args):
        statements.append(statement)

    engine = cloud.l3.db.engine
    event.listen(engine, "before_cursor_execute", count)
    try:
        counts = []
        for ids in (made[:2], made):
            statements.clear()
            assert all(d[METERING_LABELS] for d in cloud.rpc.sync_routers(
                CTX, host=host, router_ids=ids))
            counts.append(len(statements))
    finally:
        event.remove(engine, "before_cursor_execute", count)
    assert counts[0] == counts[1]
