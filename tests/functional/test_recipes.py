"""The docs' shell recipes run as a new user would paste them (tests/recipes.py
says what a recipe is).

The recipes of one Markdown file run, in order, in one bash as root, from the
project root, with the checkout's venv on PATH, inside a sandbox of their own
that the kernel takes down whatever happens:

- a new network namespace (lo up): 127.0.0.1:9696 and every device and
  namespace a recipe makes are its own, nothing collides with the host or
  with other tests;
- a new PID namespace: every process a recipe starts (a server in the
  background, dnsmasq, ...) dies with the session;
- a new mount namespace with a fresh sysfs (this namespace's devices),
  throwaway overlays on /var, /run and the checkout: what a recipe writes
  there (./state, a config file, /var/lib/neutrino, a pid file in /run) lands
  in the test's temp directory, so every run starts from a fresh state and
  leaves the checkout as it was; and an empty tmpfs on /run/netns (so ``ip
  netns add internet`` names a namespace nobody else sees, gone with the
  session). /etc is the host's: a recipe does not write there;
- HOME is a temp directory, the environment otherwise empty but for PATH.

The text that runs is the text the reader sees; the session around it only
adds the trap that names the failing line.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.dataplane import skip_unless_root
from tests.recipes import ROOT, Block, recipe_files, recipes, session

pytestmark = pytest.mark.slow

#: what every session needs, and the host tools of the all-in-one and of
#: neutrino-instance, which the recipes use
TOOLS = ("unshare", "mount", "bash", "ip", "dnsmasq", "iptables", "ipset", "conntrack",
         "arping", "udhcpc", "ping")
#: tools a recipe needs only if it names them
NAMED_TOOLS = ("ovs-vsctl", "ovs-ofctl", "ovs-vswitchd", "ovsdb-server", "ovsdb-tool",
               "ethtool", "socat", "curl", "nc", "radvd", "dhclient", "tcpdump", "nft")
#: the longest one file's recipes may take
BUDGET = 240
VENV = ROOT / ".venv"

#: the directories a recipe may write to, each under a throwaway overlay (in
#: this order: the checkout may be inside one of the others)
LAYERS = {"var": Path("/var"), "run": Path("/run"), "checkout": ROOT}
SETUP = """set -eu
mount -t sysfs sysfs /sys
ip link set lo up
{overlays}
mkdir -p /run/netns
mount -t tmpfs -o mode=0755 tmpfs /run/netns
"""
#: what the sandbox runs: the setup (in a shell of its own: its mounts are
#: the namespace's), then the session; SANDBOX_FAILED if the host cannot
BOOT = """bash {setup} || exit {failed}
cd {root}
exec bash {session}
"""
SANDBOX_FAILED = 97
OVERLAY = ("mount -t overlay overlay "
           "-o lowerdir={lower},upperdir={layer}/upper,workdir={layer}/work {lower}")


@pytest.mark.timeout(BUDGET + 60)
@pytest.mark.parametrize("path", [path for path in recipe_files() if recipes(path)],
                         ids=lambda path: path.name)
def test_recipes_of(path: Path, tmp_path: Path) -> None:
    blocks = recipes(path)
    named = {word for block in blocks for word in block.text.replace("|", " ").split()}
    skip_unless_root(*TOOLS, *(tool for tool in NAMED_TOOLS if tool in named))
    probe = subprocess.run(["unshare", "--net", "--mount", "--pid", "--fork", "true"],
                           capture_output=True, text=True, timeout=30)
    if probe.returncode != 0:
        pytest.skip(f"this host cannot make the recipes' sandbox: {probe.stderr.strip()}")
    if not (VENV / "bin" / "python").exists():
        pytest.skip("the recipes use the checkout's .venv, which the README's first "
                    "command makes")
    for layer in LAYERS:
        (tmp_path / layer / "upper").mkdir(parents=True)
        (tmp_path / layer / "work").mkdir()
    home = tmp_path / "home"
    home.mkdir()
    runner = session(blocks, tmp_path / "scripts")
    setup, boot = tmp_path / "scripts" / "setup.sh", tmp_path / "scripts" / "boot.sh"
    setup.write_text(SETUP.format(overlays="\n".join(
        OVERLAY.format(lower=lower, layer=tmp_path / name) for name, lower in LAYERS.items())))
    boot.write_text(BOOT.format(setup=setup, failed=SANDBOX_FAILED, root=ROOT, session=runner))
    output = tmp_path / "output.log"
    env = {"PATH": f"{VENV / 'bin'}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
           "HOME": str(home), "LANG": "C.UTF-8", "TERM": "dumb"}
    started = time.monotonic()
    with output.open("wb") as out:
        proc = subprocess.Popen(
            ["unshare", "--net", "--mount", "--propagation", "private", "--pid", "--fork",
             "--kill-child", "--mount-proc", "bash", str(boot)],
            stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=env,
            start_new_session=True)
        try:
            status = proc.wait(timeout=BUDGET)
        except subprocess.TimeoutExpired:
            status = None
        finally:
            if proc.poll() is None:  # --kill-child: the whole sandbox goes with it
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    took = time.monotonic() - started
    try:
        if status == SANDBOX_FAILED:
            pytest.skip("this host cannot make the recipes' sandbox (namespaces, overlayfs): "
                        + output.read_text(errors="replace").strip().replace("\n", "; "))
        if status != 0:
            pytest.fail(report(blocks, output, tmp_path, status, took), pytrace=False)
    finally:
        for layer in LAYERS:
            shutil.rmtree(tmp_path / layer, ignore_errors=True)


def report(blocks: list[Block], output: Path, tmp: Path, status: int | None,
           took: float) -> str:
    """What failed: the block, the session's output, and the logs the recipes
    wrote (in the throwaway layers)."""
    text = output.read_text(errors="replace")
    failed = [line for line in text.splitlines() if line.startswith("recipe failed: ")]
    where = failed[-1].removeprefix("recipe failed: ").split(":")[:2] if failed else None
    block = next((b for b in blocks if where and b.path.name == where[0]
                  and b.line <= int(where[1]) < b.line + len(b.text.splitlines())),
                 None)
    started = [line.removeprefix("--- recipe ").split()[0] for line in text.splitlines()
               if line.startswith("--- recipe ")]
    block = block or next((b for b in blocks if started and b.name == started[-1]), None)
    why = (f"timed out after {took:.0f} s" if status is None
           else f"exit status {status} after {took:.0f} s")
    parts = [f"{blocks[0].path.name}'s recipes failed ({why})"
             + (f" at {failed[-1].removeprefix('recipe failed: ')}" if failed else "")]
    if block is not None:
        parts += [f"in the recipe at {block.name}:", block.numbered()]
    parts += ["output (last 150 lines):", *text.splitlines()[-150:]]
    for log in sorted(tmp.glob("*/upper/**/*.log")):
        lines = log.read_text(errors="replace").splitlines()
        parts += [f"{log.relative_to(tmp)} (last 40 lines):", *lines[-40:]]
    return "\n".join(parts)
