"""An agent command serves its metrics at ``[agent] metrics_bind_address``.

The metadata agent is the cheapest to run as a process: no root, no host
tools; on a bus of its own (``memory://``, no server) its state reports time
out, which its metrics say.
"""

from __future__ import annotations

import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from tests.harness import free_port, terminate

AGENT = str(Path(sys.executable).parent / "neutrino-metadata-agent")


def write_conf(tmp: Path, address: str) -> Path:
    conf = tmp / "agent.conf"
    conf.write_text(f"[DEFAULT]\nhost = metrics-1\nstate_path = {tmp / 'state'}\n"
                    f"transport_url = memory://\n[agent]\nreport_interval = 1\n"
                    f"metrics_bind_address = {address}\n")
    return conf


def scrape(address: str) -> dict[tuple[str, frozenset], float] | None:
    try:
        with urllib.request.urlopen(f"http://{address}/metrics", timeout=2) as answer:
            text = answer.read().decode()
    except (urllib.error.URLError, ConnectionError):
        return None
    return {(sample.name, frozenset(sample.labels.items())): sample.value
            for family in text_string_to_metric_families(text) for sample in family.samples}


def test_an_agent_process_serves_its_syncs_and_its_calls(tmp_path: Path):
    address = f"127.0.0.1:{free_port()}"
    log = tmp_path / "agent.log"
    proc = subprocess.Popen([AGENT, "--config-file", str(write_conf(tmp_path, address))],
                            stdout=log.open("wb"), stderr=subprocess.STDOUT)
    sync = ("neutrino_agent_sync_duration_seconds_count",
            frozenset({"agent_type": "Metadata agent", "sync": "full"}.items()))
    timeout = ("neutrino_rpc_messages_total", frozenset({
        "kind": "call", "topic": "q-reports-plugin", "method": "report_state",
        "outcome": "timeout"}.items()))
    try:
        deadline = time.monotonic() + 20
        found = None
        while time.monotonic() < deadline:
            assert proc.poll() is None, log.read_text()
            found = scrape(address)
            if found and found.get(sync) and found.get(timeout):
                break
            time.sleep(0.2)
        assert found is not None, log.read_text()
        assert found[sync] == 1  # the first, full sync
        assert found[timeout] >= 1  # no server answers its reports
    finally:
        terminate(proc)


def test_a_malformed_address_stops_the_agent_with_one_line(tmp_path: Path):
    done = subprocess.run([AGENT, "--config-file", str(write_conf(tmp_path, "9601"))],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1, done.stderr
    assert "metrics_bind_address" in done.stderr and "[agent]" in done.stderr
