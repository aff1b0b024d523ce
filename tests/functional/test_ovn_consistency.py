"""ML2/OVN when the Northbound database is away, and catching up once it is back.

A real OVN central (``tests.ovn``) and a server writing into it; no chassis:
only the databases matter here. Writes made while the Northbound database
cannot be reached fail with 503 and change nothing; a change committed whose
write OVN missed is written by the maintenance task once OVN answers again;
rows deleted behind the server's back come back after a restart; and an older
revision never overwrites a newer one.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from neutrino.ovn import names
from neutrino.ovn.commands import Key, WriteRow
from neutrino.ovn.northbound import Northbound
from tests.harness import ApiClient, Server, expect_error, start_server, wait_until
from tests.ovn import OvnCentral, ovn_central, skip_unless_ovn

pytestmark = pytest.mark.slow


@dataclass
class Lab:
    tmp: Path
    central: OvnCentral
    server: Server
    api: ApiClient

    def restart(self) -> None:
        self.server.stop()
        self.server = start_server(self.tmp, self.server.db_url,
                                   config_text=self.server.conf.read_text(),
                                   port=int(self.server.url.rsplit(":", 1)[1]))
        self.api = self.server.client("p1")

    def nb_port_name(self, port_id: str) -> str | None:
        found = self.central.nbctl("--bare", "--columns=external_ids", "find",
                                   "Logical_Switch_Port", f"name={port_id}")
        for item in found.split():
            if item.startswith(f"{names.PORT_NAME}="):
                return item.split("=", 1)[1].strip('"')
        return None


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[Lab]:
    skip_unless_ovn()
    with ovn_central(tmp_path / "central") as central:
        server = start_server(tmp_path, f"sqlite:///{tmp_path / 'neutrino.db'}", extra=(
            "service_plugins = ovn-router\n"
            "[ml2]\nmechanism_drivers = ovn\ntenant_network_types = geneve\n"
            "[ml2_type_geneve]\nvni_ranges = 1:100\n"
            f"[ovn]\novn_nb_connection = {central.nb}\novn_sb_connection = {central.sb}\n"
            "ovsdb_connection_timeout = 3\n"))
        lab = Lab(tmp_path, central, server, server.client("p1"))
        try:
            yield lab
        finally:
            lab.server.stop()


def test_writes_fail_with_503_while_the_northbound_db_is_down(lab: Lab):
    network = lab.api.network(name="before")
    lab.api.subnet(network["id"], "10.40.0.0/24")
    port = lab.api.port(network["id"], name="p")
    lab.central.stop_nb()
    for resp in (
            lab.api.post("/v2.0/networks", json={"network": {"name": "during"}}),
            lab.api.post("/v2.0/ports", json={"port": {"network_id": network["id"]}}),
            lab.api.put(f"/v2.0/ports/{port['id']}", json={"port": {"name": "renamed"}}),
            lab.api.delete(f"/v2.0/networks/{network['id']}"),
            lab.api.post("/v2.0/routers", json={"router": {"name": "during"}})):
        expect_error(resp, 503, "OvnUnavailableError")
        assert "Northbound" in resp.json()["NeutronError"]["message"]
    # nothing was written: reads need no OVN
    names_now = [n["name"] for n in lab.api.get("/v2.0/networks").json()["networks"]]
    assert "during" not in names_now and "before" in names_now
    assert lab.api.show("ports", port["id"])["name"] == "p"
    assert not lab.api.get("/v2.0/routers").json()["routers"]
    assert len(lab.api.get("/v2.0/ports", params={"network_id": network["id"]})
               .json()["ports"]) == 1
    lab.central.start_nb()
    # the server reconnects by itself and writes again
    made = wait_until(lambda: lab.api.post("/v2.0/networks", json={"network": {
        "name": "after"}}).status_code == 201, 30, "a write once OVN is back")
    assert made
    assert lab.central.nbctl("--bare", "--columns=name", "find", "Logical_Switch",
                             'external_ids:"neutron:network_name"=after')


def test_a_write_ovn_missed_is_made_once_it_answers_again(lab: Lab):
    network = lab.api.network(name="n")
    port = lab.api.port(network["id"], name="old")
    assert lab.nb_port_name(port["id"]) == "old"
    pid = lab.central.servers["nb"].pid
    assert pid is not None
    os.kill(pid, signal.SIGSTOP)  # it hangs: the server still thinks it is there
    try:
        resp = lab.api.put(f"/v2.0/ports/{port['id']}", json={"port": {"name": "new"}})
        assert resp.status_code == 200, resp.text  # committed: OVN is told later
    finally:
        os.kill(pid, signal.SIGCONT)
    assert lab.api.show("ports", port["id"])["name"] == "new"
    wait_until(lambda: lab.nb_port_name(port["id"]) == "new", 30,
               "the maintenance task to write the missed update")


def test_rows_deleted_behind_the_servers_back_come_back_after_a_restart(lab: Lab):
    network = lab.api.network(name="n")
    subnet = lab.api.subnet(network["id"], "10.41.0.0/24")
    port = lab.api.port(network["id"], name="p")
    router = lab.api.create("routers", name="r")
    resp = lab.api.put(f"/v2.0/routers/{router['id']}/add_router_interface",
                       json={"subnet_id": subnet["id"]})
    assert resp.status_code == 200, resp.text
    lrp, router_name = f"lrp-{resp.json()['port_id']}", f"neutron-{router['id']}"
    assert lrp in lab.central.nbctl("lrp-list", router_name)
    lab.central.nbctl("lsp-del", port["id"])
    lab.central.nbctl("lr-del", router_name)
    lab.central.nbctl("ls-add", "neutron-00000000-0000-4000-8000-000000000000")  # no network
    assert lab.nb_port_name(port["id"]) is None
    lab.restart()
    wait_until(lambda: lab.nb_port_name(port["id"]) == "p", 60,
               "the maintenance task to write the port again")

    def router_ports() -> str:
        """lrp-list fails on a missing router, and the port may come back first."""
        if router_name not in lab.central.nbctl("--bare", "--columns=name", "list",
                                                "Logical_Router"):
            return ""
        return lab.central.nbctl("lrp-list", router_name)

    wait_until(lambda: lrp in router_ports(), 60, "the router and its port back")
    wait_until(lambda: "00000000" not in lab.central.nbctl("ls-list"), 60,
               "the switch of no network removed")


def test_an_older_revision_never_overwrites_a_newer_one(lab: Lab):
    nb = Northbound(lab.central.nb)
    nb.start()
    try:
        nb.wait_connected(10)
        key = Key("Logical_Switch", "name", "neutron-revisions")

        def write(revision: int, label: str) -> str:
            return nb.transact([WriteRow(key, {"external_ids": {
                names.REVISION: str(revision), names.NETWORK_NAME: label}}, revision)],
                "a test write")[0]

        def held() -> dict[str, str]:
            rows = nb.select("Logical_Switch", [["name", "==", key.value]], ("external_ids",))
            assert len(rows) == 1, rows
            return rows[0]["external_ids"]

        assert write(5, "five") == "written"
        assert write(3, "three") == "stale"
        assert write(5, "five again") == "written"  # the same revision may repair
        assert held()[names.NETWORK_NAME] == "five again" and held()[names.REVISION] == "5"

        # writers racing (as API workers do): whatever the order they commit
        # in, the newest revision is what stays, in one row
        with ThreadPoolExecutor(8) as pool:
            results = list(pool.map(lambda revision: write(revision, f"r{revision}"),
                                    range(6, 46)))
        assert set(results) <= {"written", "stale"} and "written" in results
        assert held()[names.REVISION] == "45" and held()[names.NETWORK_NAME] == "r45"
    finally:
        nb.stop()
