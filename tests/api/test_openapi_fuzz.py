"""The OpenAPI document drives a property-based fuzzer (schemathesis) against
a live server on SQLite: no request may get a server error, and no answer may
contradict the document (its status, content type or body).

The document is built in this process from the same configuration the
server runs with, so that pytest can make one test per operation (spread
over the xdist workers); a test checks that the server serves that very
document.
"""

from __future__ import annotations

import os
import tempfile
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
from tests.conftest import SERVER_EXTRA
from tests.harness import Server, start_server

#: the configuration of the server fuzzed: the shared servers' plugins, no auth
#: (the admin's view: every operation reachable), no page of the browser's
EXTRA = SERVER_EXTRA.replace("[ml2]", "enable_topology_page = false\n[ml2]", 1)
#: the examples hypothesis tries per operation, beyond the boundary cases
EXAMPLES = int(os.environ.get("NEUTRINO_FUZZ_EXAMPLES", "8"))


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


def test_the_server_serves_the_document_fuzzed(fuzzed):
    import httpx

    assert httpx.get(f"{fuzzed.url}/v2.0/openapi.json").json() == DOCUMENT


@schema.parametrize()
@settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
          phases=[Phase.explicit, Phase.generate],
          suppress_health_check=list(HealthCheck))
def test_the_api_keeps_to_its_document(case, fuzzed):
    response = case.call(base_url=fuzzed.url, timeout=30)
    declared = case.operation.definition.raw.get("responses", {})
    # a 5xx is a bug; Neutron's 501 to a create of quotas is its documented answer
    assert response.status_code < 500 or str(response.status_code) in declared, \
        f"{case.method} {case.formatted_path} -> {response.status_code}: {response.text}"
    case.validate_response(response, checks=(status_code_conformance,
                                             content_type_conformance,
                                             response_schema_conformance))
