"""ML2 type drivers against a real (SQLite) database: ranges, allocation, MTU."""

import pytest

from neutrino import config
from neutrino import exceptions as exc
from neutrino.db import migrate
from neutrino.db.engine import Database
from neutrino.plugins.ml2.config import OPTION_GROUPS
from neutrino.plugins.ml2.drivers.errors import (
    FlatNetworkInUse,
    NoNetworkAvailable,
    TunnelIdInUse,
    VlanIdInUse,
)
from neutrino.plugins.ml2.drivers.type_flat import FlatTypeDriver
from neutrino.plugins.ml2.drivers.type_local import LocalTypeDriver
from neutrino.plugins.ml2.drivers.type_tunnel import (
    GeneveTypeDriver,
    GreTypeDriver,
    VxlanTypeDriver,
)
from neutrino.plugins.ml2.drivers.type_vlan import VlanTypeDriver
from neutrino.plugins.ml2.types import TypeManager

DRIVERS = (LocalTypeDriver, FlatTypeDriver, VlanTypeDriver, VxlanTypeDriver, GreTypeDriver,
           GeneveTypeDriver)


def make_conf(tmp_path, text: str) -> config.Config:
    path = tmp_path / f"ml2-{abs(hash(text))}.conf"
    path.write_text(text)
    conf = config.load([str(path)])
    conf.register(OPTION_GROUPS)
    return conf


def make_manager(conf, tenant=("vxlan",)) -> TypeManager:
    return TypeManager({d.network_type: d(conf) for d in DRIVERS}, list(tenant),
                       conf.DEFAULT.global_physnet_mtu)


@pytest.fixture
def db(tmp_path):
    url = f"sqlite:///{tmp_path / 'ml2.db'}"
    migrate.upgrade(url)
    database = Database(url)
    yield database
    database.dispose()


BASE = """
[ml2_type_vxlan]
vni_ranges = 100:104
[ml2_type_vlan]
network_vlan_ranges = physnet1:10:11,physnet2
[ml2_type_flat]
flat_networks = physnet1,physnet2
"""


def test_tenant_vnis_are_distinct_until_the_range_is_used_up(tmp_path, db):
    manager = make_manager(make_conf(tmp_path, BASE))
    db.write(manager.sync_allocations)
    taken = [db.write(manager.allocate_tenant_segment)["segmentation_id"] for _ in range(5)]
    assert sorted(taken) == [100, 101, 102, 103, 104]
    with pytest.raises(NoNetworkAvailable):
        db.write(manager.allocate_tenant_segment)
    db.write(lambda c: manager.release_segment(c, {"network_type": "vxlan",
                                                   "segmentation_id": 102}))
    assert db.write(manager.allocate_tenant_segment)["segmentation_id"] == 102


def test_ranges_shrink_without_losing_allocated_ids(tmp_path, db):
    manager = make_manager(make_conf(tmp_path, BASE))
    db.write(manager.sync_allocations)
    held = db.write(lambda c: manager.reserve_provider_segment(
        c, {"network_type": "vxlan", "segmentation_id": 104}))
    assert held["segmentation_id"] == 104
    smaller = make_manager(make_conf(tmp_path, BASE.replace("100:104", "100:101")))
    db.write(smaller.sync_allocations)
    with pytest.raises(TunnelIdInUse):  # 104 is outside the ranges now, but still taken
        db.write(lambda c: smaller.reserve_provider_segment(
            c, {"network_type": "vxlan", "segmentation_id": 104}))
    got = {db.write(smaller.allocate_tenant_segment)["segmentation_id"] for _ in range(2)}
    assert got == {100, 101}
    with pytest.raises(NoNetworkAvailable):
        db.write(smaller.allocate_tenant_segment)
    # released outside the ranges, the id is forgotten rather than offered again
    db.write(lambda c: smaller.release_segment(c, {"network_type": "vxlan",
                                                   "segmentation_id": 104}))
    with pytest.raises(NoNetworkAvailable):
        db.write(smaller.allocate_tenant_segment)


