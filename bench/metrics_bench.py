"""What the API's metrics cost: port creates and the 5,000-port list, metrics on vs off.

    .venv/bin/python bench/metrics_bench.py [--backend sqlite] [--rounds 5]

Two ``neutrino-server`` processes as ``bench/api_bench.py`` starts them
(``api_workers = 2``, noauth, its extensions), one with ``enable_metrics =
true`` (the default: with two workers, prometheus-client's multiprocess
mode, the costlier case) and one with ``enable_metrics = false``, each on its
own database. A machine's speed drifts by some tens of percent from one minute
to the next, so the two are measured in turn, round after round, the order
swapped each round, and what is compared is the ratio within each round:

* port creates at concurrency 8 (each round adds the same number to both);
* then, both filled to 5,000 ports, ``GET /v2.0/ports`` one at a time (p50).

It prints every round and the median of the ratios on/off (creates: rate,
higher is better; lists: p50, lower is better), and of the server workers'
CPU time per request, which other load on the machine disturbs less than
wall-clock figures. The target is an overhead under 3%.

Then, with the noise of HTTP, of a second server and of the machine's other
load taken away: one app in a process of its own (multiprocess mode), its
``ApiApp.handle`` called directly, recording turned on and off between
batches of the same requests (creates, then 5,000-port lists), the CPU time
of the process per request compared.

Last, the cost of recording one request, measured alone (labels read from
the path, the counter and the histogram written to their files), as a share
of the CPU time a create and a list took.

``--same`` starts both servers with metrics on: the ratios it prints are
the machine's noise, the floor below which on vs off says nothing.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from api_bench import EXTENSIONS as API_EXTENSIONS
from api_bench import Run, load, parse_with_wait_quiet, port_body, report, wait_for_workers

CONFIGS = {"on": "enable_metrics = true\n", "off": "enable_metrics = false\n"}


class Bench:
    """One server of a configuration, and what it is measured with."""

    def __init__(self, name: str, tmp: Path, backend: str, setting: str):
        import httpx

        from tests.harness import create_database, start_server

        self.name = name
        self.db_url, self._drop = create_database(backend, tmp)
        self.server = start_server(tmp, self.db_url, auth="noauth", workers=2,
                                   extra=setting + API_EXTENSIONS)
        self.pids = [self.server.proc.pid, *wait_for_workers(self.server.proc.pid, 1)]
        self.http = httpx.Client(base_url=self.server.url, headers={"X-Project-Id": "bench"},
                                 timeout=120)
        self.body = port_body(self.http)

    def creates(self, count: int, label: str) -> Run:
        return load(self.server.url, "POST", "/v2.0/ports", self.body, count, 8,
                    f"{self.name}: {label}", 201, self.pids)

    def lists(self, count: int, label: str) -> Run:
        return load(self.server.url, "GET", "/v2.0/ports", b"", count, 1,
                    f"{self.name}: {label}", 200, self.pids)

    def ports(self) -> int:
        return len(self.http.get("/v2.0/ports", params={"fields": "id"}).json()["ports"])

    def close(self) -> None:
        self.http.close()
        self.server.stop()
        self._drop()


def rounds(benches: dict[str, Bench], count: int,
           measure: Callable[[Bench, int], Run]) -> list[dict[str, Run]]:
    """``count`` rounds, each measuring every configuration, the order swapped each time."""
    done = []
    for n in range(count):
        names = list(benches) if n % 2 == 0 else list(reversed(benches))
        runs = {}
        for name in names:
            runs[name] = measure(benches[name], n)
            report(runs[name])
        done.append(runs)
    return done


def summary(label: str, done: list[dict[str, Run]], figure: Callable[[Run], float],
            unit: str, higher_is_better: bool) -> str:
    ratios = [figure(runs["on"]) / figure(runs["off"]) for runs in done]
    ratio = statistics.median(ratios)
    overhead = (1 / ratio - 1) if higher_is_better else (ratio - 1)
    on = statistics.median(figure(runs["on"]) for runs in done)
    off = statistics.median(figure(runs["off"]) for runs in done)
    return (f"{label:<26} on {on:8.1f} {unit:<4} off {off:8.1f} {unit:<4} ratio on/off "
            f"{ratio:6.3f} (rounds: {', '.join(f'{r:.3f}' for r in ratios)}) "
            f"-> overhead {100 * overhead:+.1f}%")


def record_cost(count: int = 100_000) -> None:
    """Print the microseconds one request's recording takes in this process
    (started by ``measure_record_cost``, in multiprocess mode)."""
    from neutrino.cmd.server import build_app, load_config

    with tempfile.TemporaryDirectory(prefix="neutrino-record-cost-") as tmp:
        conf = Path(tmp) / "n.conf"
        conf.write_text(f"[DEFAULT]\nstate_path = {tmp}\n{API_EXTENSIONS}")
        app = build_app(load_config([str(conf)]), serve_rpc=False)
        assert app.metrics is not None
        record = app.metrics.record
        item = "/v2.0/ports/0f2b1e9c-8d1a-4c55-9a55-0b7c1f0e6a11"
        for method, path, status in (("POST", "/v2.0/ports", 201), ("GET", item, 200)):
            record(method, path, status, time.perf_counter())  # the children made
            started = time.perf_counter()
            for _ in range(count):
                record(method, path, status, started)
            each = (time.perf_counter() - started) / count
            print(f"{method} {path[:18]}: {each * 1e6:.2f}", flush=True)
        app.on_shutdown()


def in_process(batches: int = 10, creates: int = 200, lists: int = 4) -> None:
    """Print the CPU ms per request of creates and of 5,000-port lists through
    ``ApiApp.handle``, recording on and off in alternating batches."""
    import orjson

    from neutrino.api.app import GC_THRESHOLD
    from neutrino.cmd.server import build_app, load_config, set_up_database

    with tempfile.TemporaryDirectory(prefix="neutrino-in-process-") as tmp:
        conf_path = Path(tmp) / "n.conf"
        conf_path.write_text(f"[DEFAULT]\nstate_path = {tmp}\n{API_EXTENSIONS}")
        conf = load_config([str(conf_path)])
        set_up_database(conf)
        app = build_app(conf, serve_rpc=False)
        recording = app.metrics
        # the collector as the server sets it at start (ApiApp._lifespan)
        gc.collect()
        gc.freeze()
        gc.set_threshold(GC_THRESHOLD, *gc.get_threshold()[1:])

        def call(method: str, path: str, body: bytes = b"") -> bytes:
            scope = {"method": method, "path": path, "query_string": b"",
                     "headers": [(b"x-project-id", b"bench")], "scheme": "http",
                     "server": ("127.0.0.1", 9696)}
            status, _, payload = app.handle(scope, body)
            assert status < 300, payload
            return payload

        net = orjson.loads(call("POST", "/v2.0/networks", b'{"network": {}}'))["network"]
        call("POST", "/v2.0/subnets", orjson.dumps({"subnet": {
            "network_id": net["id"], "cidr": "10.64.0.0/16", "ip_version": 4}}))
        body = orjson.dumps({"port": {"network_id": net["id"]}})

        def alternate(count: int, work: Callable[[], Any]) -> dict[str, list[float]]:
            cpu: dict[str, list[float]] = {"on": [], "off": []}
            for n in range(batches):
                for name in (("on", "off") if n % 2 == 0 else ("off", "on")):
                    app.metrics = recording if name == "on" else None
                    started = time.process_time()
                    for _ in range(count):
                        work()
                    cpu[name].append(1000 * (time.process_time() - started) / count)
            return cpu

        def show(what: str, cpu: dict[str, list[float]]) -> None:
            ratios = [on / off for on, off in zip(cpu["on"], cpu["off"], strict=True)]
            print(f"{what}: {statistics.median(cpu['on']):.3f} "
                  f"{statistics.median(cpu['off']):.3f} {statistics.median(ratios):.4f}",
                  flush=True)

        show("create", alternate(creates, lambda: call("POST", "/v2.0/ports", body)))
        for _ in range(5000 - creates * batches * 2):
            call("POST", "/v2.0/ports", body)
        assert len(orjson.loads(call("GET", "/v2.0/ports"))["ports"]) == 5000
        show("list@5000", alternate(lists, lambda: call("GET", "/v2.0/ports")))
        app.on_shutdown()


def in_a_child(mode: str) -> list[str]:
    """The lines this script prints in ``mode`` in a process of its own whose
    metrics are in multiprocess mode, as with ``api_workers`` > 1."""
    with tempfile.TemporaryDirectory(prefix="neutrino-multiproc-") as directory:
        done = subprocess.run([sys.executable, __file__, mode], check=True,
                              capture_output=True, text=True,
                              env={**os.environ, "PROMETHEUS_MULTIPROC_DIR": directory})
    return done.stdout.splitlines()


def measure_in_process() -> dict[str, tuple[float, float, float]]:
    """CPU ms per request on, off, and the median ratio of the batches, by kind."""
    found = {}
    for line in in_a_child("--in-process"):
        what, _, figures = line.partition(": ")
        on, off, ratio = (float(word) for word in figures.split())
        found[what] = (on, off, ratio)
    return found


def measure_record_cost() -> list[float]:
    """Microseconds per recorded request (a create, an item read)."""
    return [float(line.rsplit(":", 1)[1]) for line in in_a_child("--record-cost")]


def main() -> None:
    if sys.argv[1:] in (["--record-cost"], ["--in-process"]):
        sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
        (record_cost if sys.argv[1] == "--record-cost" else in_process)()
        return
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--backend", default="sqlite", help="sqlite, postgresql or mysql")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--creates", type=int, default=400, help="port creates per round")
    parser.add_argument("--lists", type=int, default=15, help="5,000-port lists per round")
    parser.add_argument("--same", action="store_true",
                        help="both servers with metrics on: what the ratios are without "
                             "any difference (the machine's noise)")
    args = parse_with_wait_quiet(parser)
    with tempfile.TemporaryDirectory(prefix="neutrino-metrics-bench-") as tmp_text:
        tmp = Path(tmp_text)
        benches: dict[str, Any] = {}
        try:
            for name, setting in CONFIGS.items():
                (tmp / name).mkdir()
                if args.same:
                    setting = CONFIGS["on"]
                benches[name] = Bench(name, tmp / name, args.backend, setting)
                benches[name].creates(50, "warm-up creates")
            print(f"{args.backend}: metrics on (pids {benches['on'].pids}) vs off "
                  f"(pids {benches['off'].pids}), {args.rounds} rounds", flush=True)
            creates = rounds(benches, args.rounds,
                             lambda bench, n: bench.creates(args.creates, f"create c=8 #{n}"))
            for bench in benches.values():
                fill = 5000 - bench.ports()
                if fill > 0:
                    report(bench.creates(fill, "fill to 5000 ports"))
                assert bench.ports() == 5000
                report(bench.lists(3, "warm-up lists"))
            lists = rounds(benches, args.rounds,
                           lambda bench, n: bench.lists(args.lists, f"GET ports @5000 #{n}"))
        finally:
            for bench in benches.values():
                bench.close()
    print("\n=== metrics on vs off (median of the rounds' ratios) ===")
    print(summary("port create c=8 rate", creates, lambda run: run.rate, "/s", True))
    print(summary("GET /v2.0/ports @5000 p50", lists, lambda run: run.p50, "ms", False))
    print(summary("create: workers' cpu/req", creates, cpu_ms, "ms", False))
    print(summary("list: workers' cpu/req", lists, cpu_ms, "ms", False))
    for what, (on, off, ratio) in measure_in_process().items():
        print(f"in process, {what:<10} cpu/req  on {on:8.3f} ms  off {off:8.3f} ms  "
              f"ratio on/off {ratio:6.4f} -> overhead {100 * (ratio - 1):+.2f}%")
    create_us, read_us = measure_record_cost()
    create_cpu = statistics.median(cpu_ms(runs["off"]) for runs in creates)
    list_cpu = statistics.median(cpu_ms(runs["off"]) for runs in lists)
    print(f"recording one request alone (multiprocess mode): a create {create_us:.2f} us "
          f"= {create_us / 10 / create_cpu:.2f}% of a create's {create_cpu:.2f} ms CPU; "
          f"a read {read_us:.2f} us = {read_us / 10 / list_cpu:.4f}% of a 5,000-port "
          f"list's {list_cpu:.1f} ms")


def cpu_ms(run: Run) -> float:
    return 1000 * run.server_cpu / run.count


if __name__ == "__main__":
    main()
