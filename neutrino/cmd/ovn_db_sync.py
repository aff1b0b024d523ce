"""neutrino-ovn-db-sync: compare neutrino's database with OVN's Northbound
database and, in ``repair`` mode, write again what is missing or stale and
remove what is left over (Neutron's ``neutron-ovn-db-sync-util``).

    neutrino-ovn-db-sync --config-file neutrino.conf [--mode log|repair]

Each difference is printed on a line of its own. Exit status: 0 when the two
agree (``log``) or everything found was repaired (``repair``); 1 when
differences remain; 2 for a configuration mistake or an unreachable database,
with one line saying which.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import NoReturn

from neutrino import cli, config, log
from neutrino.api.router import Router
from neutrino.ovn.ovsdb import OvnUnavailable
from neutrino.plugins.ml2.drivers.ovn.driver import OvnMechanismDriver
from neutrino.plugins.ml2.drivers.ovn.sync import NorthboundSync, full_replica
from neutrino.plugins.ml2.plugin import Ml2Plugin

PROGRAM = "neutrino-ovn-db-sync"
#: how long to wait for the Northbound database
CONNECT_TIMEOUT = 30.0


def make_parser() -> argparse.ArgumentParser:
    parser = cli.parser(PROGRAM, cli.describe(__doc__))
    parser.add_argument("--mode", choices=("log", "repair"),
                        help="log the differences, or repair them too "
                             "(default: [ovn] neutron_sync_mode)")
    return parser


def fail(message: str) -> NoReturn:
    print(f"{PROGRAM}: {message}", file=sys.stderr)
    sys.exit(2)


def main(argv: list[str] | None = None) -> None:
    from neutrino.cmd.server import build_app, load_config

    args = make_parser().parse_args(argv)
    try:
        conf = load_config(args.config_file or config.files_from_env())
        log.setup(conf, PROGRAM, cli.logging_overrides(args))
        app = build_app(conf, serve_rpc=False)
    except config.ConfigError as error:
        fail(str(error))
    router = app.router
    assert isinstance(router, Router)  # the Networking API's
    core = router.controllers["ports"].plugin
    drivers = [d for d in core.mechanisms.drivers
               if isinstance(d, OvnMechanismDriver)] if isinstance(core, Ml2Plugin) else []
    if not drivers:
        fail(f"the ovn mechanism driver is not loaded ({conf.source('ml2', 'mechanism_drivers')})")
    mode = args.mode or conf.ovn.neutron_sync_mode
    try:
        driver = drivers[0]
        try:
            driver.nb.wait_connected(CONNECT_TIMEOUT)
            with full_replica(driver, CONNECT_TIMEOUT) as replica:
                started = time.monotonic()
                sync = NorthboundSync(driver, replica)
                drifts = sync.find()
        except OvnUnavailable as error:
            fail(f"{error} ({conf.source('ovn', 'ovn_nb_connection')})")
        for drift in drifts:
            print(drift)
        checked = len(sync.networks) + len(sync.subnets) + len(sync.ports) + len(sync.groups)
        print(f"checked {len(sync.networks)} networks, {len(sync.subnets)} subnets, "
              f"{len(sync.ports)} ports and {len(sync.groups)} security groups "
              f"({checked} in all) in {time.monotonic() - started:.2f} s: "
              f"{len(drifts)} differences", flush=True)
        if mode == "repair" and drifts:
            repaired = sync.repair(drifts)
            print(f"repaired {repaired} of {len(drifts)}")
            sys.exit(0 if repaired == len(drifts) else 1)
        sys.exit(1 if drifts and mode != "off" else 0)
    finally:
        app.on_shutdown()


if __name__ == "__main__":
    main()
