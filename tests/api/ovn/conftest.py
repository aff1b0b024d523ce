"""The core API tests again, on a server whose ML2 and routers write into OVN.

Each module here imports the tests of one module of ``tests/api``; this
``server`` fixture overrides the shared one for them: SQLite, ML2's ``ovn``
mechanism driver and the ``ovn-router`` plugin against a real OVN central
(``tests.ovn``: its Northbound and Southbound databases and ovn-northd),
Geneve project networks. The tests are the agent backends' own, unchanged:
the API behaves the same whichever backend realises it. At the end
``neutrino-ovn-db-sync`` must find the Northbound database in step with every
change they made."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest

from tests.conftest import SERVER_EXTRA
from tests.harness import Server, start_server
from tests.ovn import OvnCentral, ovn_central, skip_unless_ovn

#: the shared servers' plugins, with ML2 writing into OVN; an underlay of 1558
#: bytes leaves Geneve networks the 1500 the tests know from local ones
OVN_EXTRA = "global_physnet_mtu = 1558\n" + SERVER_EXTRA.replace(
    "service_plugins = router,", "service_plugins = ovn-router,").replace(
    "[ml2]\n", "[ml2]\nmechanism_drivers = ovn\ntenant_network_types = geneve\n"
) + "[ml2_type_geneve]\nvni_ranges = 1:10000\n"


@pytest.fixture(scope="session")
def central(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OvnCentral]:
    skip_unless_ovn()
    with ovn_central(tmp_path_factory.mktemp("ovn-central")) as central:
        yield central


@pytest.fixture(scope="session")
def server(central: OvnCentral, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp("server-ovn")
    srv = start_server(tmp, f"sqlite:///{tmp / 'neutrino.db'}", auth="trusted_headers",
                       extra=OVN_EXTRA + f"[ovn]\novn_nb_connection = {central.nb}\n"
                                         f"ovn_sb_connection = {central.sb}\n")
    srv.backend = "sqlite"
    yield srv
    # whatever the tests did, the Northbound database followed every change
    sync = subprocess.run([sys.executable, "-m", "neutrino.cmd.ovn_db_sync", "--config-file",
                           str(srv.conf), "--mode", "log"], capture_output=True, text=True,
                          timeout=120)
    srv.stop()
    assert sync.returncode == 0, f"Northbound out of step:\n{sync.stdout}{sync.stderr}"
