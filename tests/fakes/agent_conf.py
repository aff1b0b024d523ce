"""An agent's configuration from INI text, as its command would load it."""

from __future__ import annotations

from pathlib import Path

from neutrino import config
from neutrino.agents.base import AGENT_OPTIONS, Agent


def agent_conf(tmp_path: Path, agent: type[Agent], text: str) -> config.Config:
    path = tmp_path / "agent.conf"
    path.write_text(f"[DEFAULT]\nhost = h1\nstate_path = {tmp_path / 'state'}\n{text}")
    conf = config.load([str(path)])
    conf.register((AGENT_OPTIONS, *agent.option_groups))
    return conf
