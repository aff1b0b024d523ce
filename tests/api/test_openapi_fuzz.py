"""The OpenAPI document drives a property-based fuzzer (schemathesis) against
a live server on SQLite: no request may get a server error, and no answer may
contradict the document (its status, content type or body).

Random ids find nothing but 404s, so the server is given one real item of
most resources first, and half the cases (all but deletes, which would take
them away) name those: updates and actions then meet real rows.

The document is built in this process from the same configuration the
server runs with, so that pytest can make one test per operation (spread
over the xdist workers); a test checks that the server serves that very
document.
"""

from __future__ import annotations

import os
import tempfile
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, settings
from schemathesis.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from neutrino.cmd.server import build_app, load_config
from neutrino.definitions import CORE_RESOURCES, EXTENSIONS
from tests.conftest import SERVER_EXTRA
from tests.harness import ApiClient, Server, start_server

#: the configuration of the server fuzzed: the shared servers' plugins, no auth
#: (the admin's view: every operation reachable), no page of the browser's
EXTRA = SERVER_EXTRA.replace("[ml2]", "enable_topology_page = false\n[ml2]", 1)
#: the examples hypothesis tries per operation, beyond the boundary cases
EXAMPLES = int(os.environ.get("NEUTRINO_FUZZ_EXAMPLES", "3"))


def built_document() -> dict[str, Any]:
    """The document, made without serving (no database is touched)."""
    with tempfile.TemporaryDirectory() as state:
        conf_file = Path(state, "neutrino.conf")
        conf_file.write_text(f"[DEFAULT]\nstate_path = {state}\n{EXTRA}")
        app = build_app(load_config([str(conf_file)]))
        try:
            return app.router.paths["openapi"].build()
        finally:
            app.on_shutdown()


DOCUMENT = built_document()
schema = schemathesis.openapi.from_dict(DOCUMENT)


@pytest.fixture(scope="module")
def fuzzed(tmp_path_factory) -> Server:
    tmp = tmp_path_factory.mktemp("fuzzed")
    srv = start_server(tmp, f"sqlite:///{tmp}/neutrino.sqlite", extra=EXTRA)
    yield srv
    srv.stop()


#: collection path -> how to make one item, given the ids made before it
SEEDS: list[tuple[str, Callable[[dict[str, str]], dict[str, Any]]]] = [
    ("networks", lambda ids: {"name": "fuzz"}),
    ("subnets", lambda ids: {"network_id": ids["networks"], "cidr": "10.99.0.0/24",
                             "ip_version": 4}),
    ("ports", lambda ids: {"network_id": ids["networks"]}),
    ("routers", lambda ids: {"name": "fuzz"}),
    ("security-groups", lambda ids: {"name": "fuzz"}),
    ("security-group-rules", lambda ids: {"security_group_id": ids["security-groups"],
                                          "direction": "ingress", "protocol": "tcp"}),
    ("address-scopes", lambda ids: {"name": "fuzz", "ip_version": 4}),
    ("subnetpools", lambda ids: {"name": "fuzz", "prefixes": ["10.200.0.0/16"]}),
    ("address-groups", lambda ids: {"addresses": ["10.1.0.0/24"]}),
    ("qos/policies", lambda ids: {"name": "fuzz"}),
    ("qos/policies/bandwidth_limit_rules", lambda ids: {"max_kbps": 1000}),
    ("trunks", lambda ids: {"port_id": ids["ports"]}),
    ("fwaas/firewall_rules", lambda ids: {"protocol": "tcp"}),
    ("fwaas/firewall_policies", lambda ids: {"firewall_rules": [ids["fwaas/firewall_rules"]]}),
    ("fwaas/firewall_groups", lambda ids: {}),
    ("metering/metering-labels", lambda ids: {"name": "fuzz"}),
    ("metering/metering-label-rules", lambda ids: {
        "metering_label_id": ids["metering/metering-labels"], "direction": "ingress",
        "remote_ip_prefix": "10.0.0.0/8"}),
    ("vpn/ikepolicies", lambda ids: {"name": "fuzz"}),
    ("vpn/ipsecpolicies", lambda ids: {"name": "fuzz"}),
    ("local_ips", lambda ids: {"network_id": ids["networks"]}),
    ("routers/conntrack_helpers", lambda ids: {"protocol": "tcp", "port": 21,
                                               "helper": "ftp"}),
    ("rbac-policies", lambda ids: {"object_type": "network", "object_id": ids["networks"],
                                   "action": "access_as_shared", "target_tenant": "fuzz"}),
]
#: a sub-resource's parent: its collection path -> the parent's
PARENTS = {"qos/policies/bandwidth_limit_rules": "qos/policies",
           "routers/conntrack_helpers": "routers"}


@pytest.fixture(scope="module")
def known(fuzzed) -> dict[str, str]:
    """One item of each seeded collection: collection path -> id."""
    api = ApiClient(fuzzed.url, {})
    made: dict[str, str] = {}
    for path, body in SEEDS:
        url = f"/v2.0/{path}"
        if path in PARENTS:
            parent_path = PARENTS[path]
            url = f"/v2.0/{parent_path}/{made[parent_path]}/{path.rsplit('/', 1)[1]}"
        answer = api.post(url, json={DOCUMENT_NAMES[path]: body(made)})
        assert answer.status_code == 201, f"{path}: {answer.text}"
        made[path] = answer.json()[DOCUMENT_NAMES[path]]["id"]
    return made


#: collection path -> the name its create body wraps the item in
DOCUMENT_NAMES = {r.path: r.name for r in (
    *CORE_RESOURCES, *(r for ext in EXTENSIONS.values() for r in ext.resources))}


def known_ids(template: str, generated: dict[str, Any], known: dict[str, str]
              ) -> dict[str, Any]:
    """The case's path parameters, those that name a seeded collection's item
    replaced by its id."""
    given = dict(generated)
    parts = template.split("/")[2:]
    for index, part in enumerate(parts):
        if part.startswith("{") and part[1:-1] in given:
            collection = "/".join(p for p in parts[:index] if "{" not in p)
            if collection in known:
                given[part[1:-1]] = known[collection]
    return given


def test_the_server_serves_the_document_fuzzed(fuzzed):
    import httpx

    assert httpx.get(f"{fuzzed.url}/v2.0/openapi.json").json() == DOCUMENT


@schema.parametrize()
@settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
          phases=[Phase.explicit, Phase.generate],
          suppress_health_check=list(HealthCheck))
def test_the_api_keeps_to_its_document(case, fuzzed, known):
    if case.method != "DELETE" and case.path_parameters and zlib.crc32(
            repr(sorted(case.path_parameters.items())).encode()) % 2:
        case.path_parameters = known_ids(case.path, case.path_parameters, known)
    response = case.call(base_url=fuzzed.url, timeout=30)
    declared = case.operation.definition.raw.get("responses", {})
    # a 5xx is a bug; Neutron's 501 to a create of quotas is its documented answer
    assert response.status_code < 500 or str(response.status_code) in declared, \
        f"{case.method} {case.formatted_path} -> {response.status_code}: {response.text}"
    case.validate_response(response, checks=(status_code_conformance,
                                             content_type_conformance,
                                             response_schema_conformance))
