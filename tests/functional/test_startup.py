"""neutrino-server and neutrino-db-manage as processes: configuration and start-up.

A configuration the server cannot use stops it before it serves, with a
non-zero exit and one ``neutrino-server: ...`` line that names the option
and the file. Unknown sections and options only warn. The example
``etc/neutrino.conf`` documents every option with its real default.
"""

from __future__ import annotations

import concurrent.futures
import http.client
import os
import re
import socket
import subprocess
import sys
import time
from importlib.metadata import entry_points
from pathlib import Path

import httpx
import pytest
from alembic.script import ScriptDirectory

from neutrino import config, log
from neutrino.api import keystone, policy, topology
from neutrino.api.metrics import GROUP as METRICS_GROUP
from neutrino.cmd.server import build_app, load_config
from neutrino.db import migrate
from neutrino.plugins import providers
from tests.harness import free_port

BIN = Path(sys.executable).parent
SERVER = str(BIN / "neutrino-server")
DB_MANAGE = str(BIN / "neutrino-db-manage")
EXAMPLE = Path(__file__).resolve().parents[2] / "etc" / "neutrino.conf"


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def base_conf(tmp: Path, port: int | None = None, extra: str = "") -> Path:
    """A config whose state lives in ``tmp`` (SQLite), plus ``extra`` lines."""
    return write(tmp / f"base-{port or 0}.conf",
                 f"[DEFAULT]\nbind_port = {port or free_port()}\nstate_path = {tmp / 'state'}\n"
                 f"{extra}\n")


