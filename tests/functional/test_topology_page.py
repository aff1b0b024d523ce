"""The topology page in a real browser (Debian's chromium, driven by selenium).

The page draws what the API lists to whoever looks: on a noauth server, a
known topology (an external network, two networks, a router between them, an
instance with a floating IP, a loose port) must be drawn with its edges and
follow a port added later; under trusted_headers, a member's page shows its
own project's networks and not another's. The files themselves are served
without authentication, and only the page's own files are served.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait

from tests.harness import ApiClient, Server, create_database, start_server
from tests.keystone import Keystone, keystone_fixture  # noqa: F401

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
#: the page polls every 2.5 s; a drawing must be there well within two polls
WAIT = 8


def browser_or_fail(profile: Path) -> Any:
    """A headless chromium that asks the network for nothing, its profile in
    ``profile``; a missing browser fails the test (CI installs it), it does not skip."""
    missing = [path for path in (CHROMIUM, CHROMEDRIVER) if not Path(path).exists()]
    if missing:
        pytest.fail(f"{' and '.join(missing)} missing: apt-get install chromium "
                    "chromium-driver to test the topology page")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--window-size=1400,900",
                 f"--user-data-dir={profile}"):
        options.add_argument(flag)
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)


@pytest.fixture(scope="module")
def browser(tmp_path_factory) -> Iterator[Any]:
    driver = browser_or_fail(tmp_path_factory.mktemp("chromium-profile"))
    yield driver
    driver.quit()


def sqlite_server(tmp: Path, auth: str, extra: str = "") -> Server:
    url, _ = create_database("sqlite", tmp)
    return start_server(tmp, url, auth=auth, extra=extra)


@pytest.fixture(scope="module")
def noauth(tmp_path_factory) -> Iterator[Server]:
    srv = sqlite_server(tmp_path_factory.mktemp("topology-noauth"), "noauth")
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def trusted(tmp_path_factory) -> Iterator[Server]:
    srv = sqlite_server(tmp_path_factory.mktemp("topology-trusted"), "trusted_headers")
    yield srv
    srv.stop()


def build_topology(api: ApiClient) -> dict[str, Any]:
    """An external network, two networks with subnets, a router with a gateway
    and an interface on the first, an instance port with a floating IP on the
    first, and a port of no device on the second."""
    ext = api.network(name="public", **{"router:external": True})
    api.subnet(ext["id"], "203.0.113.0/24", name="public-v4")
    net1, net2 = api.network(name="web"), api.network(name="db")
    sub1 = api.subnet(net1["id"], "10.1.0.0/24", name="web-v4")
    sub2 = api.subnet(net2["id"], "10.2.0.0/24", name="db-v4")
    router = api.create("routers", name="edge",
                        external_gateway_info={"network_id": ext["id"]})
    resp = api.put(f"/v2.0/routers/{router['id']}/add_router_interface",
                   json={"subnet_id": sub1["id"]})
    assert resp.status_code == 200, resp.text
    vm = api.port(net1["id"], name="vm-nic", device_id="vm-0001", device_owner="compute:nova")
    loose = api.port(net2["id"], name="spare")
    fip = api.create("floatingips", floating_network_id=ext["id"], port_id=vm["id"])
    return {"ext": ext, "net1": net1, "net2": net2, "sub1": sub1, "sub2": sub2,
            "router": router, "interface": resp.json()["port_id"], "vm": vm, "loose": loose,
            "fip": fip}


def wait_for(driver: Any, css: str, seconds: float = WAIT) -> Any:
    return WebDriverWait(driver, seconds).until(
        ec.presence_of_element_located((By.CSS_SELECTOR, css)), f"nothing matches {css}")


def drawn(driver: Any, css: str) -> list[Any]:
    return driver.find_elements(By.CSS_SELECTOR, css)


def node(kind: str, item_id: str) -> str:
    return f'svg [data-kind="{kind}"][data-id="{item_id}"]'


def edge(source: str, target: str) -> str:
    return f'svg line[data-from="{source}"][data-to="{target}"]'


def test_page_draws_a_known_topology_and_follows_changes(noauth, browser):
    api = noauth.client()
    t = build_topology(api)
    browser.get(f"{noauth.url}/topology")  # redirected to /topology/
    assert browser.current_url == f"{noauth.url}/topology/"
    wait_for(browser, 'svg[data-ready="true"]')

    for kind, key in (("network", "ext"), ("network", "net1"), ("network", "net2"),
                      ("subnet", "sub1"), ("subnet", "sub2"), ("router", "router"),
                      ("port", "vm"), ("port", "loose"), ("port", "interface"),
                      ("floatingip", "fip")):
        item_id = t[key] if isinstance(t[key], str) else t[key]["id"]
        assert len(drawn(browser, node(kind, item_id))) == 1, (kind, key)
    assert drawn(browser, node("instance", "vm-0001"))
    assert drawn(browser, node("unattached", t["loose"]["id"]))
    external = drawn(browser, node("network", t["ext"]["id"]))[0]
    assert external.get_attribute("data-external") == "true"
    assert drawn(browser, node("network", t["net1"]["id"]))[0].get_attribute(
        "data-external") == "false"

    router, ext, net1, net2 = (t["router"]["id"], t["ext"]["id"], t["net1"]["id"],
                               t["net2"]["id"])
    assert drawn(browser, edge(router, net1) + f'[data-port="{t["interface"]}"]')
    assert drawn(browser, edge(router, ext))  # the gateway
    assert drawn(browser, edge("vm-0001", net1) + f'[data-port="{t["vm"]["id"]}"]')
    assert drawn(browser, edge(t["loose"]["id"], net2))
    assert drawn(browser, edge(t["fip"]["id"], t["vm"]["id"]))
    assert not drawn(browser, edge(router, net2)) and not drawn(browser, edge("vm-0001", net2))
    # the subnet is drawn on its own network, the port is coloured by its status
    assert drawn(browser, f'{node("network", net1)} [data-kind="subnet"]'
                          f'[data-id="{t["sub1"]["id"]}"]')
    status = t["vm"]["status"]
    assert drawn(browser, f'{node("port", t["vm"]["id"])}[data-status="{status}"]')

    # live: a port added through the API appears within a poll or two
    revision = browser.find_element("id", "topology").get_attribute("data-revision")
    started = time.monotonic()
    added = api.port(net2, name="late", device_id="vm-0002", device_owner="compute:nova")
    wait_for(browser, node("port", added["id"]))
    assert time.monotonic() - started < WAIT
    assert drawn(browser, edge("vm-0002", net2))
    assert browser.find_element("id", "topology").get_attribute("data-revision") != revision

    # a click shows the resource's fields
    drawn(browser, node("router", router))[0].click()
    details = browser.find_element("id", "details")
    assert details.is_displayed()
    assert router in details.text and "edge" in details.text
    assert "external_gateway_info" in details.text
    assert drawn(browser, node("router", router) + ".selected")
    # no script error, no request or style the page's CSP refused
    assert [e for e in browser.get_log("browser") if e["level"] == "SEVERE"] == []


def test_a_member_sees_its_own_project_only(trusted, browser):
    admin = trusted.client("admin-project", roles=("admin", "member"))
    ext = admin.network(name="public", **{"router:external": True})
    mine = trusted.client("project-a").network(name="net-a")
    theirs = trusted.client("project-b").network(name="net-b")
    browser.get(f"{trusted.url}/topology/")
    # no identity yet: the API answers 401, the page asks for a token
    login = wait_for(browser, "#login:not([hidden])")
    assert login.is_displayed()
    browser.execute_script(
        "sessionStorage.setItem('neutrino.headers', JSON.stringify(arguments[0]))",
        {"X-Project-Id": "project-a", "X-User-Id": "alice", "X-Roles": "member"})
    browser.refresh()
    wait_for(browser, node("network", mine["id"]))
    assert drawn(browser, node("network", ext["id"]))  # external networks are for all
    assert not drawn(browser, node("network", theirs["id"]))
    assert not browser.find_element("id", "login").is_displayed()
    # a poll that finds nothing new redraws nothing
    svg, line = browser.find_element("id", "topology"), browser.find_element("id", "status")
    revision, checked = svg.get_attribute("data-revision"), line.text
    WebDriverWait(browser, WAIT).until(lambda _: line.text != checked, "no second poll")
    assert svg.get_attribute("data-revision") == revision
    browser.execute_script("sessionStorage.clear()")


@pytest.fixture(scope="module")
def keystone_server(keystone: Keystone, tmp_path_factory) -> Iterator[Server]:
    srv = sqlite_server(tmp_path_factory.mktemp("topology-keystone"), "keystone",
                        extra="\n" + keystone.authtoken_section())
    yield srv
    srv.stop()


def test_with_keystone_the_page_asks_for_a_token(keystone_server, keystone, browser):
    token = keystone.token("alice")[0]
    mine = ApiClient(keystone_server.url, {"X-Auth-Token": token}).network(name="alpha-net")
    theirs = ApiClient(keystone_server.url, {"X-Auth-Token": keystone.token("bob")[0]}
                       ).network(name="beta-net")
    browser.get(f"{keystone_server.url}/topology/")
    wait_for(browser, "#login:not([hidden])")
    browser.find_element("id", "token").send_keys(token + "\n")
    wait_for(browser, node("network", mine["id"]))
    assert not drawn(browser, node("network", theirs["id"]))
    assert browser.execute_script("return sessionStorage.getItem('neutrino.token')") == token
    signout = browser.find_element("id", "signout")
    assert signout.is_displayed()
    signout.click()  # the token is forgotten, and asked for again
    wait_for(browser, "#login:not([hidden])")
    assert not drawn(browser, node("network", mine["id"]))
    assert browser.execute_script("return sessionStorage.getItem('neutrino.token')") is None


def raw_get(url: str, target: str) -> tuple[int, bytes]:
    """GET ``target`` exactly as written (clients normalise ``..`` away)."""
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(f"GET {target} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
                     .encode())
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    return int(head.split()[1]), body


@pytest.mark.parametrize("target", [
    "/topology/../../etc/passwd", "/topology/%2e%2e/%2e%2e/etc/passwd",
    "/topology/..%2f..%2fetc%2fpasswd", "/topology/%2e%2e%2f__init__.py",
    "/topology/__init__.py", "/topology/topology.js/../../../etc/passwd",
    "/topology//etc/passwd", "/topology/%2fetc%2fpasswd"])
def test_no_path_leaves_the_page(trusted, target):
    status, body = raw_get(trusted.url, target)
    assert status in (401, 404), (target, status)  # a 401: it reached no file
    assert b"root:" not in body and b"import" not in body


def test_the_files_need_no_token_and_the_api_still_does(trusted):
    for name, kind in (("", "text/html"), ("index.html", "text/html"),
                       ("topology.js", "text/javascript"), ("topology.css", "text/css")):
        resp = httpx.get(f"{trusted.url}/topology/{name}")
        assert resp.status_code == 200, name
        assert resp.headers["content-type"].startswith(kind)
        assert "script-src 'self'" in resp.headers["content-security-policy"]
    assert httpx.get(f"{trusted.url}/topology/nope.js").status_code == 404
    assert httpx.post(f"{trusted.url}/topology/").status_code == 405
    assert httpx.get(f"{trusted.url}/v2.0/networks").status_code == 401
    assert httpx.get(f"{trusted.url}/topologyx").status_code == 401
