"""What ML2's ovn driver cannot express in OVN is refused, as Neutron's refuses it."""

from __future__ import annotations

import pytest

from tests.harness import ApiClient, expect_error


@pytest.mark.parametrize("segment", [
    {"provider:network_type": "vxlan", "provider:segmentation_id": 77},
    {"provider:network_type": "gre", "provider:segmentation_id": 77},
    {"provider:network_type": "local"},
])
def test_network_types_ovn_cannot_carry_are_refused(admin: ApiClient, segment: dict) -> None:
    resp = admin.post("/v2.0/networks", json={"network": {"name": "refused", **segment}})
    error = expect_error(resp, 400, "InvalidInput")
    assert f"Network type {segment['provider:network_type']} is not supported by OVN" \
        in error["message"]
    names = {n["name"] for n in admin.get("/v2.0/networks").json()["networks"]}
    assert "refused" not in names  # nothing half-written


def test_the_types_it_carries_are_taken(admin: ApiClient) -> None:
    for segment in ({"provider:network_type": "geneve"},
                    {"provider:network_type": "flat", "provider:physical_network": "ovnnet1"}):
        resp = admin.post("/v2.0/networks", json={"network": segment})
        assert resp.status_code == 201, resp.text
