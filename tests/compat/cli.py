"""Running the ``openstack`` CLI as one interactive session over a scenario.

The CLI takes about two seconds to start, so a scenario's commands go to
one ``openstack`` process's stdin, each followed by ``!echo <marker>`` so the
output can be cut per command. Interactive mode takes its settings from the
environment only, so the session uses ``OS_CLOUD`` with the documented
clouds.yaml.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.compat.conftest import CLOUD

OPENSTACK = str(Path(sys.executable).parent / "openstack")
MARK = "@@neutrino-compat-end-of-command@@"


def cli_env(home: Path, **extra: str) -> dict[str, str]:
    """A clean environment: no OS_* from the caller, HOME without clouds.yaml."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OS_")}
    env.update(HOME=str(home), PYTHONUNBUFFERED="1", **extra)
    return env


class Session:
    def __init__(self, outputs: dict[str, str]):
        self.outputs = outputs

    def text(self, key: str) -> str:
        return self.outputs[key]

    def quiet(self, key: str) -> None:
        """A set/unset/delete command succeeded: it printed nothing."""
        assert self.outputs[key].strip() == "", f"{key}: {self.outputs[key]}"

    def json(self, key: str):
        out = self.outputs[key]
        try:
            return json.loads(out)
        except ValueError:
            pytest.fail(f"{key}: not JSON, the command failed:\n{out}")

    def names(self, key: str) -> list[str]:
        return sorted(row["Name"] for row in self.json(key))


def run_scenario(scenario: list[tuple[str, str]], clouds_yaml: Path, home: Path) -> Session:
    """Run (key, command) pairs in one session; their outputs by key."""
    script = "".join(f"{command}\n!echo {MARK}\n" for _, command in scenario)
    session = subprocess.Popen(
        [OPENSTACK], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True, cwd=home,
        env=cli_env(home, OS_CLIENT_CONFIG_FILE=str(clouds_yaml), OS_CLOUD=CLOUD))
    out, _ = session.communicate(script, timeout=180)
    chunks = out.split(MARK + "\n")
    assert len(chunks) == len(scenario) + 1, out
    return Session({key: chunk for (key, _), chunk in zip(scenario, chunks, strict=False)})
