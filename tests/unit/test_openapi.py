"""The OpenAPI document: valid OpenAPI 3.1, and made of what the server serves."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from openapi_spec_validator import validate

from neutrino.cmd.server import build_app, load_config
from neutrino.definitions import CORE_RESOURCES, EXTENSIONS


def document(tmp_path: Path, text: str = "") -> dict[str, Any]:
    conf = tmp_path / "neutrino.conf"
    conf.write_text(f"[DEFAULT]\nstate_path = {tmp_path}\nenable_topology_page = false\n{text}")
    app = build_app(load_config([str(conf)]))
    try:
        return app.router.paths["openapi"].build()
    finally:
        app.on_shutdown()


@pytest.fixture(scope="module")
def full(tmp_path_factory) -> dict[str, Any]:
    from tests.conftest import SERVER_EXTRA

    return document(tmp_path_factory.mktemp("openapi"),
                    SERVER_EXTRA.replace("[ml2]", "auth_strategy = keystone\n[ml2]", 1)
                    + "[keystone_authtoken]\nauth_url = http://127.0.0.1:5000/v3\n")


def test_the_document_is_valid_openapi_3_1(full):
    validate(full)
    assert full["openapi"] == "3.1.0"
    assert full["security"] == [{"keystone": []}]


def test_every_resource_its_attributes_and_their_constraints(full):
    schemas = full["components"]["schemas"]
    port = schemas["Ports"]["properties"]
    assert {"id", "network_id", "fixed_ips", "binding:host_id", "port_security_enabled",
            "security_groups", "tags", "revision_number"} <= set(port)
    assert port["id"] == {"type": "string", "format": "uuid", "readOnly": True}
    assert port["revision_number"]["readOnly"] is True
    assert port["binding:host_id"]["description"] == "Only an admin sees it."
    assert full["components"]["schemas"]["Networks"]["properties"][
        "router:external"]["x-admin-only"] is True
    create = full["paths"]["/v2.0/ports"]["post"]["requestBody"]["content"][
        "application/json"]["schema"]["anyOf"][0]["properties"]["port"]
    assert create["required"] == ["network_id"]
    assert "id" not in create["properties"] and "status" not in create["properties"]
    assert create["properties"]["name"] == {"type": "string", "maxLength": 255, "default": ""}
    assert create["properties"]["admin_state_up"]["type"] == "boolean"
    rule = full["paths"]["/v2.0/security-group-rules"]["post"]["requestBody"]["content"][
        "application/json"]["schema"]
    rule = rule.get("anyOf", [rule])[0]["properties"]["security_group_rule"]["properties"]
    assert rule["direction"]["enum"] == ["ingress", "egress"]
    update = full["paths"]["/v2.0/networks/{id}"]["put"]["requestBody"]["content"][
        "application/json"]["schema"]["properties"]["network"]
    assert "project_id" not in update["properties"] and "name" in update["properties"]


def test_queries_errors_actions_tags_and_sub_resources(full):
    paths = full["paths"]
    listing = paths["/v2.0/networks"]["get"]
    names = {p.get("name") or p["$ref"].rsplit("/", 1)[1] for p in listing["parameters"]}
    assert {"name", "admin_state_up", "fields", "sort_key", "sort_dir", "limit", "marker",
            "page_reverse"} <= names
    assert "description" in names and "tags" not in names  # tags filter through tags=
    assert paths["/v2.0/ports/{id}"]["put"]["responses"]["412"] == {
        "$ref": "#/components/responses/Error"}
    assert "put" in paths["/v2.0/routers/{id}/add_router_interface"]
    assert "delete" in paths["/v2.0/networks/{id}/tags/{tag}"]
    assert "get" in paths["/v2.0/qos/policies/{policy_id}/bandwidth_limit_rules/{id}"]
    assert "get" in paths["/v2.0/routers/{id}/l3-agents"]
    assert "/v2.0/floatingip_pools/{id}" not in paths  # listed whole only


def test_the_document_follows_the_configuration(tmp_path):
    bare = document(tmp_path, "service_plugins =\n")
    assert "/v2.0/routers" not in bare["paths"] and "/v2.0/ports" in bare["paths"]
    assert "security" not in bare  # noauth
    validate(bare)


def test_extension_attributes_name_a_served_path():
    """An extension's attributes are merged by API path: a key that names no
    path (the collection of a hyphenated resource, say) adds nothing."""
    paths = {r.path for r in CORE_RESOURCES}
    paths |= {r.path for ext in EXTENSIONS.values() for r in ext.resources}
    for ext in EXTENSIONS.values():
        assert set(ext.attributes) <= paths, ext.alias
