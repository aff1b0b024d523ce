"""The flavors plugin's seams for other services, which no API call reaches:
``next_provider`` (which provider's driver serves a flavor) and the
``before_flavor_delete`` hook (a service that uses a flavor vetoes its delete).
Run against a throwaway SQLite database with the real tables."""

from __future__ import annotations

from typing import Any

import pytest

from neutrino import config
from neutrino.context import Context
from neutrino.db import models
from neutrino.db.engine import Database
from neutrino.db.quota import QuotaEngine
from neutrino.definitions import flavors as fdef
from neutrino.plugins.base import Environment
from neutrino.plugins.hooks import Hooks
from neutrino.plugins.providers import Provider, ServiceProviders
from neutrino.services.flavors import FlavorsPlugin

ADMIN = Context.admin()
GOLD = Provider("L3_ROUTER_NAT", "gold", "tests.fakes.routers.Gold", False, object)
SILVER = Provider("L3_ROUTER_NAT", "silver", "tests.fakes.routers.Silver", True, object)


@pytest.fixture
def plugin(tmp_path) -> FlavorsPlugin:
    conf = config.load([])
    db = Database(f"sqlite:///{tmp_path / 'flavors.db'}")
    models.metadata.create_all(db.engine)
    env = Environment(conf=conf, db=db, hooks=Hooks(), quota=QuotaEngine(conf.quotas),
                      providers=ServiceProviders([GOLD, SILVER]),
                      plugin_types=frozenset({"L3_ROUTER_NAT", "FLAVORS"}))
    yield FlavorsPlugin(env)
    db.dispose()


def made_flavor(plugin: FlavorsPlugin, *drivers: str, enabled: bool = True,
                profiles_enabled: bool = True) -> dict[str, Any]:
    ids = [plugin.create_service_profile(ADMIN, {"driver": driver,
                                                 "enabled": profiles_enabled})["id"]
           for driver in drivers]
    return plugin.create_flavor(ADMIN, {"name": "f", "service_type": "L3_ROUTER_NAT",
                                        "enabled": enabled, "service_profiles": ids})


def test_the_first_enabled_profiles_driver_names_the_provider(plugin):
    flavor = made_flavor(plugin, GOLD.driver)
    assert plugin.next_provider(ADMIN, flavor["id"]) is GOLD


def test_a_service_asks_for_its_own_type(plugin):
    flavor = made_flavor(plugin, GOLD.driver)
    assert plugin.next_provider(ADMIN, flavor["id"], "L3_ROUTER_NAT") is GOLD
    with pytest.raises(fdef.InvalidFlavorServiceType, match="L3_ROUTER_NAT"):
        plugin.next_provider(ADMIN, flavor["id"], "FLAVORS")


def test_a_disabled_profile_is_passed_over(plugin):
    off = plugin.create_service_profile(ADMIN, {"driver": GOLD.driver, "enabled": False})
    on = plugin.create_service_profile(ADMIN, {"driver": SILVER.driver})
    flavor = plugin.create_flavor(ADMIN, {"service_type": "L3_ROUTER_NAT",
                                          "service_profiles": [off["id"], on["id"]]})
    assert plugin.next_provider(ADMIN, flavor["id"]) is SILVER


def test_a_flavor_serves_nothing_when(plugin):
    with pytest.raises(fdef.FlavorNotFound):
        plugin.next_provider(ADMIN, "7d5c2f59-0c3f-4b07-9d1e-6a2f1f0c1a11")
    with pytest.raises(fdef.FlavorDisabled):
        plugin.next_provider(ADMIN, made_flavor(plugin, GOLD.driver, enabled=False)["id"])
    with pytest.raises(fdef.FlavorServiceProfileBindingNotFound):
        plugin.next_provider(ADMIN, made_flavor(plugin)["id"])
    with pytest.raises(fdef.ServiceProfileDisabled):
        plugin.next_provider(ADMIN, made_flavor(plugin, GOLD.driver,
                                                profiles_enabled=False)["id"])


def test_a_driver_no_longer_configured_is_not_found(plugin):
    flavor = made_flavor(plugin, GOLD.driver)
    plugin.providers = ServiceProviders([SILVER])  # as after a restart without gold
    with pytest.raises(fdef.ServiceProfileDriverNotFound):
        plugin.next_provider(ADMIN, flavor["id"])


def test_a_service_using_a_flavor_vetoes_its_delete(plugin):
    used = made_flavor(plugin, GOLD.driver)
    done: list[str] = []

    def in_use(conn, ctx, flavor_id):
        if flavor_id == used["id"]:
            raise fdef.FlavorInUse(flavor_id=flavor_id)
        return lambda: done.append(flavor_id)

    plugin.hooks.before_flavor_delete.append(in_use)
    with pytest.raises(fdef.FlavorInUse):
        plugin.delete_flavor(ADMIN, used["id"])
    assert plugin.get_flavor(ADMIN, used["id"]) == used  # bindings and all
    free = made_flavor(plugin)
    plugin.delete_flavor(ADMIN, free["id"])
    assert done == [free["id"]]  # what the check gave to do, once committed
