"""The topology page's controller: which names it serves, as what, and that
nothing else (another file of the package, a path climbing out) is reached."""

from __future__ import annotations

import re
from collections.abc import Callable
from importlib import resources
from pathlib import Path

import pytest

from neutrino import exceptions as exc
from neutrino.api import topology
from neutrino.api.request import Request
from neutrino.cmd.server import build_app, load_config


def get(path: str, method: str = "GET") -> Request:
    return Request(method=method, path=path, query=[], headers={}, body=b"",
                   base_url="http://localhost:9696", request_id="req-test")


def rest_of(path: str) -> list[str]:
    """What the Router hands the page: the path after ``/topology``, split."""
    return [p for p in path.split("/") if p][1:]


@pytest.fixture(scope="module")
def page() -> topology.TopologyPage:
    return topology.TopologyPage()


@pytest.mark.parametrize(("path", "name", "kind"), [
    ("/topology/", "index.html", "text/html; charset=utf-8"),
    ("/topology/index.html", "index.html", "text/html; charset=utf-8"),
    ("/topology/topology.js", "topology.js", "text/javascript; charset=utf-8"),
    ("/topology/topology.css", "topology.css", "text/css; charset=utf-8"),
])
def test_each_file_is_served_whole_with_its_type(page, path, name, kind):
    resp = page.dispatch(get(path), rest_of(path))
    assert resp.status == 200
    assert resp.headers["content-type"] == kind
    assert resp.encoded() == resources.files(topology).joinpath(name).read_bytes()
    assert resp.headers["x-content-type-options"] == "nosniff"
    assert "connect-src 'self'" in resp.headers["content-security-policy"]


def test_the_page_without_its_slash_is_redirected_relatively(page):
    resp = page.dispatch(get("/topology"), [])
    assert resp.status == 301
    assert resp.headers["location"] == "topology/"  # keeps a proxy's prefix


@pytest.mark.parametrize("path", [
    "/topology/nope.html", "/topology/__init__.py", "/topology/../../etc/passwd",
    "/topology/topology.js/x", "/topology/./topology.js/..", "/topology/%2e%2e",
    "/topology/..", "/topology/TOPOLOGY.JS", "/topology/index.html/../../../etc/passwd",
])
def test_nothing_but_the_pages_files_is_found(page, path):
    with pytest.raises(exc.HTTPNotFound):
        page.dispatch(get(path), rest_of(path))


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "PATCH"])
def test_the_page_is_read_only(page, method):
    with pytest.raises(exc.HTTPMethodNotAllowed):
        page.dispatch(get("/topology/", method), [])


@pytest.mark.parametrize(("path", "expected"), [
    ("/topology", True), ("/topology/", True), ("/topology/topology.js", True),
    ("/topology.json", True), ("//topology//x", True),
    ("/", False), ("/topologyx", False), ("/v2.0/topology", False), ("/v2.0/networks", False),
])
def test_is_page_reads_paths_as_the_router_does(path, expected):
    assert topology.is_page(path) is expected


def test_the_page_loads_nothing_from_elsewhere():
    """Its files name no other origin: everything is served here, and the
    data comes from the same API (the CSP says so to the browser too)."""
    folder = resources.files(topology)
    for name in topology.FILES:
        text = folder.joinpath(name).read_text()
        urls = set(re.findall(r"https?://[^\s\"'`)]+", text))
        assert urls <= {"http://www.w3.org/2000/svg"}, (name, urls)
    html = folder.joinpath("index.html").read_text()
    assert 'src="topology.js"' in html and 'href="topology.css"' in html


def test_the_option_is_on_by_default():
    (opt,) = topology.GROUP.opts
    assert (topology.GROUP.name, opt.name, opt.default) == ("DEFAULT", "enable_topology_page",
                                                           True)


def serve(tmp_path: Path, auth: str, page: bool | None) -> Callable[[str], int]:
    """The server's app as configured (built, never started: nothing here
    reaches its database): a path's status for a caller with no identity."""
    option = "" if page is None else f"enable_topology_page = {str(page).lower()}\n"
    conf = tmp_path / "neutrino.conf"
    conf.write_text(f"[DEFAULT]\nauth_strategy = {auth}\nstate_path = {tmp_path}\n{option}")
    app = build_app(load_config([str(conf)]))

    def status(path: str) -> int:
        scope = {"method": "GET", "path": path, "query_string": b"", "headers": [],
                 "scheme": "http", "server": ("127.0.0.1", 9696)}
        return app.handle(scope, b"")[0]

    return status


def test_the_server_serves_the_page_without_a_token_and_the_api_with_one(tmp_path):
    status = serve(tmp_path, "trusted_headers", None)  # on by default
    assert [status(p) for p in ("/topology/", "/topology/topology.js", "/topology")] == [
        200, 200, 301]
    assert status("/topology/nope") == 404  # public, and still not a file
    assert status("/v2.0/networks") == 401
    assert status("/topologyx") == 401


def test_the_page_turned_off_is_not_found(tmp_path):
    status = serve(tmp_path, "noauth", False)
    assert [status(p) for p in ("/topology", "/topology/", "/topology/topology.js")] == [
        404, 404, 404]
    off = serve(tmp_path, "trusted_headers", False)
    assert off("/topology/") == 401  # no longer public either
