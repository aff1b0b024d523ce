"""A real OpenStack keystone (from PyPI) on 127.0.0.1 with SQLite, for tests.

Tests that exercise ``auth_strategy = keystone`` need tokens that a real
keystone issued, validates, revokes and lets expire; a mock would only repeat
our own reading of the API. ``start_keystone`` runs keystone in a subprocess
from a private directory: its own ``keystone.conf`` (read through
``OS_KEYSTONE_CONFIG_DIR`` only), SQLite database and fernet key repositories.

To start fast, the subprocess imports keystone once and does what
``keystone-manage db_sync``, ``fernet_setup``, ``credential_setup`` and
``bootstrap`` do by calling the same keystone functions, then serves
keystone's public WSGI application (what ``keystone.wsgi.api`` builds) with
werkzeug's threaded server (werkzeug comes with keystone's Flask).

Users (password ``<name>-secret``) and their role on their project:

=========  ========  ==============================
user       project   roles
=========  ========  ==============================
admin      admin     admin (keystone's bootstrap)
neutron    service   admin, service (our server's)
alice      alpha     member
bob        beta      member
rita       alpha     reader
carol      gamma     member
=========  ========  ==============================
"""

from __future__ import annotations

import datetime
import importlib.util
import math
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

REGION = "RegionOne"
DOMAIN = "Default"
# user -> (home project, roles there)
USERS: dict[str, tuple[str, tuple[str, ...]]] = {
    "admin": ("admin", ("admin",)),
    "neutron": ("service", ("admin", "service")),
    "alice": ("alpha", ("member",)),
    "bob": ("beta", ("member",)),
    "rita": ("alpha", ("reader",)),
    "carol": ("gamma", ("member",)),
}
PASSWORDS = {user: f"{user}-secret" for user in USERS}

# Runs in the keystone subprocess: set up the deployment, then serve it.
_SERVER = r'''
import os, sys
sys.argv = sys.argv[:1]  # oslo.config parses sys.argv: leave it nothing to parse
workdir = os.environ["OS_KEYSTONE_CONFIG_DIR"]

import keystone.server
from keystone.cmd.bootstrap import Bootstrapper
from keystone.cmd.cli import FernetSetup
from keystone.common import fernet_utils
from keystone.common.sql import upgrades
from keystone.conf import CONF
from keystone.credential.providers import fernet as credential_fernet
from keystone.server.flask import application, core
from werkzeug.serving import make_server

keystone.server.configure(config_files=[os.path.join(workdir, "keystone.conf")])
upgrades.offline_sync_database_to_version()                       # db_sync
for group in ("fernet_tokens", "fernet_receipts"):                # fernet_setup
    FernetSetup.initialize_fernet_repository(None, None, group)
creds = fernet_utils.FernetUtils(CONF.credential.key_repository,  # credential_setup
                                 credential_fernet.MAX_ACTIVE_KEYS, "credential")
creds.create_key_directory()
if creds.validate_key_repository(requires_write=True):
    creds.initialize_key_repository()

server = make_server("127.0.0.1", 0, None, threaded=True)  # the app comes once set up
boot = Bootstrapper()                                              # bootstrap
boot.admin_username, boot.admin_password = "admin", os.environ["KEYSTONE_ADMIN_PASSWORD"]
boot.project_name = boot.admin_role_name = "admin"
boot.service_name, boot.region_id = "keystone", "RegionOne"
boot.public_url = f"http://127.0.0.1:{server.server_port}/v3"
boot.immutable_roles = True
boot.bootstrap()

server.app = core.setup_app_middleware(application.application_factory("public"))
with open(os.path.join(workdir, "port.tmp"), "w") as f:
    f.write(str(server.server_port))
os.rename(os.path.join(workdir, "port.tmp"), os.path.join(workdir, "port"))
server.serve_forever()
'''


def write_config(workdir: Path, expiration: int = 3600) -> Path:
    """keystone.conf for a private deployment in ``workdir``; speed over safety
    (cheap bcrypt, unsynchronised SQLite) since nothing here outlives a test run."""
    conf = workdir / "keystone.conf"
    conf.write_text(f"""\
[DEFAULT]
use_stderr = true
[database]
connection = sqlite:///{workdir / 'keystone.db'}
sqlite_synchronous = false
[fernet_tokens]
key_repository = {workdir / 'fernet-keys'}
[fernet_receipts]
key_repository = {workdir / 'fernet-receipts'}
[credential]
key_repository = {workdir / 'credential-keys'}
[token]
provider = fernet
expiration = {expiration}
[cache]
enabled = true
backend = dogpile.cache.memory
[identity]
password_hash_rounds = 4
""")
    return conf


def installed() -> bool:
    return importlib.util.find_spec("keystone") is not None