def fail_to_start(tmp: Path, *files: Path) -> tuple[int, str]:
    """Run the server expecting it to exit; returns the exit code and its output."""
    args = [arg for f in files for arg in ("--config-file", str(f))]
    try:
        proc = subprocess.run([SERVER, *args], capture_output=True, text=True, cwd=tmp,
                              timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail("the server started instead of refusing the configuration")
    return proc.returncode, proc.stdout + proc.stderr


def one_error_line(output: str) -> str:
    """The single ``neutrino-server:`` line; no traceback anywhere."""
    assert "Traceback" not in output, output
    lines = [line for line in output.splitlines() if line.startswith("neutrino-server:")]
    assert len(lines) == 1, output
    return lines[0]


class Running:
    def __init__(self, proc: subprocess.Popen, url: str, log: Path):
        self.proc, self.url, self.log = proc, url, log

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def serve(tmp: Path, port: int, *files: Path) -> Running:
    """Start the server with ``files`` and wait until it answers on ``port``."""
    log = tmp / f"server-{port}.log"
    args = [arg for f in files for arg in ("--config-file", str(f))]
    proc = subprocess.Popen([SERVER, *args], stdout=log.open("wb"), stderr=subprocess.STDOUT,
                            cwd=tmp, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"server exited {proc.returncode}:\n{log.read_text()}")
        try:
            if httpx.get(url + "/", timeout=1).status_code == 200:
                return Running(proc, url, log)
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    proc.kill()
    pytest.fail(f"server did not answer in time:\n{log.read_text()}")


@pytest.fixture
def running(tmp_path):
    started: list[Running] = []

    def start(port: int, *files: Path) -> Running:
        srv = serve(tmp_path, port, *files)
        started.append(srv)
        return srv

    yield start
    for srv in started:
        srv.stop()


def head_revision() -> str:
    return ScriptDirectory.from_config(migrate.alembic_config("sqlite://")).get_current_head()


# --- refusing to start ---------------------------------------------------------------


BAD_VALUES = [
    ("DEFAULT", "bind_port = abc", "bind_port"),
    ("DEFAULT", "bind_port = 70000", "bind_port"),
    ("DEFAULT", "api_workers = 0", "api_workers"),
    ("DEFAULT", "base_mac = zz", "base_mac"),
    ("DEFAULT", "bind_host = 256.1.1.1", "bind_host"),
    ("DEFAULT", "auth_strategy = basic", "auth_strategy"),
    ("DEFAULT", "allow_overlapping_ips = maybe", "allow_overlapping_ips"),
    ("DEFAULT", "pagination_max_limit = lots", "pagination_max_limit"),
    ("DEFAULT", "pagination_max_limit = 0", "pagination_max_limit"),
    ("database", "max_retries = 0", "max_retries"),
    ("quotas", "quota_port = -5", "quota_port"),
]


@pytest.mark.parametrize(("section", "line", "option"), BAD_VALUES)
def test_bad_value_is_named_with_option_and_file(tmp_path, section, line, option):
    """The whole matrix in-process (cheap); the process tests below take samples."""
    conf = write(tmp_path / "bad.conf", f"[{section}]\n{line}\n")
    with pytest.raises(config.ConfigError) as caught:
        load_config([str(base_conf(tmp_path)), str(conf)])
    value = line.split("=", 1)[1].strip()
    assert f"invalid value {value!r} for option {option} in [{section}] of {conf}: " in str(
        caught.value)


@pytest.mark.parametrize(("section", "line", "option"), [
    ("DEFAULT", "bind_port = abc", "bind_port"),
    ("DEFAULT", "api_workers = 0", "api_workers"),
    ("DEFAULT", "base_mac = zz", "base_mac"),
    ("quotas", "quota_port = -5", "quota_port"),
])
def test_bad_value_stops_the_server_with_one_line(tmp_path, section, line, option):
    conf = write(tmp_path / "bad.conf", f"[{section}]\n{line}\n")
    code, output = fail_to_start(tmp_path, base_conf(tmp_path), conf)
    assert code != 0
    error = one_error_line(output)
    assert output.strip() == error, "nothing but the error is printed"
    value = line.split("=", 1)[1].strip()
    assert error.startswith(
        f"neutrino-server: invalid value {value!r} for option {option} in [{section}] of {conf}")
    assert not (tmp_path / "state").exists(), "refused before touching the database"


def test_good_values_parse(tmp_path):
    conf = write(tmp_path / "good.conf",
                 "[DEFAULT]\nbind_host = controller-1.example.org\n"
                 "pagination_max_limit = infinite\nservice_plugins =\n"
                 "[DEFAULT]\nbind_port = 1\nbind_port = 2\n")  # repeats merge, last wins
    conf_obj = load_config([str(conf)])
    assert conf_obj.DEFAULT.bind_host == "controller-1.example.org"
    assert conf_obj.DEFAULT.pagination_max_limit == -1
    assert conf_obj.DEFAULT.bind_port == 2


def test_unreadable_config_file(tmp_path):
    missing = tmp_path / "missing.conf"
    code, output = fail_to_start(tmp_path, missing)
    assert code != 0
    assert one_error_line(output) == (
        f"neutrino-server: cannot read config file {missing}: No such file or directory")

    directory = tmp_path / "a-directory.conf"
    directory.mkdir()
    code, output = fail_to_start(tmp_path, directory)
    assert code != 0
    assert f"cannot read config file {directory}: Is a directory" in one_error_line(output)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_config_file_without_read_permission(tmp_path):
    private = write(tmp_path / "private.conf", "[DEFAULT]\n")
    private.chmod(0)
    code, output = fail_to_start(tmp_path, private)
    assert code != 0
    assert f"cannot read config file {private}: Permission denied" in one_error_line(output)


def test_config_file_that_is_not_ini(tmp_path):
    garbage = write(tmp_path / "garbage.conf", "bind_port = 1\n")
    code, output = fail_to_start(tmp_path, garbage)
    assert code != 0
    assert f"cannot parse config file {garbage}" in one_error_line(output)


@pytest.mark.parametrize(("line", "message"), [
    ("core_plugin = no_such_core", "unknown core plugin 'no_such_core'"),
    ("core_plugin = neutrino.nowhere.Plugin", "unknown core plugin 'neutrino.nowhere.Plugin'"),
    ("service_plugins = no_such_service", "unknown service plugin 'no_such_service'"),
])
def test_unknown_plugin_is_named_with_option_and_file(tmp_path, line, message):
    conf = write(tmp_path / "plugins.conf", f"[DEFAULT]\n{line}\n")
    with pytest.raises(config.ConfigError) as caught:
        load_config([str(base_conf(tmp_path)), str(conf)])
    option = line.split("=")[0].strip()
    assert message in str(caught.value)
    assert f"{option} in [DEFAULT] of {conf}" in str(caught.value)


@pytest.mark.parametrize(("line", "message"), [
    ("core_plugin = no_such_core", "unknown core plugin 'no_such_core'"),
    ("service_plugins = no_such_service", "unknown service plugin 'no_such_service'"),
])
def test_unknown_plugin_stops_the_server(tmp_path, line, message):
    conf = write(tmp_path / "plugins.conf", f"[DEFAULT]\n{line}\n")
    code, output = fail_to_start(tmp_path, base_conf(tmp_path), conf)
    assert code != 0
    error = one_error_line(output)
    option = line.split("=")[0].strip()
    assert message in error and f"{option} in [DEFAULT] of {conf}" in error


def test_rpc_workers_need_a_broker(tmp_path):
    conf = write(tmp_path / "rpc.conf", "[DEFAULT]\nrpc_workers = 2\n")
    code, output = fail_to_start(tmp_path, base_conf(tmp_path), conf)
    assert code != 0
    error = one_error_line(output)
    assert "rpc_workers = 2 needs a message broker" in error
    assert "transport_url in [DEFAULT] (default)" in error


@pytest.mark.parametrize(("text", "expected"), [
    ("[DEFAULT]\nauth_strategy = keystone\n",
     "auth_strategy = keystone needs auth_url in [keystone_authtoken]"),
    ("[DEFAULT]\nauth_strategy = keystone\n[keystone_authtoken]\nauth_url = http://k\n"
     "auth_type = token\n", "auth_type token in [keystone_authtoken] is not supported"),
    ("[oslo_policy]\npolicy_file = missing.yaml\n", "cannot read policy file"),
    ("[oslo_policy]\npolicy_file = broken.yaml\n",
     "rule create_network in policy file"),
])
def test_unusable_auth_or_policy_stops_the_server(tmp_path, text, expected):
    write(tmp_path / "broken.yaml", '"create_network": "role:a or ("\n')
    conf = write(tmp_path / "auth.conf", text)
    code, output = fail_to_start(tmp_path, base_conf(tmp_path), conf)
    assert code != 0
    assert expected in one_error_line(output)


def test_policy_file_next_to_the_config_is_used(tmp_path, running):
    """The default policy_file, policy.yaml, is looked for beside the config file."""
    write(tmp_path / "policy.yaml", '"create_network": "rule:admin_only"\n')
    port = free_port()
    srv = running(port, base_conf(tmp_path, port, "auth_strategy = trusted_headers"))
    member = {"X-Project-Id": "p1", "X-User-Id": "u1", "X-Roles": "member"}
    resp = httpx.post(f"{srv.url}/v2.0/networks", json={"network": {}}, headers=member)
    assert resp.status_code == 403, resp.text
    resp = httpx.post(f"{srv.url}/v2.0/networks", json={"network": {}},
                      headers={**member, "X-Roles": "admin"})
    assert resp.status_code == 201, resp.text


@pytest.mark.parametrize("url", [
    "nosuchdialect://user@host/db",
    "postgresql+psycopg2://nobody@127.0.0.1:1/neutrino",  # nothing listens on port 1
])
def test_unusable_database_stops_the_server(tmp_path, url):
    conf = write(tmp_path / "db.conf", f"[database]\nconnection = {url}\n")
    code, output = fail_to_start(tmp_path, base_conf(tmp_path), conf)
    assert code != 0
    assert (f"cannot use the database of connection in [database] of {conf}"
            in one_error_line(output))


def test_port_in_use_stops_the_server(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code, output = fail_to_start(tmp_path, base_conf(tmp_path, port))
    assert code != 0
    assert "address already in use" in output.lower() and str(port) in output


# --- starting ------------------------------------------------------------------------


def test_unknown_sections_and_options_only_warn(tmp_path, running):
    port = free_port()
    extra = write(tmp_path / "extra.conf",
                  "[DEFAULT]\nno_such_option = 1\n"
                  "[no_such_section]\nanything = 2\n"
                  "[database]\nnot_a_database_option = 3\n"
                  "[some_vendor_plugin]\nendpoint = x\n")
    srv = running(port, base_conf(tmp_path, port), extra)
    assert httpx.get(f"{srv.url}/v2.0/networks").status_code == 200
    log = srv.log.read_text()
    assert f"unknown option no_such_option in [DEFAULT] of {extra} ignored" in log
    assert f"unknown section [no_such_section] in {extra} ignored" in log
    assert f"unknown option not_a_database_option in [database] of {extra} ignored" in log
    assert f"unknown section [some_vendor_plugin] in {extra} ignored" in log


def test_later_config_file_overrides_earlier(tmp_path, running):
    first_port, second_port = free_port(), free_port()
    first = write(tmp_path / "first.conf",
                  f"[DEFAULT]\nbind_port = {first_port}\nstate_path = {tmp_path / 'state'}\n"
                  "pagination_max_limit = 1\n[quotas]\nquota_network = 3\n")
    second = write(tmp_path / "second.conf",
                   f"[DEFAULT]\nbind_port = {second_port}\npagination_max_limit = 2\n")
    srv = running(second_port, first, second)
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"http://127.0.0.1:{first_port}/", timeout=2)
    for i in range(3):
        resp = httpx.post(f"{srv.url}/v2.0/networks", json={"network": {"name": f"n{i}"}})
        assert resp.status_code == 201, resp.text
    # quota_network = 3 from the first file still holds: only it sets the option
    over = httpx.post(f"{srv.url}/v2.0/networks", json={"network": {"name": "n3"}})
    assert over.status_code == 409 and over.json()["NeutronError"]["type"] == "OverQuota"
    # pagination_max_limit = 2 from the second file wins over 1
    page = httpx.get(f"{srv.url}/v2.0/networks").json()
    assert len(page["networks"]) == 2 and page["networks_links"][0]["rel"] == "next"
    assert (tmp_path / "state" / "neutrino.db").exists()


def test_db_manage_upgrade_then_current(tmp_path):
    conf = base_conf(tmp_path)

    def db_manage(*args: str) -> str:
        proc = subprocess.run([DB_MANAGE, "--config-file", str(conf), *args],
                              capture_output=True, text=True, cwd=tmp_path, timeout=60)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout.strip()

    assert db_manage("current") == "(empty database)"
    db_manage("upgrade", "head")
    assert db_manage("current") == head_revision()

    proc = subprocess.run([DB_MANAGE, "--config-file", str(tmp_path / "missing.conf"),
                           "current"], capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0
    assert "cannot read config file" in proc.stderr and "Traceback" not in proc.stderr


def test_server_creates_the_schema_on_a_fresh_sqlite_file(tmp_path, running):
    port = free_port()
    state = tmp_path / "fresh" / "state"  # neither directory exists yet
    conf = write(tmp_path / "fresh.conf", f"[DEFAULT]\nbind_port = {port}\nstate_path = {state}\n")
    srv = running(port, conf)
    db_file = state / "neutrino.db"
    assert db_file.exists()
    assert migrate.current(f"sqlite:///{db_file}") == head_revision()
    net = httpx.post(f"{srv.url}/v2.0/networks", json={"network": {"name": "fresh"}})
    assert net.status_code == 201, net.text
    subnet = httpx.post(f"{srv.url}/v2.0/subnets", json={"subnet": {
        "network_id": net.json()["network"]["id"], "ip_version": 4, "cidr": "10.0.0.0/24"}})
    assert subnet.status_code == 201, subnet.text


def _children(pid: int) -> dict[int, str]:
    """The direct children of ``pid`` and their command lines (from /proc)."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            if ppid == pid:
                found[int(entry.name)] = (entry / "cmdline").read_text().replace("\0", " ")
        except (OSError, IndexError, ValueError):
            continue  # the process went away
    return found


def test_two_api_workers_serve(tmp_path, running):
    port = free_port()
    srv = running(port, base_conf(tmp_path, port, "api_workers = 2"))
    # the server's process is the first worker; the second is spawned
    workers = [c for c in _children(srv.proc.pid).values() if "spawn_main" in c]
    assert len(workers) == 1, _children(srv.proc.pid)

    def create(i: int) -> int:
        # a new connection per request, so the kernel spreads them over the workers
        return httpx.post(f"{srv.url}/v2.0/networks",
                          json={"network": {"name": f"w{i}"}}, timeout=30).status_code

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        codes = list(pool.map(create, range(16)))
    assert codes == [201] * 16
    names = {n["name"] for n in httpx.get(f"{srv.url}/v2.0/networks").json()["networks"]}
    assert names == {f"w{i}" for i in range(16)}


def test_a_worker_that_dies_is_replaced_on_its_sockets(tmp_path, running):
    port = free_port()
    srv = running(port, base_conf(tmp_path, port, "api_workers = 2"))

    def worker_pids() -> list[int]:
        return [pid for pid, line in _children(srv.proc.pid).items() if "spawn_main" in line]

    [first] = worker_pids()
    os.kill(first, 9)
    # meanwhile the connections hashed to its socket wait in the queue
    codes = [httpx.get(f"{srv.url}/v2.0/networks", timeout=30).status_code
             for _ in range(16)]
    assert codes == [200] * 16
    deadline = time.monotonic() + 30
    while not [pid for pid in worker_pids() if pid != first]:
        assert time.monotonic() < deadline, "no worker came in its place"
        time.sleep(0.1)
    assert srv.proc.poll() is None


# --- the example configuration -------------------------------------------------------


def _shown(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ", ".join(value)
    return "" if value is None else str(value)


def test_example_config_documents_every_option_with_its_default(tmp_path):
    lines = EXAMPLE.read_text().splitlines()
    documented: dict[tuple[str, str], int] = {}
    section = None
    for number, line in enumerate(lines):
        if re.match(r"^\[(.+)\]$", line):
            section = line[1:-1]
        match = re.match(r"^#(\w+) =", line)
        if match:
            documented[(section, match.group(1))] = number
    # the service plugins' own groups too ([default_fwg_rules] of firewall_v2)
    plugin_groups = [group for point in entry_points(group="neutrino.service_plugins")
                     for group in point.load().option_groups]
    groups = [*config.CORE_GROUPS, keystone.GROUP, policy.GROUP, providers.GROUP,
              topology.GROUP, METRICS_GROUP, *plugin_groups]
    groups.append(log.GROUP)  # [DEFAULT]'s logging options, registered by each command
    expected = {(g.name, o.name) for g in groups for o in g.opts}
    assert set(documented) == expected

    for group in groups:
        for opt in group.opts:
            number = documented[(group.name, opt.name)]
            assert lines[number].rstrip() == f"#{opt.name} = {_shown(opt.default)}".rstrip()
            comments = []
            for above in reversed(lines[:number]):
                if not above.startswith("# "):
                    break
                comments.insert(0, above[2:])
            assert " ".join(comments).startswith(opt.help), opt.name

    # every documented default, uncommented, parses back to the default
    uncommented = "\n".join(re.sub(r"^#(\w+ =)", r"\1", line) for line in lines)
    parsed = config.load([str(write(tmp_path / "uncommented.conf", uncommented))],
                         [keystone.GROUP, policy.GROUP, providers.GROUP, topology.GROUP,
                          METRICS_GROUP, *plugin_groups])
    parsed.register([log.GROUP])
    for group in groups:
        for opt in group.opts:
            assert getattr(parsed.group(group.name), opt.name) == opt.default, opt.name


def test_server_starts_with_the_example_config(tmp_path, running):
    port = free_port()
    local = write(tmp_path / "local.conf",
                  f"[DEFAULT]\nbind_port = {port}\nstate_path = {tmp_path / 'state'}\n"
                  f"[database]\nconnection = sqlite:///{tmp_path / 'example.db'}\n")
    srv = running(port, EXAMPLE, local)
    assert httpx.post(f"{srv.url}/v2.0/networks",
                      json={"network": {"name": "example"}}).status_code == 201
    assert (tmp_path / "example.db").exists()
    assert "WARNING" not in srv.log.read_text()


def test_server_starts_with_the_ml2_example(tmp_path, running):
    """etc/ml2_conf.ini enables every type driver; the server takes it as it is."""
    port = free_port()
    example = Path(__file__).resolve().parents[2] / "etc" / "ml2_conf.ini"
    srv = running(port, base_conf(tmp_path, port), example)
    net = httpx.post(f"{srv.url}/v2.0/networks", json={"network": {"name": "x"}}).json()
    assert net["network"]["provider:network_type"] == "vxlan"
    assert net["network"]["mtu"] == 1450


@pytest.mark.parametrize(("text", "expected"), [
    ("[ml2]\nmechanism_drivers = linuxbridge,nosuch\n", "unknown ml2 mechanism driver 'nosuch'"),
    ("[ml2]\ntype_drivers = local,nosuch\n", "unknown ml2 type driver 'nosuch'"),
    ("[ml2]\ntype_drivers = local\ntenant_network_types = vxlan\n",
     "tenant_network_types vxlan not in type_drivers"),
    ("[ml2_type_vxlan]\nvni_ranges = 20:10\n", "for option vni_ranges in [ml2_type_vxlan]"),
    ("[ml2_type_vlan]\nnetwork_vlan_ranges = physnet1:1:5000\n",
     "for option network_vlan_ranges in [ml2_type_vlan]"),
])
def test_bad_ml2_configuration_stops_the_server(tmp_path, text, expected):
    conf = write(tmp_path / "ml2.conf", text)
    code, output = fail_to_start(tmp_path, base_conf(tmp_path), conf)
    assert code != 0
    assert expected in one_error_line(output)


# --- client connections --------------------------------------------------------------


def _idle_then_ask(url: str, idle: float) -> tuple[int, str]:
    """A request on a connection left idle for ``idle`` seconds after a first one:
    the first's status, and whether the second was answered on the same socket."""
    host, port = url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        conn.request("GET", "/")
        first = conn.getresponse()
        first.read()
        if conn.sock is None:  # the answer said Connection: close
            return first.status, "closed"
        time.sleep(idle)
        try:
            conn.request("GET", "/")  # on the same socket: http.client opens no other
            second = conn.getresponse()
            second.read()
        except (http.client.HTTPException, OSError):
            return first.status, "closed"
        return first.status, "kept" if second.status == 200 else "closed"
    finally:
        conn.close()


def test_idle_client_connections_stay_open_as_neutrons_do(tmp_path, running):
    """client_socket_timeout (900 s, as Neutron's) keeps an idle connection open well
    past uvicorn's own 5 s, so a client that reuses it is not reset mid-request."""
    port = free_port()
    srv = running(port, base_conf(tmp_path, port))
    assert _idle_then_ask(srv.url, 6.0) == (200, "kept")


def test_without_keep_alive_each_answer_closes_its_connection(tmp_path, running):
    port = free_port()
    srv = running(port, base_conf(tmp_path, port, "wsgi_keep_alive = false"))
    resp = httpx.get(srv.url + "/")
    assert resp.headers["connection"] == "close"
    assert _idle_then_ask(srv.url, 0.2) == (200, "closed")


@pytest.mark.parametrize("line, threads", [("", 2), ("wsgi_default_pool_size = 5", 5)])
def test_api_threads_are_few_on_sqlite_unless_told(tmp_path, line, threads):
    """SQLite writes one transaction at a time: by default a worker has 2 threads."""
    path = base_conf(tmp_path, extra=line)
    migrate.upgrade(config.database_url(load_config([str(path)])))
    app = build_app(load_config([str(path)]))
    try:
        assert app.threads == threads
    finally:
        app.on_shutdown()
