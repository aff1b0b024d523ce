"""The process monitor hears of a daemon's end at once, and not of one that
the agent stopped itself (forgotten first)."""

from __future__ import annotations

import asyncio
import subprocess

from neutrino.agents.process_monitor import ProcessMonitor


def test_an_ending_daemon_is_told_at_once_a_forgotten_one_not():
    async def scenario() -> list[tuple[str, str]]:
        ended: list[tuple[str, str]] = []
        heard = asyncio.Event()

        def on_exit(key: str, name: str) -> None:
            ended.append((key, name))
            heard.set()

        monitor = ProcessMonitor(on_exit)
        watched = [subprocess.Popen(["sleep", "30"]) for _ in range(3)]
        try:
            monitor.watch("r1", {"radvd": watched[0].pid, "metadata proxy": watched[1].pid})
            monitor.watch("r2", {"radvd": watched[2].pid})
            monitor.forget("r2")
            watched[2].kill()  # stopped by the agent itself: not a death
            await asyncio.sleep(0.2)
            assert ended == [] and monitor.watching("r1") == {"radvd", "metadata proxy"}
            watched[0].kill()
            await asyncio.wait_for(heard.wait(), 5)
            assert monitor.watching("r1") == {"metadata proxy"}
            # one that should run and does not (None), or already ended, is told too
            heard.clear()
            monitor.watch("r3", {"dnsmasq": None})
            await asyncio.wait_for(heard.wait(), 5)
        finally:
            monitor.close()
            for proc in watched:
                proc.kill()
                proc.wait()
        return ended

    assert asyncio.run(scenario()) == [("r1", "radvd"), ("r3", "dnsmasq")]
