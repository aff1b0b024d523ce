"""Starting real servers and databases for tests, and a small HTTP client."""

from __future__ import annotations

import contextlib
import ipaddress
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
PG_ADMIN = "postgresql+psycopg2://postgres@127.0.0.1:5432/postgres"
MYSQL_ADMIN = "mysql+pymysql://root@127.0.0.1:3306/"


def wait_until(check: Callable[[], Any], seconds: float = 20.0,
               what: str | Callable[[], str] = "condition") -> Any:
    """``check()``'s first true value, polled every 0.1 s; an AssertionError
    naming ``what`` (a string, or a function that tells the state) if none comes."""
    deadline = time.monotonic() + seconds
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            what = what() if callable(what) else what
            raise AssertionError(f"timed out after {seconds:g}s waiting for {what}")
        time.sleep(0.1)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def rabbit_vhost() -> Iterator[str]:
    """A RabbitMQ virtual host of the test's own on the shared broker: its URL.

    Servers on one vhost share their topic queues (that is how several servers
    serve one deployment), so each test deployment gets its own vhost, as two
    clouds on one broker would."""
    vhost = f"neutrino-test-{uuid.uuid4().hex[:12]}"
    for args in (["add_vhost", vhost], ["set_permissions", "-p", vhost, "guest", ".*", ".*",
                                        ".*"]):
        subprocess.run(["rabbitmqctl", "-q", *args], check=True, capture_output=True,
                       timeout=60)
    try:
        yield f"rabbit://guest:guest@127.0.0.1:5672/{vhost}"
    finally:
        subprocess.run(["rabbitmqctl", "-q", "delete_vhost", vhost], capture_output=True,
                       timeout=60)


def create_database(backend: str, tmp: Path) -> tuple[str, Callable[[], None]]:
    """A fresh empty database; returns its URL and a function that drops it."""
    if backend == "sqlite":
        return f"sqlite:///{tmp / 'neutrino.db'}", lambda: None
    from sqlalchemy import create_engine, text

    name = f"neutrino_test_{uuid.uuid4().hex[:12]}"
    if backend == "postgresql":
        admin = create_engine(PG_ADMIN, isolation_level="AUTOCOMMIT")
        url = f"postgresql+psycopg2://postgres@127.0.0.1:5432/{name}"
        create, drop = f'CREATE DATABASE "{name}"', f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'
    elif backend == "mysql":
        admin = create_engine(MYSQL_ADMIN, isolation_level="AUTOCOMMIT")
        url = f"mysql+pymysql://root@127.0.0.1:3306/{name}"
        create = f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4"
        drop = f"DROP DATABASE IF EXISTS `{name}`"
    else:
        raise ValueError(backend)
    with admin.connect() as conn:
        conn.execute(text(create))

    def dropper() -> None:
        with admin.connect() as conn:
            conn.execute(text(drop))
        admin.dispose()

    return url, dropper


class ApiClient:
    """HTTP to one server as one identity (trusted headers)."""

    def __init__(self, base_url: str, headers: dict[str, str]):
        self.base_url = base_url
        self.http = httpx.Client(base_url=base_url, headers=headers, timeout=60)
        self.project_id = headers.get("X-Project-Id")

    def request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        return self.http.request(method, path, **kwargs)

    def get(self, path: str, **kwargs: Any) -> httpx.Response:
        return self.http.get(path, **kwargs)

    def post(self, path: str, json: Any = None, **kwargs: Any) -> httpx.Response:
        return self.http.post(path, json=json, **kwargs)

    def put(self, path: str, json: Any = None, **kwargs: Any) -> httpx.Response:
        return self.http.put(path, json=json, **kwargs)

    def delete(self, path: str, **kwargs: Any) -> httpx.Response:
        return self.http.delete(path, **kwargs)

    # --- shortcuts that assert success --------------------------------------------

    def create(self, collection: str, **attrs: Any) -> dict[str, Any]:
        name = collection[:-1]
        resp = self.post(f"/v2.0/{collection}", json={name: attrs})
        assert resp.status_code == 201, resp.text
        return resp.json()[name]

    def show(self, collection: str, item_id: str) -> dict[str, Any]:
        resp = self.get(f"/v2.0/{collection}/{item_id}")
        assert resp.status_code == 200, resp.text
        return resp.json()[collection[:-1]]

    def network(self, **attrs: Any) -> dict[str, Any]:
        return self.create("networks", **attrs)

    def subnet(self, network_id: str, cidr: str = "10.0.0.0/24", ip_version: int | None = None,
               **attrs: Any) -> dict[str, Any]:
        version = ip_version or (6 if ":" in cidr else 4)
        return self.create("subnets", network_id=network_id, cidr=cidr, ip_version=version,
                           **attrs)

    def port(self, network_id: str, **attrs: Any) -> dict[str, Any]:
        return self.create("ports", network_id=network_id, **attrs)

    def unused_address(self, subnet: dict[str, Any]) -> str:
        """A host address of ``subnet`` that no port holds: for a spoofing
        instance, since addresses are handed out at random."""
        taken = {ip["ip_address"] for port in self.get("/v2.0/ports", params={
            "network_id": subnet["network_id"]}).json()["ports"] for ip in port["fixed_ips"]}
        taken.add(subnet["gateway_ip"])
        hosts = ipaddress.ip_network(subnet["cidr"]).hosts()
        return next(str(ip) for ip in hosts if str(ip) not in taken)