class Keystone:
    """A running keystone, its users and projects, and token helpers."""

    def __init__(self, workdir: Path, proc: subprocess.Popen, port: int):
        self.workdir, self.proc, self.port = workdir, proc, port
        self.url = f"http://127.0.0.1:{port}/v3"
        self.passwords = dict(PASSWORDS)
        self.admin = self.credentials("admin")
        self.service = self.credentials("neutron")  # what our server authenticates as
        self.user_ids: dict[str, str] = {}
        self.project_ids: dict[str, str] = {}
        self.role_ids: dict[str, str] = {}
        self.http = httpx.Client(base_url=self.url, timeout=30)
        self._tokens: dict[str, tuple[str, float]] = {}  # user -> (token, renew after)

    def credentials(self, user: str) -> dict[str, str]:
        """``user``'s password credentials, named as in ``[keystone_authtoken]``."""
        return {"auth_url": self.url, "username": user, "password": self.passwords[user],
                "project_name": USERS[user][0], "user_domain_name": DOMAIN,
                "project_domain_name": DOMAIN}

    def authtoken_section(self) -> str:
        """A ``[keystone_authtoken]`` section for our server's config file."""
        lines = [f"{key} = {value}" for key, value in self.service.items()]
        return "\n".join(["[keystone_authtoken]", f"www_authenticate_uri = {self.url}",
                          f"region_name = {REGION}", *lines, ""])

    # -- requests -----------------------------------------------------------
    def request(self, method: str, path: str, token: str | None = None,
                **kwargs: Any) -> httpx.Response:
        """A request to keystone as ``token`` (the admin's when None)."""
        headers = {"X-Auth-Token": token or self.admin_token, **kwargs.pop("headers", {})}
        return self.http.request(method, path, headers=headers, **kwargs)

    def _ok(self, resp: httpx.Response) -> dict[str, Any]:
        if resp.status_code >= 400:
            raise AssertionError(f"keystone {resp.request.method} {resp.request.url}: "
                                 f"{resp.status_code} {resp.text}")
        return resp.json() if resp.content else {}

    # -- tokens -------------------------------------------------------------
    def authenticate(self, identity: dict[str, Any],
                     project: str | None) -> tuple[str, dict[str, Any]]:
        auth: dict[str, Any] = {"identity": identity}
        if project is not None:
            auth["scope"] = {"project": {"name": project, "domain": {"name": DOMAIN}}}
        resp = self.http.post("/auth/tokens", json={"auth": auth})
        body = self._ok(resp)
        return resp.headers["X-Subject-Token"], body

    def token(self, user: str, project: str | None = None) -> tuple[str, dict[str, Any]]:
        """A project-scoped token of ``user`` (on its home project unless told):
        the token and keystone's body of it ({"token": {...}})."""
        identity = {"methods": ["password"], "password": {"user": {
            "name": user, "domain": {"name": DOMAIN}, "password": self.passwords[user]}}}
        return self.authenticate(identity, project or USERS[user][0])

    def short_lived_token(self, user: str, project: str | None = None,
                          seconds: float = 2.0) -> tuple[str, dict[str, Any]]:
        """A token of ``user`` that expires ``seconds`` (rounded up to a whole second)
        from now, while keystone's other tokens keep their normal lifetime: keystone
        caps a token issued for an application credential at the credential's
        expiry, so this makes one expiring then and authenticates with it."""
        token, body = self.token(user, project)
        # a whole second: keystone's tokens keep no fraction of their expiry
        expires = datetime.datetime.fromtimestamp(math.ceil(time.time() + seconds), datetime.UTC)
        cred = self._ok(self.request(
            "POST", f"/users/{body['token']['user']['id']}/application_credentials", token,
            json={"application_credential": {
                "name": f"short-{time.monotonic_ns()}",
                "expires_at": expires.strftime("%Y-%m-%dT%H:%M:%S.%f")}}))
        cred = cred["application_credential"]
        return self.authenticate({"methods": ["application_credential"],
                                  "application_credential": {"id": cred["id"],
                                                             "secret": cred["secret"]}}, None)

    @property
    def admin_token(self) -> str:
        return self._cached_token("admin")

    @property
    def service_token(self) -> str:
        """The neutron service user's token, as our server would hold it."""
        return self._cached_token("neutron")

    def _cached_token(self, user: str) -> str:
        if user not in self._tokens or self._tokens[user][1] < time.monotonic():
            self._tokens[user] = (self.token(user)[0], time.monotonic() + 600)
        return self._tokens[user][0]

    def validate(self, token: str) -> httpx.Response:
        """GET /v3/auth/tokens as the service user: how our server checks a token."""
        return self.request("GET", "/auth/tokens", self.service_token,
                            headers={"X-Subject-Token": token})

    def revoke(self, token: str) -> None:
        """DELETE /v3/auth/tokens: the token is refused from now on."""
        self._ok(self.request("DELETE", "/auth/tokens", headers={"X-Subject-Token": token}))

    # -- setup --------------------------------------------------------------
    def _find(self, collection: str, name: str) -> dict[str, Any] | None:
        items = self._ok(self.request("GET", f"/{collection}", params={"name": name}))
        return items[collection][0] if items[collection] else None

    def _ensure(self, collection: str, name: str, **attrs: Any) -> str:
        found = self._find(collection, name)
        if found is None:
            key = collection[:-1]
            found = self._ok(self.request("POST", f"/{collection}",
                                          json={key: {"name": name, **attrs}}))[key]
        return found["id"]

    def populate(self) -> None:
        """Projects, users and role assignments of the table in the module doc."""
        for role in ("admin", "member", "reader", "service"):
            found = self._find("roles", role)
            assert found is not None, f"keystone bootstrap made no {role!r} role"
            self.role_ids[role] = found["id"]
        for project in sorted({project for project, _ in USERS.values()}):
            self.project_ids[project] = self._ensure("projects", project, domain_id="default")
        for user, (project, roles) in USERS.items():
            self.user_ids[user] = self._ensure("users", user, domain_id="default",
                                               password=self.passwords[user])
            for role in roles:
                self._ok(self.request("PUT", f"/projects/{self.project_ids[project]}/users/"
                                             f"{self.user_ids[user]}/roles/{self.role_ids[role]}"))

    def register_network_endpoint(self, url: str) -> None:
        """Put neutrino in the catalog: service type ``network`` with a public
        endpoint in RegionOne at ``url`` (replaces an earlier one)."""
        self.register_endpoint("neutron", "network", url)

    def register_endpoint(self, name: str, service_type: str, url: str) -> None:
        """A service ``name`` of ``service_type`` in the catalog, with a public
        endpoint in RegionOne at ``url`` (replaces an earlier one)."""
        service = self._ensure("services", name, type=service_type)
        endpoints = self._ok(self.request("GET", "/endpoints", params={
            "service_id": service, "interface": "public"}))["endpoints"]
        for endpoint in endpoints:
            self._ok(self.request("DELETE", f"/endpoints/{endpoint['id']}"))
        self._ok(self.request("POST", "/endpoints", json={"endpoint": {
            "service_id": service, "interface": "public", "region_id": REGION, "url": url}}))

    # -- process ------------------------------------------------------------
    def log(self) -> str:
        return log_tail(self.workdir)

    def stop(self) -> None:
        self.http.close()
        stop_process(self.proc)


