"""``/v2.0/openapi.json`` over HTTP: read like any path of the API."""

from __future__ import annotations

import httpx

from tests.harness import expect_error


def test_anyone_authenticated_reads_the_document(server, user):
    doc = user.get("/v2.0/openapi.json")
    assert doc.status_code == 200 and doc.headers["content-type"] == "application/json"
    assert doc.json()["openapi"] == "3.1.0" and "/v2.0/ports/{id}" in doc.json()["paths"]
    assert httpx.get(f"{server.url}/v2.0/openapi.json").status_code == 401  # no identity
    expect_error(user.post("/v2.0/openapi.json", json={}), 405, "HTTPMethodNotAllowed")
    expect_error(user.get("/v2.0/openapi.json/more"), 404, "HTTPNotFound")