def error_of(resp: httpx.Response) -> dict[str, Any]:
    """The NeutronError body of a failed response."""
    body = resp.json()
    assert "NeutronError" in body, body
    return body["NeutronError"]


def expect_error(resp: httpx.Response, status: int, type_: str,
                 message: str | None = None) -> dict[str, Any]:
    """Assert the status, the NeutronError type and (when given) the message."""
    assert resp.status_code == status, resp.text
    error = error_of(resp)
    assert error["type"] == type_, error
    if message is not None:
        assert error["message"] == message, error
    return error


class Server:
    def __init__(self, url: str, proc: subprocess.Popen, log: Path, conf: Path, db_url: str):
        self.url = url
        self.proc = proc
        self.log = log
        self.conf = conf
        self.db_url = db_url
        self.backend = ""
        #: the load-balancer API's root, when the server serves it (``octavia_port``)
        self.octavia_url = ""
        # A test that makes the server fail on purpose says so; any other traceback
        # in the log fails the test that stops the server.
        self.tracebacks_expected = False

    def client(self, project: str | None = None, roles: tuple[str, ...] = ("member",),
               user: str | None = None) -> ApiClient:
        headers = {"X-Roles": ",".join(roles), "X-User-Id": user or "user-" + (project or "")}
        if project is not None:
            headers["X-Project-Id"] = project
        return ApiClient(self.url, headers)

    def octavia(self, project: str | None = None, roles: tuple[str, ...] = ("member",),
                user: str | None = None) -> ApiClient:
        """A client of the load-balancer API, as ``client`` is of the Networking API."""
        assert self.octavia_url, "started without octavia_port"
        client = self.client(project, roles, user)
        return ApiClient(self.octavia_url, dict(client.http.headers))

    def stop(self) -> None:
        terminate(self.proc)
        if not self.tracebacks_expected:
            assert_no_traceback(self.log)


def terminate(proc: subprocess.Popen, seconds: float = 10) -> None:
    """SIGTERM, then SIGKILL if ``proc`` is not gone within ``seconds``."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(seconds)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def assert_no_traceback(log: Path) -> None:
    """A log with a traceback is a bug found (a 500, a crashed task), even when every
    answer the test checked was right."""
    text = log.read_text(errors="replace")
    start = text.find("Traceback")
    if start >= 0:
        head = text.rfind("\n", 0, start)
        raise AssertionError(f"{log} holds a traceback:\n{text[head + 1:start + 3000]}")


def write_config(tmp: Path, db_url: str, port: int, auth: str = "noauth", workers: int = 1,
                 extra: str = "") -> Path:
    conf = tmp / f"neutrino-{port}.conf"
    conf.write_text(
        "[DEFAULT]\n"
        f"bind_port = {port}\n"
        f"auth_strategy = {auth}\n"
        f"api_workers = {workers}\n"
        f"state_path = {tmp / 'state'}\n"
        f"{extra}\n"
        "[database]\n"
        f"connection = {db_url}\n")
    return conf


def start_server(tmp: Path, db_url: str, auth: str = "noauth", workers: int = 1,
                 extra: str = "", config_text: str | None = None,
                 port: int | None = None, octavia_port: int | None = None) -> Server:
    """Start ``neutrino-server`` and wait until it answers; fail with its log if not.

    ``port``: the one it listens on (a free one if None), so that a server can
    be started again where a load balancer expects it. ``octavia_port``: where
    the load-balancer API listens (``extra`` loads the octavia plugin)."""
    port = port or free_port()
    if octavia_port:
        extra += f"\n[api_settings]\nbind_port = {octavia_port}\n"
    conf = write_config(tmp, db_url, port, auth, workers, extra)
    if config_text is not None:
        conf.write_text(config_text)
    log = tmp / f"server-{port}.log"
    proc = subprocess.Popen(
        [sys.executable, "-m", "neutrino.cmd.server", "--config-file", str(conf)],
        stdout=log.open("wb"), stderr=subprocess.STDOUT, cwd=tmp,
        # the repository on the path: tests load fake drivers from tests/fakes
        env={**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": str(ROOT)})
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited {proc.returncode}:\n{log.read_text()}")
        try:
            if httpx.get(url + "/", timeout=1).status_code < 500:
                server = Server(url, proc, log, conf, db_url)
                if octavia_port:
                    server.octavia_url = f"http://127.0.0.1:{octavia_port}"
                return server
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    proc.kill()
    raise RuntimeError(f"server did not answer in time:\n{log.read_text()}")
