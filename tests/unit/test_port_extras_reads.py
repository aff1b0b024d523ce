"""The port extras' drivers read a page of ports with one query each, not one per port."""

import datetime

import pytest
from sqlalchemy import create_engine, event

from neutrino import config
from neutrino.db import models
from neutrino.db.query import Page
from neutrino.plugins.ml2.drivers.ext_allowed_address_pairs import (
    AllowedAddressPairsExtensionDriver,
)
from neutrino.plugins.ml2.drivers.ext_dns import DnsExtensionDriver
from neutrino.plugins.ml2.drivers.ext_extra_dhcp_opt import ExtraDhcpOptExtensionDriver

PORTS = 30
WHEN = datetime.datetime(2026, 1, 1)


def _standard(item_id: str) -> dict:
    return {"id": item_id, "project_id": "p", "name": "", "description": "",
            "created_at": WHEN, "updated_at": WHEN, "revision_number": 1}


@pytest.fixture
def engine():
    engine = create_engine("sqlite://")
    models.metadata.create_all(engine)
    yield engine
    engine.dispose()


@pytest.mark.parametrize("driver_class", [
    AllowedAddressPairsExtensionDriver, ExtraDhcpOptExtensionDriver, DnsExtensionDriver])
def test_one_query_for_a_page_of_ports(engine, tmp_path, driver_class):
    conf_file = tmp_path / "n.conf"
    conf_file.write_text("[DEFAULT]\ndns_domain = example.org.\n")
    driver = driver_class(config.load([str(conf_file)]))
    views = []
    with engine.begin() as conn:
        conn.execute(models.networks.insert().values(
            **_standard("net"), status="ACTIVE", admin_state_up=True, mtu=1500))
        for n in range(PORTS):
            view = {"id": f"port-{n}", "network_id": "net",
                    "mac_address": f"fa:16:3e:00:00:{n:02x}",
                    "fixed_ips": [{"subnet_id": "s", "ip_address": f"10.0.0.{n + 2}"}]}
            conn.execute(models.ports.insert().values(
                **_standard(view["id"]), network_id="net", mac_address=view["mac_address"],
                admin_state_up=True, status="DOWN"))
            data = {"allowed_address_pairs": [{"ip_address": f"10.1.0.{n}"}],
                    "extra_dhcp_opts": [{"opt_name": "tftp-server", "opt_value": str(n),
                                         "ip_version": 4}],
                    "dns_name": f"host{n}"}
            driver.process_create_port(conn, data, view)
            views.append(view)

    statements = []
    event.listen(engine, "before_cursor_execute",
                 lambda *args: statements.append(args[2]))
    fresh = [{k: view[k] for k in ("id", "network_id", "mac_address", "fixed_ips")}
             for view in views]
    with engine.connect() as conn:
        driver.extend_ports(conn, fresh, Page.of([v["id"] for v in fresh]))
    assert len(statements) == 1, statements
    assert fresh == views  # what was made is what is read back, port by port
