"""How a DHCP or L3 agent logs the items of a sync that failed.

A device that another agent removed meanwhile (the L3 agent taking a router's
``qr-`` pair away as the Linux bridge agent unplugs its tap, on ``router remove
subnet``) is expected: a warning, the sync done again, no traceback. What the
host or the bus refused is an error in their own words; anything else is a
bug and keeps its traceback.
"""

from __future__ import annotations

import asyncio
import logging
import uuid

from neutrino.agents.base import NotConverged, converge_each
from neutrino.linux.ip import NoSuchDevice
from neutrino.linux.radvd import RadvdError
from neutrino.rpc.bus import Bus
from neutrino.rpc.errors import MessagingTimeout
from neutrino.rpc.server import RpcServer
from neutrino.rpc.topics import REPORTS
from neutrino.rpc.transport import get_transport
from tests.unit.test_agent_framework import FailingAgent, Reports, make_conf, until


def converge(errors: dict[str, Exception]) -> NotConverged | None:
    async def work(item: str) -> None:
        if item in errors:
            raise errors[item]

    async def scenario() -> NotConverged | None:
        try:
            await converge_each(sorted({"ok", *errors}), asyncio.Semaphore(2), work, "router")
        except NotConverged as failed:
            return failed
        return None

    return asyncio.run(scenario())


def logged(caplog) -> list[tuple[int, str, bool]]:
    return [(r.levelno, r.getMessage(), r.exc_info is not None) for r in caplog.records]


def test_a_device_gone_meanwhile_is_a_warning_without_traceback(caplog):
    with caplog.at_level(logging.INFO, logger="neutrino.agents.base"):
        failed = converge({"r1": NoSuchDevice("no link qr-1 in namespace qrouter-r1 "
                                              "(gone meanwhile)")})
    assert failed is not None and failed.level == logging.WARNING
    assert logged(caplog) == [(logging.WARNING, "router r1: no link qr-1 in namespace "
                               "qrouter-r1 (gone meanwhile); it is done again", False)]


def test_host_and_bus_refusals_are_errors_in_one_line_a_bug_has_its_traceback(caplog):
    with caplog.at_level(logging.INFO, logger="neutrino.agents.base"):
        failed = converge({"r1": NoSuchDevice("no link qr-1"),
                           "r2": RadvdError("radvd did not start"),
                           "r3": MessagingTimeout("no reply"),
                           "r4": KeyError("bug")})
    assert failed is not None and failed.level == logging.ERROR
    assert str(failed) == "4 router(s) not converged"
    assert logged(caplog) == [
        (logging.WARNING, "router r1: no link qr-1; it is done again", False),
        (logging.ERROR, "router r2 not converged: radvd did not start", False),
        (logging.ERROR, "router r3 not converged: no reply", False),
        (logging.ERROR, "router r4 not converged: 'bug'", True)]


def test_nothing_failed_nothing_logged(caplog):
    with caplog.at_level(logging.INFO, logger="neutrino.agents.base"):
        assert converge({}) is None
    assert caplog.records == []


def test_the_sync_says_it_failed_at_the_level_of_its_items(tmp_path, caplog):
    """A sync failed by gone devices only is a warning; the full resync follows."""
    async def scenario():
        url = f"memory://{uuid.uuid4().hex}"
        server_bus = Bus(get_transport(url), timeout=2)
        await server_bus.start()
        await RpcServer(server_bus, REPORTS, "server", [Reports()]).start()
        agent = FailingAgent(make_conf(tmp_path), Bus(get_transport(url), timeout=2), [
            NotConverged("1 router(s) not converged", logging.WARNING),
            NotConverged("2 router(s) not converged", logging.ERROR)])
        stop = asyncio.Event()
        running = asyncio.create_task(agent.run(stop))
        await until(lambda: not agent.errors and agent.resources_synced, seconds=30)
        stop.set()
        await asyncio.wait_for(running, 5)
        await server_bus.close()

    with caplog.at_level(logging.INFO, logger="neutrino.agents.base"):
        asyncio.run(scenario())
    assert [(r.levelno, r.getMessage(), r.exc_info is not None) for r in caplog.records
            if r.getMessage().startswith("sync failed")] == [
        (logging.WARNING, "sync failed: 1 router(s) not converged; a full resync follows",
         False),
        (logging.ERROR, "sync failed: 2 router(s) not converged; a full resync follows",
         False)]
