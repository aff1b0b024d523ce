"""Scale-out benchmark: port creates through HAProxy to one server, then to two.

    .venv/bin/python bench/scale_out_bench.py [--creates 1000] [--warm-up 300]
        [--wait-quiet SECONDS]

Each configuration gets a fresh PostgreSQL database and RabbitMQ vhost, and
servers as docs/deployment.md runs them behind HAProxy (``tests.haproxy``:
roundrobin, health checks), each with ``api_workers = 1`` (noauth,
``[quotas] quota_port = -1``). It measures port creates on one network with a
/16 subnet at concurrency 8 through HAProxy, and with one server also straight
to it (what HAProxy costs). The load generator and the figures are
``api_bench``'s; the "server" CPU includes HAProxy's.

The figures drift: a fresh server's first creates cost it more CPU than
later ones, and a shared machine's speed varies from one minute to the next.
A first version of this script, with a warm-up of 50, measured HAProxy at
half the direct rate because it went first; measured in turns, the two were
the same. So each server gets ``--warm-up`` creates before anything is
measured, and one figure is worth little: compare runs made in turn.

Two servers share the database, which does the same work for both: they add
API CPU, not database capacity. Here the servers, PostgreSQL, RabbitMQ,
HAProxy and the load generator all share this machine's cores, so two
servers cannot be much faster than one; the figures say what a second server
adds on this machine, not on hosts of their own.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from api_bench import Run, load, parse_with_wait_quiet, port_body, report

CONCURRENCY = 8


@contextmanager
def behind_haproxy(tmp: Path, count: int) -> Iterator[tuple[str, list[str], list[int]]]:
    """``count`` servers on a fresh database and vhost behind HAProxy: its URL,
    the servers' URLs, and the pids whose CPU counts as the servers'."""
    from tests.haproxy import HaProxy
    from tests.harness import create_database, rabbit_vhost, start_server

    with ExitStack() as stack:
        db_url, drop = create_database("postgresql", tmp)
        stack.callback(drop)
        transport_url = stack.enter_context(rabbit_vhost())
        servers = []
        for n in range(count):  # one after the other: each upgrades the schema at start
            home = tmp / f"server-{n}"
            home.mkdir()
            server = start_server(home, db_url, extra=(
                f"host = bench-server-{n}\ntransport_url = {transport_url}\n"
                "[quotas]\nquota_port = -1\nquota_network = -1\nquota_subnet = -1\n"))
            stack.callback(server.stop)
            servers.append(server)
        lb = HaProxy({f"s{n}": int(s.url.rsplit(":", 1)[1]) for n, s in enumerate(servers)})
        stack.callback(lb.stop)
        lb.start()
        for name in lb.status():
            lb.wait_for(name, "UP")
        assert lb.proc is not None
        yield lb.url, [s.url for s in servers], [s.proc.pid for s in servers] + [lb.proc.pid]


def bench(tmp: Path, count: int, creates: int, warm_up: int) -> dict[str, Run]:
    import httpx

    runs = {}
    with behind_haproxy(tmp, count) as (lb_url, urls, pids):
        http = httpx.Client(base_url=lb_url, headers={"X-Project-Id": "bench"}, timeout=60)
        body = port_body(http)

        def creates_to(url: str, n: int, label: str) -> Run:
            run = load(url, "POST", "/v2.0/ports", body, n, CONCURRENCY, label, 201, pids)
            report(run)
            return run

        plural = "s" if count > 1 else ""
        creates_to(lb_url, warm_up * count, f"warm-up, {count} server{plural}")
        if count == 1:
            runs["direct"] = creates_to(urls[0], creates, "straight to the server")
        runs["haproxy"] = creates_to(lb_url, creates, f"HAProxy + {count} server{plural}")
        made = len(http.get("/v2.0/ports", params={"fields": "id"}).json()["ports"])
        assert made == warm_up * count + sum(run.count for run in runs.values()), made
        http.close()
    return runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--creates", type=int, default=1000,
                        help="port creates measured per configuration")
    parser.add_argument("--warm-up", type=int, default=300,
                        help="port creates per server before the measured ones")
    args = parse_with_wait_quiet(parser)
    print(f"machine: {os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.2f}; "
          f"port creates at c={CONCURRENCY}, PostgreSQL, api_workers = 1 per server",
          flush=True)
    with tempfile.TemporaryDirectory(prefix="neutrino-bench-") as tmp_text:
        tmp = Path(tmp_text)
        (tmp / "one").mkdir()
        one = bench(tmp / "one", 1, args.creates, args.warm_up)
        (tmp / "two").mkdir()
        two = bench(tmp / "two", 2, args.creates, args.warm_up)
    print("\n=== summary: port create c=8 ===")
    for label, run in (("one server, direct", one["direct"]),
                       ("HAProxy + one server", one["haproxy"]),
                       ("HAProxy + two servers", two["haproxy"])):
        print(f"  {label:<24} {run.rate:7.1f}/s  p50 {run.p50:6.1f} ms  p99 "
              f"{run.pct(0.99):6.1f} ms")
    print(f"  two servers / one: {two['haproxy'].rate / one['haproxy'].rate:.2f}x "
          f"(on {os.cpu_count()} CPUs shared by everything)")


if __name__ == "__main__":
    main()
