"""``neutrino-instance plug`` makes the port an instance's, as Nova does, and
``unplug`` undoes what plug set, and only that."""

from __future__ import annotations

import uuid

from neutrino.cmd.instance import instance_id, plug_changes, unplug_changes

PORT = "0b6f3c1e-5d2a-4f8e-9c7b-1a2b3c4d5e6f"


def test_a_free_port_gets_an_instance_and_an_owner():
    changes = plug_changes({"id": PORT, "device_id": "", "device_owner": ""}, "h1", "nova")
    assert changes == {"binding:host_id": "h1", "device_id": instance_id(PORT),
                       "device_owner": "compute:nova"}
    assert uuid.UUID(changes["device_id"]).version == 5
    assert instance_id(PORT) != instance_id(PORT[::-1])


def test_a_port_with_a_device_keeps_it():
    port = {"id": PORT, "device_id": "vm-1", "device_owner": "compute:az2",
            "binding:host_id": "h1"}
    assert plug_changes(port, "h1", "nova") == {}
    assert unplug_changes(port) == {"binding:host_id": ""}


def test_an_owner_is_kept_and_the_zone_is_chosen():
    assert plug_changes({"id": PORT, "device_owner": "compute:az2"}, "h1", "nova") == {
        "binding:host_id": "h1", "device_id": instance_id(PORT)}
    assert plug_changes({"id": PORT}, "h1", "az3")["device_owner"] == "compute:az3"


def test_unplug_clears_what_plug_set():
    port = {"id": PORT, "binding:host_id": "h1", "device_id": "", "device_owner": ""}
    plugged = {**port, **plug_changes(port, "h1", "nova")}
    assert unplug_changes(plugged) == {"binding:host_id": "", "device_id": "",
                                       "device_owner": ""}
    # plug's device under an owner it did not set (not a compute one): the owner stays
    assert unplug_changes({**plugged, "device_owner": "network:foo"}) == {
        "binding:host_id": "", "device_id": ""}
