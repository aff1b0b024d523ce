"""API benchmark: port-create throughput and port-list latency, against a ceiling.

    .venv/bin/python bench/api_bench.py [--backends sqlite,postgresql] [--profile DIR]

For each backend it starts ``neutrino-server`` (``api_workers = 2``, noauth,
``[quotas] quota_port = -1``, and the extensions a typical cloud loads:
``service_plugins = router,port_forwarding``, ML2's ``port_security`` and
``dns`` extension drivers beside those ML2 always has) on a fresh database and
measures, over HTTP:

* port creates on one network with a /16 subnet, at concurrency 1 and 8;
* ``GET /v2.0/ports`` (all ports, admin) latency p50/p99 at 1,000 and 5,000
  ports in the database, one request at a time, and at 5,000 with
  ``fields=id&fields=fixed_ips``;
* the memory (RSS) of the server and its workers at the end.

In the same run it measures the practical ceiling of this machine: a bare ASGI
app (``ceiling_app`` below, no framework) served by uvicorn with 2 workers
exactly as neutrino is, doing one SQLite INSERT + COMMIT (WAL) per POST, at
concurrency 8. Neutrino's create rate is printed as a fraction of it.

The load generator is this script's own process: a minimal HTTP/1.1 keep-alive
client on asyncio (one connection per concurrent stream), much cheaper per
request than httpx, so that it takes as little of the machine's CPU as
possible from the servers. Its CPU time is reported beside each figure, and so
is the CPU time of the two server workers per request, and how many CPUs the
rest of the machine kept busy meanwhile (the database server, and anything
else running: figures taken on a busy machine are not figures).

On a shared machine, ``--wait-quiet SECONDS`` waits before each measured
phase until the rest of the machine is idle. Even then a virtual machine's
speed drifts by some tens of percent from one minute to the next: compare
trees by running them in turn, more than once, not against an old printout.

With ``--profile DIR`` it also runs ``py-spy record`` (``pip install py-spy``)
against both workers during 1,000 extra c=8 creates and extra 5,000-port lists
(apart from the measured ones: py-spy takes CPU too), writes collapsed stacks
to DIR and prints the functions where the workers spent their CPU time.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CEILING_DB_ENV = "NEUTRINO_BENCH_CEILING_DB"


# --- the ceiling: a bare ASGI app, one INSERT + COMMIT per POST ------------------------

_ceiling_conn: sqlite3.Connection | None = None


def _ceiling_db() -> sqlite3.Connection:
    global _ceiling_conn
    if _ceiling_conn is None:
        conn = sqlite3.connect(os.environ[CEILING_DB_ENV], timeout=30, isolation_level=None,
                               check_same_thread=False)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")  # as neutrino's engine sets it
        conn.execute("CREATE TABLE IF NOT EXISTS ports (id TEXT PRIMARY KEY, body BLOB)")
        _ceiling_conn = conn
    return _ceiling_conn


async def ceiling_app(scope: dict, receive, send) -> None:
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                _ceiling_db()
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    if scope["type"] != "http":
        return
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    status, payload = 200, b'{"ok":true}'
    if scope["method"] == "POST":
        item_id = str(uuid.uuid4())
        conn = _ceiling_db()
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT INTO ports (id, body) VALUES (?, ?)", (item_id, body))
        conn.execute("COMMIT")
        status, payload = 201, b'{"port":{"id":"' + item_id.encode() + b'"}}'
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(payload)).encode())]})
    await send({"type": "http.response.body", "body": payload})


# --- the load generator -----------------------------------------------------------------

class HttpConnection:
    """One keep-alive HTTP/1.1 connection; just enough for JSON requests and answers."""

    def __init__(self, host: str, port: int):
        self.host, self.port = host, port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def request(self, method: str, path: str, body: bytes = b"") -> tuple[int, bytes]:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        head = (f"{method} {path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n"
                f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
                "X-Project-Id: bench\r\n\r\n").encode()
        self.writer.write(head + body)
        status_line = await self.reader.readline()
        if not status_line:
            raise ConnectionError("server closed the connection")
        status = int(status_line.split()[1])
        length, close = 0, False
        while True:
            line = await self.reader.readline()
            if line in (b"\r\n", b""):
                break
            name, _, value = line.partition(b":")
            name = name.strip().lower()
            if name == b"content-length":
                length = int(value)
            elif name == b"connection" and value.strip().lower() == b"close":
                close = True
        payload = await self.reader.readexactly(length) if length else b""
        if close:
            self.close()
        return status, payload

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None


@dataclass
class Run:
    label: str
    count: int
    concurrency: int
    seconds: float
    latencies: list[float]
    statuses: Counter
    client_cpu: float  # seconds of this process's CPU
    server_cpu: float  # seconds of the server workers' CPU
    other_cores: float  # the rest of the machine's busy CPUs meanwhile (database, others)
    errors: list[str] = field(default_factory=list)

    @property
    def rate(self) -> float:
        return self.count / self.seconds

    def pct(self, q: float) -> float:
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000

    @property
    def p50(self) -> float:
        return statistics.median(self.latencies) * 1000


def cpu_seconds(pids: list[int]) -> float:
    total = 0.0
    tick = os.sysconf("SC_CLK_TCK")
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except FileNotFoundError:
            continue
        total += (int(fields[11]) + int(fields[12])) / tick  # utime + stime
    return total


@dataclass
class Quiet:
    limit: float = 0.3  # CPUs
    max_wait: float = 0.0  # seconds; 0: do not wait


QUIET = Quiet()


def busy_seconds() -> float:
    """CPU seconds all CPUs of the machine have been busy since boot (/proc/stat)."""
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def wait_quiet(limit: float, own_pids: list[int], max_wait: float) -> float:
    """Wait (up to ``max_wait`` s) until the rest of the machine uses < ``limit`` CPUs.

    Returns the CPUs the rest of the machine used over the last second looked at.
    """
    deadline = time.monotonic() + max_wait
    while True:
        busy0, own0, mine0 = busy_seconds(), cpu_seconds(own_pids), time.process_time()
        time.sleep(1.0)
        other = (busy_seconds() - busy0) - (cpu_seconds(own_pids) - own0) - (
            time.process_time() - mine0)
        if other < limit or time.monotonic() > deadline:
            return max(0.0, other)


def load(url: str, method: str, path: str, body: bytes, count: int, concurrency: int,
         label: str, expect: int, server_pids: list[int]) -> Run:
    """``count`` requests over ``concurrency`` connections, each stream one after another."""
    host, port = url.removeprefix("http://").split(":")
    latencies: list[float] = []
    statuses: Counter = Counter()
    errors: list[str] = []
    remaining = [count]

    async def stream() -> None:
        conn = HttpConnection(host, int(port))
        try:
            while remaining[0] > 0:
                remaining[0] -= 1
                start = time.perf_counter()
                status, payload = await conn.request(method, path, body)
                latencies.append(time.perf_counter() - start)
                statuses[status] += 1
                if status != expect and len(errors) < 5:
                    errors.append(f"{status} {payload[:300]!r}")
        finally:
            conn.close()

    async def main() -> float:
        start = time.perf_counter()
        await asyncio.gather(*(stream() for _ in range(concurrency)))
        return time.perf_counter() - start

    if QUIET.max_wait > 0:
        idle = wait_quiet(QUIET.limit, server_pids, QUIET.max_wait)
        if idle >= QUIET.limit:
            print(f"    (machine not quiet: {idle:.2f} CPUs busy elsewhere)", flush=True)
    cpu0, server0, busy0 = time.process_time(), cpu_seconds(server_pids), busy_seconds()
    seconds = _run(main())
    client_cpu, server_cpu = time.process_time() - cpu0, cpu_seconds(server_pids) - server0
    other = busy_seconds() - busy0 - client_cpu - server_cpu
    return Run(label, count, concurrency, seconds, latencies, statuses, client_cpu, server_cpu,
               max(0.0, other) / seconds, errors)


def _run(coro):
    try:
        import uvloop
    except ImportError:
        return asyncio.run(coro)
    return uvloop.run(coro)


# --- servers --------------------------------------------------------------------------

def workers_of(pid: int) -> list[int]:
    """The worker processes spawned by a server (its Python children)."""
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        for child in (task / "children").read_text().split():
            cmdline = Path(f"/proc/{child}/cmdline").read_bytes()
            if b"resource_tracker" not in cmdline:
                found.append(int(child))
    return found


def wait_for_workers(pid: int, n: int) -> list[int]:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        pids = workers_of(pid)
        if len(pids) >= n:
            return pids
        time.sleep(0.1)
    raise RuntimeError(f"expected {n} workers under {pid}, found {workers_of(pid)}")


def start_ceiling(tmp: Path) -> tuple[str, subprocess.Popen, Path]:
    from tests.harness import free_port

    port = free_port()
    log = tmp / "ceiling.log"
    db = tmp / "ceiling.db"
    proc = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "api_bench:ceiling_app", "--app-dir",
         str(Path(__file__).resolve().parent), "--host", "127.0.0.1", "--port", str(port),
         "--workers", "2", "--no-access-log", "--log-level", "warning",
         "--timeout-graceful-shutdown", "5"],
        stdout=log.open("wb"), stderr=subprocess.STDOUT, cwd=tmp,
        env={**os.environ, CEILING_DB_ENV: str(db)})
    url = f"http://127.0.0.1:{port}"
    _wait_http(url, proc, log)
    return url, proc, db


def _wait_http(url: str, proc: subprocess.Popen, log: Path) -> None:
    import httpx

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited {proc.returncode}:\n{log.read_text()}")
        try:
            if httpx.get(url + "/", timeout=1).status_code < 500:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"server did not answer:\n{log.read_text()}")


class Profiler:
    """``py-spy record`` of each worker while a block runs; collapsed stacks to files."""

    def __init__(self, directory: Path | None, pids: list[int], name: str, gil: bool = False):
        """``gil``: only samples of a thread holding the GIL (Python's CPU time,
        not its waits: threads that poll, sleep(0) or wait on a socket leave out)."""
        self.directory, self.pids, self.name, self.gil = directory, pids, name, gil
        self.procs: list[subprocess.Popen] = []
        self.outs: list[Path] = []

    def __enter__(self) -> Profiler:
        if self.directory is None:
            return self
        spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
        for pid in self.pids:
            out = self.directory / f"{self.name}-{pid}.txt"
            self.outs.append(out)
            self.procs.append(subprocess.Popen(
                [spy, "record", "--pid", str(pid), "--format", "raw", "--rate", "250",
                 "--threads", "--nonblocking", *(["--gil"] if self.gil else []),
                 "-o", str(out)],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        time.sleep(1.0)  # let py-spy attach before the load starts
        return self

    def __exit__(self, *exc_info) -> None:
        for proc in self.procs:
            proc.send_signal(signal.SIGINT)
        for proc in self.procs:
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()


# Leaf frames of threads with nothing to do: idle pool threads, uvicorn's
# supervisor pings, and the event loop inside uvloop's C code (mostly epoll).
IDLE_LEAVES = {"_worker (futures/thread.py)", "Connection._recv (multiprocessing/connection.py)",
               "Runner.run (asyncio/runners.py)", "select (selectors.py)",
               "wait (threading.py)"}


def summarize_profile(paths: list[Path], top: int = 25) -> str:
    """Inclusive share of the busy samples per function, from py-spy's collapsed stacks.

    py-spy leaves out threads it sees idle, and so does this for the leaves in
    ``IDLE_LEAVES``. It does count as busy a thread blocked in some system
    calls: ``WriterQueue.turn`` (waiting for the SQLite writer turn, or for the
    GIL after its flock) and ``do_execute`` on PostgreSQL (a round trip to the
    database) are mostly waiting, not CPU.
    """
    inclusive: dict[str, int] = defaultdict(int)
    own: dict[str, int] = defaultdict(int)
    total = 0
    lines_in = [line for path in paths if path.exists()
                for line in path.read_text().splitlines()]
    for line in lines_in:
        stack, _, count_text = line.rpartition(" ")
        if not stack:
            continue
        frames = stack.split(";")
        leaf = frames[-1]
        if _frame_name(leaf) in IDLE_LEAVES:
            continue
        count = int(count_text)
        total += count
        seen = set()
        for frame in frames[1:]:  # the first frame is the thread
            name = _frame_name(frame)
            if name not in seen:
                inclusive[name] += count
                seen.add(name)
        own[_frame_name(leaf)] += count
    if not total:
        return "  (no busy samples)"
    lines = [f"  {total} busy samples; inclusive % | self % | function"]
    for name, count in sorted(inclusive.items(), key=lambda kv: -kv[1])[:top]:
        mine = 100 * own.get(name, 0) / total
        lines.append(f"  {100 * count / total:5.1f} | {mine:5.1f} | {name}")
    lines.append("  top self time:")
    for name, count in sorted(own.items(), key=lambda kv: -kv[1])[:12]:
        lines.append(f"  {100 * count / total:5.1f} | {name}")
    return "\n".join(lines)


def _frame_name(frame: str) -> str:
    """``func (/long/path/pkg/mod.py:123)`` -> ``func (pkg/mod.py)``."""
    name, _, where = frame.partition(" (")
    path = where.rstrip(")").rsplit(":", 1)[0]
    return f"{name} ({'/'.join(path.split('/')[-2:])})"


# --- the runs -------------------------------------------------------------------------

@dataclass
class BackendResult:
    backend: str
    runs: dict[str, Run] = field(default_factory=dict)
    profiles: dict[str, list[Path]] = field(default_factory=dict)
    memory_mb: float = 0.0


def rss_mb(pids: list[int]) -> float:
    """The resident memory of ``pids``, together, in MB."""
    total = 0
    for pid in pids:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                total += int(line.split()[1])
    return total / 1024


# What the measured server loads beyond the defaults: a typical cloud's extensions.
EXTENSIONS = ("service_plugins = router,port_forwarding\n"
              "[quotas]\nquota_port = -1\nquota_network = -1\nquota_subnet = -1\n"
              "[ml2]\nextension_drivers = port_security,dns\n")


def report(run: Run) -> None:
    ok = ", ".join(f"{n} x {s}" for s, n in sorted(run.statuses.items()))
    print(f"  {run.label:<34} {run.count:>5} req c={run.concurrency}: {run.rate:8.1f}/s "
          f"p50 {run.p50:7.1f} ms p99 {run.pct(0.99):7.1f} ms | client cpu "
          f"{1000 * run.client_cpu / run.count:5.2f} ms/req, server workers cpu "
          f"{1000 * run.server_cpu / run.count:6.2f} ms/req, rest of machine "
          f"{run.other_cores:4.2f} CPUs [{ok}]", flush=True)
    for error in run.errors:
        print(f"    ! {error}")


def port_body(http: Any) -> bytes:
    """A network with a /16 subnet, made through ``http``: the body of a port create
    on it."""
    net = http.post("/v2.0/networks", json={"network": {"name": "bench"}}).json()["network"]
    subnet = http.post("/v2.0/subnets", json={"subnet": {
        "network_id": net["id"], "cidr": "10.64.0.0/16", "ip_version": 4}})
    assert subnet.status_code == 201, subnet.text
    return f'{{"port": {{"network_id": "{net["id"]}"}}}}'.encode()


def bench_neutrino(backend: str, args: argparse.Namespace, tmp: Path) -> BackendResult:
    import httpx

    from tests.harness import create_database, start_server

    result = BackendResult(backend)
    db_url, drop = create_database(backend, tmp)
    server = start_server(tmp, db_url, auth="noauth", workers=2, extra=EXTENSIONS)
    try:
        # the server's process is the first of its workers
        pids = [server.proc.pid, *wait_for_workers(server.proc.pid, 1)]
        print(f"{backend}: neutrino-server pid {server.proc.pid}, workers {pids}", flush=True)
        http = httpx.Client(base_url=server.url, headers={"X-Project-Id": "bench"}, timeout=60)
        body = port_body(http)

        def creates(count: int, concurrency: int, label: str) -> Run:
            run = load(server.url, "POST", "/v2.0/ports", body, count, concurrency, label,
                       201, pids)
            report(run)
            return run

        def lists(count: int, label: str, query: str = "") -> Run:
            run = load(server.url, "GET", "/v2.0/ports" + query, b"", count, 1, label, 200,
                       pids)
            report(run)
            return run

        def ports_now() -> int:
            return len(http.get("/v2.0/ports", params={"fields": "id"}).json()["ports"])

        creates(50, 8, "warm-up creates")
        result.runs["create_c1"] = creates(args.creates_c1, 1, "port create c=1")
        fill = 1000 - ports_now()
        if fill > 0:
            creates(fill, 8, "fill to 1000 ports")
        assert ports_now() == 1000
        lists(5, "warm-up lists")
        result.runs["list_1000"] = lists(args.lists_1000, "GET /v2.0/ports @1000")
        result.runs["create_c8"] = creates(args.creates_c8, 8, "port create c=8")
        fill = 5000 - ports_now()
        if args.profile is not None:  # profiled apart: py-spy takes CPU from the servers
            with Profiler(args.profile, pids, f"{backend}-create-c8") as prof:
                creates(min(fill, 1000), 8, "port create c=8 (profiled)")
            result.profiles["port create c=8"] = prof.outs
            fill = 5000 - ports_now()
        if fill > 0:
            creates(fill, 8, "fill to 5000 ports")
        assert ports_now() == 5000
        lists(3, "warm-up lists")
        result.runs["list_5000"] = lists(args.lists_5000, "GET /v2.0/ports @5000")
        result.runs["list_5000_fields"] = lists(args.lists_5000, "... ?fields=id,fixed_ips",
                                                "?fields=id&fields=fixed_ips")
        if args.profile is not None:
            with Profiler(args.profile, pids, f"{backend}-list-5000") as prof:
                lists(args.lists_5000, "GET /v2.0/ports @5000 (profiled)")
            result.profiles["GET /v2.0/ports @5000"] = prof.outs
        result.memory_mb = rss_mb(pids)
        http.close()
    except Exception:
        print(server.log.read_text()[-5000:], file=sys.stderr)
        raise
    finally:
        server.stop()
        drop()
    return result


def bench_ceiling(args: argparse.Namespace, tmp: Path) -> dict[str, Run]:
    url, proc, db = start_ceiling(tmp)
    runs = {}
    try:
        pids = wait_for_workers(proc.pid, 2)
        body = b'{"port": {"network_id": "' + str(uuid.uuid4()).encode() + b'"}}'
        report(load(url, "POST", "/", body, 200, 8, "ceiling warm-up", 201, pids))
        runs["c1"] = load(url, "POST", "/", body, args.creates_c1, 1, "ceiling POST c=1", 201,
                          pids)
        report(runs["c1"])
        runs["c8"] = load(url, "POST", "/", body, args.creates_c8, 8, "ceiling POST c=8", 201,
                          pids)
        report(runs["c8"])
        rows = sqlite3.connect(db).execute("SELECT count(*) FROM ports").fetchone()[0]
        assert rows == 200 + args.creates_c1 + args.creates_c8, rows
    finally:
        from tests.harness import terminate

        terminate(proc, 15)
    return runs


def parse_with_wait_quiet(parser: argparse.ArgumentParser) -> argparse.Namespace:
    """The arguments, with ``--wait-quiet`` applied; the repository on the path."""
    parser.add_argument("--wait-quiet", type=float, default=0.0, metavar="SECONDS",
                        help="before each measured phase, wait up to SECONDS until the rest "
                             "of the machine is idle (a shared machine)")
    args = parser.parse_args()
    QUIET.max_wait = args.wait_quiet
    sys.path.insert(0, str(ROOT))
    return args


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backends", default="sqlite,postgresql",
                        help="comma list of sqlite, postgresql, mysql")
    parser.add_argument("--creates-c1", type=int, default=500)
    parser.add_argument("--creates-c8", type=int, default=2000)
    parser.add_argument("--lists-1000", type=int, default=200)
    parser.add_argument("--lists-5000", type=int, default=60)
    parser.add_argument("--profile", type=Path, default=None,
                        help="directory for py-spy profiles of one worker")
    parser.add_argument("--no-ceiling", action="store_true")
    args = parse_with_wait_quiet(parser)
    if args.profile is not None:
        args.profile.mkdir(parents=True, exist_ok=True)
    print(f"machine: {os.cpu_count()} CPUs; python {sys.version.split()[0]}; "
          "load generator: this process (asyncio HTTP/1.1 keep-alive client); "
          f"load average {os.getloadavg()[0]:.2f}", flush=True)
    results = []
    ceiling: dict[str, Run] = {}
    with tempfile.TemporaryDirectory(prefix="neutrino-bench-") as tmp_text:
        tmp = Path(tmp_text)
        if not args.no_ceiling:
            print("ceiling: bare ASGI app, uvicorn 2 workers, SQLite INSERT+COMMIT per POST",
                  flush=True)
            (tmp / "ceiling").mkdir()
            ceiling = bench_ceiling(args, tmp / "ceiling")
        for backend in [b for b in args.backends.split(",") if b]:
            (tmp / backend).mkdir()
            results.append(bench_neutrino(backend, args, tmp / backend))

    print("\n=== summary ===")
    print(f"{'':<12} {'create c=1':>11} {'create c=8':>11} {'of ceiling':>10} "
          f"{'list@1000 p50/p99 ms':>21} {'list@5000 p50/p99 ms':>21} "
          f"{'id,fixed_ips p50':>16} {'cpu/create':>10} {'memory':>8}")
    top = ceiling["c8"].rate if ceiling else None
    for res in results:
        r = res.runs
        share = f"{r['create_c8'].rate / top:9.0%}" if top else "        -"
        print(f"{res.backend:<12} {r['create_c1'].rate:9.0f}/s {r['create_c8'].rate:9.0f}/s "
              f"{share:>10} {r['list_1000'].p50:10.1f}/{r['list_1000'].pct(0.99):<10.1f} "
              f"{r['list_5000'].p50:10.1f}/{r['list_5000'].pct(0.99):<10.1f} "
              f"{r['list_5000_fields'].p50:13.1f} ms "
              f"{1000 * r['create_c8'].server_cpu / r['create_c8'].count:7.2f} ms "
              f"{res.memory_mb:5.0f} MB")
    if ceiling:
        print(f"{'ceiling':<12} {ceiling['c1'].rate:9.0f}/s {ceiling['c8'].rate:9.0f}/s "
              f"{'100%':>10}")
    for res in results:
        for label, paths in res.profiles.items():
            print(f"\n--- profile: {res.backend}, {label} (both workers; "
                  f"{', '.join(map(str, paths))}) ---")
            print(summarize_profile(paths))


if __name__ == "__main__":
    main()