def test_tenant_types_fall_through_in_order(tmp_path, db):
    manager = make_manager(make_conf(tmp_path, BASE), tenant=("vlan", "vxlan"))
    db.write(manager.sync_allocations)
    types = [db.write(manager.allocate_tenant_segment)["network_type"] for _ in range(3)]
    assert types == ["vlan", "vlan", "vxlan"]


def test_provider_vlan_and_flat(tmp_path, db):
    manager = make_manager(make_conf(tmp_path, BASE))
    db.write(manager.sync_allocations)
    seg = {"network_type": "vlan", "physical_network": "physnet2", "segmentation_id": 300}
    db.write(lambda c: manager.reserve_provider_segment(c, dict(seg)))
    with pytest.raises(VlanIdInUse):
        db.write(lambda c: manager.reserve_provider_segment(c, dict(seg)))
    partial = db.write(lambda c: manager.reserve_provider_segment(
        c, {"network_type": "vlan", "physical_network": "physnet1"}))
    assert partial["segmentation_id"] in (10, 11)
    flat = {"network_type": "flat", "physical_network": "physnet1"}
    db.write(lambda c: manager.reserve_provider_segment(c, dict(flat)))
    with pytest.raises(FlatNetworkInUse):
        db.write(lambda c: manager.reserve_provider_segment(c, dict(flat)))
    db.write(lambda c: manager.release_segment(c, {**flat, "segmentation_id": None}))
    db.write(lambda c: manager.reserve_provider_segment(c, dict(flat)))


@pytest.mark.parametrize("segment,message", [
    ({"network_type": "nope"}, "network_type value 'nope' not supported"),
    ({"network_type": "local", "segmentation_id": 3}, "segmentation_id prohibited"),
    ({"network_type": "flat"}, "physical_network required"),
    ({"network_type": "flat", "physical_network": "other"}, "unknown for flat"),
    ({"network_type": "vlan", "physical_network": "other", "segmentation_id": 5},
     "unknown for VLAN"),
    ({"network_type": "vlan", "physical_network": "physnet1", "segmentation_id": 4095},
     "out of range (1 through 4094)"),
    ({"network_type": "vxlan", "segmentation_id": 2 ** 24}, "out of range"),
    ({"network_type": "geneve", "physical_network": "physnet1"}, "specified for geneve"),
])
def test_provider_validation(tmp_path, segment, message):
    manager = make_manager(make_conf(tmp_path, BASE))
    with pytest.raises(exc.InvalidInput, match=message.replace("(", r"\(").replace(")", r"\)")):
        manager.validate_provider_segment(segment)


def test_mtus(tmp_path):
    manager = make_manager(make_conf(tmp_path, BASE + "[ml2]\nphysical_network_mtus = "
                                                      "physnet2:1400\n"))
    mtu = manager.network_mtu
    assert mtu([{"network_type": "vxlan"}]) == 1450
    assert mtu([{"network_type": "gre"}]) == 1458
    assert mtu([{"network_type": "geneve"}]) == 1442
    assert mtu([{"network_type": "local"}]) == 1500
    assert mtu([{"network_type": "vlan", "physical_network": "physnet2"}]) == 1400
    assert mtu([{"network_type": "flat", "physical_network": "physnet2"},
                {"network_type": "vxlan"}]) == 1400
    v6 = make_manager(make_conf(tmp_path, BASE + "[ml2]\npath_mtu = 9000\n"
                                                 "overlay_ip_version = 6\n"))
    assert v6.network_mtu([{"network_type": "vxlan"}]) == 1430  # global 1500 still caps


def test_unknown_tenant_type_is_refused(tmp_path):
    conf = make_conf(tmp_path, BASE)
    with pytest.raises(ValueError, match="tenant_network_types"):
        TypeManager({"local": LocalTypeDriver(conf)}, ["vxlan"], 1500)
