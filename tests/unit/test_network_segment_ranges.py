"""Network segment ranges below the API, on SQLite: the pools a project takes
its ids from, the default ranges following the configuration, and ML2's type
manager allocating within pools (a fake ``SegmentRanges`` gives them)."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from neutrino.db import migrate, models
from neutrino.db.engine import Database
from neutrino.plugins.hooks import Hooks, IdRange, SegmentPools
from neutrino.plugins.ml2.drivers.errors import NoNetworkAvailable
from neutrino.plugins.ml2.types import TypeManager
from neutrino.services.network_segment_range import store
from tests.unit.test_ml2_types import BASE, DRIVERS, make_conf

A = models.segment_allocations


@pytest.fixture
def db(tmp_path):
    url = f"sqlite:///{tmp_path / 'ranges.db'}"
    migrate.upgrade(url)
    database = Database(url)
    yield database
    database.dispose()


@pytest.mark.parametrize("spans, holes, left", [
    ([(None, 1, 10)], [], [(None, 1, 10)]),
    ([(None, 1, 10)], [(None, 3, 4), (None, 8, 20)], [(None, 1, 2), (None, 5, 7)]),
    ([(None, 1, 10)], [(None, 0, 1), (None, 10, 10)], [(None, 2, 9)]),
    ([(None, 1, 10)], [(None, 1, 10)], []),
    ([(None, 5, 9), (None, 1, 4)], [(None, 4, 5)], [(None, 1, 3), (None, 6, 9)]),
    ([("p1", 1, 10), ("p2", 1, 10)], [("p1", 2, 9)], [("p1", 1, 1), ("p1", 10, 10),
                                                     ("p2", 1, 10)]),
    ([(None, 1, 3)], [(None, 7, 9)], [(None, 1, 3)]),
])
def test_subtract(spans, holes, left):
    assert store.subtract(spans, holes) == left


def add(conn, network_type, physnet, first, last, shared=True, project_id=None) -> str:
    return store.insert(conn, {"project_id": project_id, "shared": shared,
                               "network_type": network_type, "physical_network": physnet,
                               "minimum": first, "maximum": last})


def test_pools_are_the_projects_own_ranges_then_the_shared_less_the_others(db):
    def work(conn):
        store.follow_config(conn, {"vxlan": [(None, 100, 199)],
                                   "vlan": [("physnet1", 10, 20)]})
        add(conn, "vxlan", None, 150, 159, shared=False, project_id="mine")
        add(conn, "vxlan", None, 120, 129, shared=False, project_id="theirs")
        add(conn, "vxlan", None, 500, 509)
        add(conn, "vlan", "physnet1", 15, 16, shared=False, project_id="theirs")
        return store.pools(conn, "mine"), store.pools(conn, None)

    mine, nobodys = db.write(work)
    assert mine["vxlan"] == [[(None, 150, 159)],
                             [(None, 100, 119), (None, 130, 199), (None, 500, 509)]]
    assert mine["vlan"] == [[("physnet1", 10, 14), ("physnet1", 17, 20)]]
    # no project (a segment made through /v2.0/segments): what no project owns
    assert nobodys["vxlan"] == [[(None, 100, 119), (None, 130, 149), (None, 160, 199),
                                 (None, 500, 509)]]


def test_default_ranges_follow_the_configuration(db):
    def defaults(conn):
        return {store.span(r): r.id for r in conn.execute(
            select(store.R).where(store.R.c.default))}

    first = db.write(lambda conn: (store.follow_config(conn, {
        "vxlan": [(None, 1, 10)], "vlan": [("physnet1", 1, 5), ("physnet2", 7, 8)]}),
        defaults(conn))[1])
    assert set(first) == {("vxlan", None, 1, 10), ("vlan", "physnet1", 1, 5),
                          ("vlan", "physnet2", 7, 8)}
    # a second server's start made one twice: the next start keeps the first
    # made (ties of created_at broken by id: the copy's sorts after any uuid)
    db.write(lambda conn: conn.execute(store.R.insert().values(
        **{**dict(conn.execute(select(store.R).where(
            store.R.c.id == first[("vxlan", None, 1, 10)])).one()._mapping),
           "id": "zzzzzzzz-dup"})))
    then = db.write(lambda conn: (store.follow_config(conn, {
        "vxlan": [(None, 1, 10), (None, 20, 29)], "vlan": [("physnet1", 1, 5)]}),
        defaults(conn))[1])
    assert set(then) == {("vxlan", None, 1, 10), ("vxlan", None, 20, 29),
                         ("vlan", "physnet1", 1, 5)}
    # those still configured are the same ranges (their ids, their tags)
    assert then[("vxlan", None, 1, 10)] == first[("vxlan", None, 1, 10)]
    assert then[("vlan", "physnet1", 1, 5)] == first[("vlan", "physnet1", 1, 5)]


class FakeRanges:
    """A SegmentRanges whose ranges and pools a test sets."""

    def __init__(self, ranges: dict[str, list[IdRange]], pools: SegmentPools):
        self.ranges = ranges
        self.given = pools
        self.configured: dict[str, list[IdRange]] = {}
        self.reads = 0

    def follow_config(self, conn, configured):
        self.configured = configured
        return self.ranges

    def pools(self, conn, project_id):
        self.reads += 1
        return self.given.get(project_id, {})


def manager_with(tmp_path, ranges: FakeRanges, tenant=("vxlan",)) -> TypeManager:
    conf = make_conf(tmp_path, BASE)
    hooks = Hooks()
    hooks.segment_ranges = ranges
    return TypeManager({d.network_type: d(conf) for d in DRIVERS}, list(tenant),
                       conf.DEFAULT.global_physnet_mtu, hooks)


def free(conn, network_type="vxlan") -> list[int]:
    return sorted(conn.execute(select(A.c.segmentation_id).where(
        A.c.network_type == network_type, ~A.c.allocated)).scalars())


def test_allocation_takes_from_the_first_pool_with_a_free_id(tmp_path, db):
    ranges = FakeRanges({"vxlan": [(None, 100, 104), (None, 300, 301)],
                         "vlan": [("physnet1", 10, 11)]},
                        {"p": {"vxlan": [[(None, 300, 301)], [(None, 100, 101)]]}})
    manager = manager_with(tmp_path, ranges, tenant=("vxlan", "vlan"))
    db.write(manager.sync_allocations)
    # the configured ranges went to the ranges' plugin; the rows follow what it gave
    assert ranges.configured == {"vlan": [("physnet1", 10, 11)], "vxlan": [(None, 100, 104)],
                                 "gre": [], "geneve": []}
    assert db.write(free) == [100, 101, 102, 103, 104, 300, 301]
    taken = [db.write(lambda c: manager.allocate_tenant_segment(c, "p"))["segmentation_id"]
             for _ in range(4)]
    assert sorted(taken[:2]) == [300, 301] and sorted(taken[2:]) == [100, 101]
    assert ranges.reads == 4  # one read of the pools per network, whatever it tries
    # vxlan's pools used up: the next tenant type, whose pools (none) hold nothing
    with pytest.raises(NoNetworkAvailable):
        db.write(lambda c: manager.allocate_tenant_segment(c, "p"))
    # another project without pools gets nothing of a ranged type
    with pytest.raises(NoNetworkAvailable):
        db.write(lambda c: manager.allocate_tenant_segment(c, "q"))


def test_partial_provider_segments_take_from_the_pools(tmp_path, db):
    ranges = FakeRanges({"vlan": [("physnet1", 10, 11)]},
                        {"p": {"vlan": [[("physnet1", 11, 11)]]}})
    manager = manager_with(tmp_path, ranges)
    db.write(manager.sync_allocations)
    got = db.write(lambda c: manager.reserve_provider_segment(
        c, {"network_type": "vlan"}, "p"))
    assert (got["physical_network"], got["segmentation_id"]) == ("physnet1", 11)
    # a full request takes what it names, pools or not
    named = db.write(lambda c: manager.reserve_provider_segment(
        c, {"network_type": "vlan", "physical_network": "physnet2", "segmentation_id": 7},
        "p"))
    assert named["segmentation_id"] == 7
    assert ranges.reads == 1


def test_released_ids_stay_free_and_ranges_change_within_spans(tmp_path, db):
    ranges = FakeRanges({"vxlan": [(None, 100, 102)]}, {"p": {"vxlan": [[(None, 100, 102)]]}})
    manager = manager_with(tmp_path, ranges)
    db.write(manager.sync_allocations)
    held = db.write(lambda c: manager.reserve_provider_segment(
        c, {"network_type": "vxlan", "segmentation_id": 900}))
    # outside every range, yet kept free: the pools decide what may be taken
    db.write(lambda c: manager.release_segment(c, held))
    assert db.write(free) == [100, 101, 102, 900]
    # a range made (500-501) and one shrunk (100-102 to 100-100): only those spans move
    db.write(lambda c: manager.follow_ranges(
        c, "vxlan", [(None, 100, 100), (None, 500, 501)],
        [(None, 500, 501), (None, 100, 102)]))
    assert db.write(free) == [100, 500, 501, 900]
    # a type the manager does not know (its driver unloaded) is left alone
    db.write(lambda c: manager.follow_ranges(c, "gone", [], [(None, 1, 2)]))