def log_tail(workdir: Path, lines: int = 40) -> str:
    path = workdir / "keystone.log"
    return "\n".join(path.read_text().splitlines()[-lines:]) if path.exists() else ""


def stop_process(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def start_keystone(workdir: Path, expiration: int = 3600, timeout: float = 60) -> Keystone:
    """A bootstrapped, populated keystone serving from ``workdir`` on a free port.

    The port is chosen by the subprocess binding port 0 (no race between xdist
    workers); it writes the port to ``workdir/port`` once it serves."""
    workdir.mkdir(parents=True, exist_ok=True)
    write_config(workdir, expiration)
    (workdir / "port").unlink(missing_ok=True)
    env = {**os.environ, "OS_KEYSTONE_CONFIG_DIR": str(workdir),
           "KEYSTONE_ADMIN_PASSWORD": PASSWORDS["admin"], "PYTHONWARNINGS": "ignore"}
    env.pop("OS_KEYSTONE_CONFIG_FILES", None)
    with open(workdir / "keystone.log", "ab") as log:
        proc = subprocess.Popen([sys.executable, "-c", _SERVER], cwd=workdir, env=env,
                                stdin=subprocess.DEVNULL, stdout=log, stderr=log)
    try:
        deadline = time.monotonic() + timeout
        port_file = workdir / "port"
        while not port_file.exists():
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"keystone did not start (exit {proc.poll()}):\n"
                                   f"{log_tail(workdir)}")
            time.sleep(0.05)
        ks = Keystone(workdir, proc, int(port_file.read_text()))
    except BaseException:
        stop_process(proc)
        raise
    try:
        assert ks.http.get("/").status_code == 200
        ks.populate()
        return ks
    except BaseException:
        ks.stop()
        raise


def clouds_yaml(path: Path, keystone: Keystone, network_url: str | None = None) -> Path:
    """A clouds.yaml with one cloud per user (alice, bob, carol, rita, admin), for
    openstacksdk and the ``openstack`` CLI (``OS_CLIENT_CONFIG_FILE``);
    ``network_url`` overrides the catalog's network endpoint."""
    clouds = {}
    for user in ("alice", "bob", "carol", "rita", "admin"):
        cloud: dict[str, Any] = {
            "auth_type": "password",
            "auth": keystone.credentials(user),
            "region_name": REGION, "interface": "public", "identity_api_version": 3,
        }
        if network_url:
            cloud["network_endpoint_override"] = network_url
        clouds[user] = cloud
    path.write_text(yaml.safe_dump({"clouds": clouds}, sort_keys=False))
    return path


@pytest.fixture(scope="session", name="keystone")
def keystone_fixture(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Keystone]:
    """``keystone``: one per test session (per xdist worker). A test module uses it
    with ``from tests.keystone import keystone_fixture  # noqa: F401`` (another name
    than the fixture's, so that test arguments named ``keystone`` shadow nothing)."""
    if not installed():
        pytest.skip("keystone is not installed: pip install -e '.[test]'")
    ks = start_keystone(tmp_path_factory.mktemp("keystone"))
    yield ks
    ks.stop()
