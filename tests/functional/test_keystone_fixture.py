"""The real keystone of ``tests.keystone``: users, tokens, revocation, expiry, catalog.

Our server validates tokens as keystonemiddleware does (GET /v3/auth/tokens with
the service user's token), so these check that the fixture gives exactly what
those tests need, from a real keystone.
"""

from __future__ import annotations

import datetime
import time
from pathlib import Path

import openstack.config
import pytest
from keystoneauth1 import session as ks_session

from tests.keystone import USERS, Keystone, clouds_yaml, keystone_fixture  # noqa: F401

pytestmark = pytest.mark.slow


def expiry(body: dict) -> datetime.datetime:
    return datetime.datetime.fromisoformat(body["token"]["expires_at"].replace("Z", "+00:00"))


def role_names(body: dict) -> set[str]:
    return {role["name"] for role in body["token"]["roles"]}


def test_keystone_serves_v3(keystone: Keystone) -> None:
    resp = keystone.http.get("/")
    assert resp.json()["version"]["id"].startswith("v3.")
    section = keystone.authtoken_section()
    assert f"auth_url = {keystone.url}\n" in section and "username = neutron\n" in section


@pytest.mark.parametrize("user", sorted(USERS))
def test_token_for_each_user_validates(keystone: Keystone, user: str) -> None:
    project, roles = USERS[user]
    token, body = keystone.token(user)
    assert body["token"]["user"]["name"] == user
    assert body["token"]["project"]["id"] == keystone.project_ids[project]
    assert set(roles) <= role_names(body)
    assert expiry(body) > datetime.datetime.now(datetime.UTC) + datetime.timedelta(minutes=50)

    resp = keystone.validate(token)
    assert resp.status_code == 200, resp.text
    assert resp.headers["X-Subject-Token"] == token
    seen = resp.json()["token"]
    assert seen["user"]["id"] == keystone.user_ids[user]
    assert seen["project"]["id"] == keystone.project_ids[project]
    assert role_names(resp.json()) == role_names(body)


def test_reader_has_only_reader(keystone: Keystone) -> None:
    assert role_names(keystone.token("rita")[1]) == {"reader"}
    assert "admin" not in role_names(keystone.token("alice")[1])


def test_user_cannot_validate_anothers_token(keystone: Keystone) -> None:
    alice, _ = keystone.token("alice")
    bob, _ = keystone.token("bob")
    resp = keystone.request("GET", "/auth/tokens", bob, headers={"X-Subject-Token": alice})
    assert resp.status_code == 403


def test_wrong_password_and_foreign_project_are_refused(keystone: Keystone) -> None:
    bad = {"methods": ["password"], "password": {"user": {
        "name": "alice", "domain": {"name": "Default"}, "password": "wrong"}}}
    with pytest.raises(AssertionError, match="401"):
        keystone.authenticate(bad, "alpha")
    with pytest.raises(AssertionError, match="401"):
        keystone.token("alice", "beta")


def test_revoked_token_is_refused(keystone: Keystone) -> None:
    token, _ = keystone.token("alice")
    other, _ = keystone.token("alice")
    assert keystone.validate(token).status_code == 200
    keystone.revoke(token)
    assert keystone.validate(token).status_code == 404
    assert keystone.validate(other).status_code == 200


def test_short_lived_token_expires(keystone: Keystone) -> None:
    normal, _ = keystone.token("bob")
    token, body = keystone.short_lived_token("bob", seconds=2)
    now = datetime.datetime.now(datetime.UTC)
    assert now < expiry(body) <= now + datetime.timedelta(seconds=3)
    assert body["token"]["project"]["name"] == "beta"
    assert body["token"]["user"]["name"] == "bob"
    assert "member" in role_names(body)

    assert keystone.validate(token).status_code == 200
    time.sleep(max(0.0, (expiry(body) - datetime.datetime.now(datetime.UTC)).total_seconds())
               + 0.2)
    assert keystone.validate(token).status_code == 404
    assert keystone.validate(normal).status_code == 200


def test_network_endpoint_and_clouds_yaml(keystone: Keystone, tmp_path: Path) -> None:
    keystone.register_network_endpoint("http://127.0.0.1:1/first")
    keystone.register_network_endpoint("http://127.0.0.1:1/network")
    catalog = keystone.token("alice")[1]["token"]["catalog"]
    network = [s for s in catalog if s["type"] == "network"]
    assert [e["url"] for e in network[0]["endpoints"]] == ["http://127.0.0.1:1/network"]

    for override in (None, "http://127.0.0.1:2/override"):
        path = clouds_yaml(tmp_path / "clouds.yaml", keystone, network_url=override)
        config = openstack.config.OpenStackConfig(config_files=[str(path)])
        for user in ("alice", "bob", "rita", "admin"):
            cloud = config.get_one(cloud=user)
            session: ks_session.Session = cloud.get_session()
            assert session.get_token()
            access = session.auth.get_access(session)
            assert access.project_name == USERS[user][0]
            url = cloud.get_endpoint("network") or session.get_endpoint(
                service_type="network", interface="public", region_name="RegionOne")
            assert url == (override or "http://127.0.0.1:1/network")
