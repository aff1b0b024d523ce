"""``--background`` and ``--stop`` for a command that serves in the foreground.

A recipe or a lab wants the all-in-one started and then used at once:
``--background`` forks, the child (in a session of its own, its output going
to a log file) runs the command, and the parent returns only when the child
serves, or fails with the child's last line if it died first. The child keeps
a pid file, so that ``--stop`` finds it, ends it (SIGTERM, the same graceful
stop as Ctrl-C) and returns once it is gone: the address is free again for
the next start.
"""

from __future__ import annotations

import atexit
import json
import os
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path

from neutrino import config
from neutrino.linux.process import cmdline, terminate

#: how long ``--background`` waits for the child to serve
READY_TIMEOUT = 90.0
#: how long ``--stop`` waits for a graceful stop before SIGKILL
STOP_TIMEOUT = 30.0


class BackgroundError(Exception):
    """The command could not be started or stopped; the message is one line."""


def running(pid_file: Path, program: str) -> int | None:
    """The pid in ``pid_file`` if that process is alive and is ``program`` (a
    reused pid is not)."""
    try:
        pid = int(pid_file.read_text(encoding="ascii").strip())
    except (OSError, ValueError):
        return None
    argv = cmdline(pid)
    return pid if argv and any(Path(arg).name == program for arg in argv[:2]) else None


def start(program: str, pid_file: Path, log_file: Path, ready: Callable[[], bool],
          timeout: float = READY_TIMEOUT) -> None:
    """Return in a detached child; in the parent, exit once ``ready()`` holds
    (0), or the child died or never became ready (one line, non-zero)."""
    pid = running(pid_file, program)
    if pid is not None:
        raise BackgroundError(f"already running as pid {pid} ({pid_file}); --stop it first")
    pid_file.parent.mkdir(parents=True, exist_ok=True)
    log = log_file.open("ab")
    sys.stdout.flush()
    sys.stderr.flush()
    child = os.fork()
    if child == 0:
        _detach(log.fileno(), pid_file)
        log.close()
        return
    log.close()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done, status = os.waitpid(child, os.WNOHANG)
        if done:
            raise BackgroundError(f"exited ({_exit_reason(status)}): "
                                  f"{_last_line(log_file)} (log: {log_file})")
        if ready():
            print(f"{program}: running as pid {child}, log {log_file}")
            sys.exit(0)
        time.sleep(0.25)
    raise BackgroundError(f"not serving after {timeout:.0f} s; still running as pid {child} "
                          f"(log: {log_file})")


def _detach(log_fd: int, pid_file: Path) -> None:
    """The child: no terminal (Ctrl-C or a closed terminal do not reach it),
    output to the log, a pid file removed when it exits."""
    os.setsid()
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(log_fd, 1)
    os.dup2(log_fd, 2)
    pid = os.getpid()
    pid_file.write_text(f"{pid}\n", encoding="ascii")

    def remove_pid_file() -> None:
        try:
            if pid_file.read_text(encoding="ascii").strip() == str(pid):
                pid_file.unlink()
        except OSError:
            pass

    atexit.register(remove_pid_file)


def _exit_reason(status: int) -> str:
    if os.WIFSIGNALED(status):
        return f"signal {os.WTERMSIG(status)}"
    return f"status {os.waitstatus_to_exitcode(status)}"


def _last_line(log_file: Path) -> str:
    try:
        lines = log_file.read_text(errors="replace").strip().splitlines()
    except OSError:
        return "no log"
    return lines[-1] if lines else "nothing logged"


def stop(program: str, pid_file: Path, timeout: float = STOP_TIMEOUT) -> str:
    """End the process of ``pid_file`` and wait until it is gone; what was done."""
    pid = running(pid_file, program)
    if pid is None:
        return "not running"
    terminate(pid, timeout)
    while cmdline(pid) is not None:  # SIGKILLed: gone in a moment
        time.sleep(0.05)
    pid_file.unlink(missing_ok=True)
    return f"stopped pid {pid}"


def api_ready(url: str, agents: int, host: str | None) -> Callable[[], bool]:
    """Whether the API at ``url`` answers and, if ``host`` is given (an API that
    needs no token), ``agents`` agents of that host are alive in it."""
    def check() -> bool:
        try:
            with urllib.request.urlopen(url + "/", timeout=2):
                pass
        except urllib.error.HTTPError:
            pass  # an answer all the same
        except OSError:
            return False
        if host is None:
            return True
        query = urllib.parse.urlencode({"host": host})
        try:
            with urllib.request.urlopen(f"{url}/v2.0/agents?{query}", timeout=2) as answer:
                listed = json.loads(answer.read())["agents"]
        except (OSError, ValueError, KeyError):
            return False
        return sum(1 for agent in listed if agent.get("alive")) >= agents

    return check


def local_url(bind_host: str, bind_port: int) -> str:
    """Where a client on this machine reaches a server bound to ``bind_host``."""
    host = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(bind_host, bind_host)
    return f"http://[{host}]:{bind_port}" if ":" in host else f"http://{host}:{bind_port}"


def state_files(conf: config.Config, program: str) -> tuple[Path, Path]:
    """The pid file and the log of ``program`` run in the background: in its
    state directory, named after it without the ``neutrino-`` prefix."""
    state = Path(conf.DEFAULT.state_path)
    name = program.removeprefix("neutrino-")
    return state / f"{name}.pid", state / f"{name}.log"


def serve_in_background(program: str, conf: config.Config, agents: int) -> None:
    """``--background``: return in the detached child; the parent exits once
    the API answers (and, with ``auth_strategy = noauth``, once ``agents`` of
    this host are alive), or with one line on stderr."""
    opts = conf.DEFAULT
    pid_file, log_file = state_files(conf, program)
    host = config.host_name(conf) if opts.auth_strategy == "noauth" else None
    try:
        start(program, pid_file, log_file,
              api_ready(local_url(opts.bind_host, opts.bind_port), agents, host))
    except BackgroundError as error:
        print(f"{program}: {error}", file=sys.stderr)
        sys.exit(1)


def stop_from_files(program: str, files: list[str]) -> None:
    """``--stop``: the pid file is found through the same configuration files."""
    try:
        conf = config.load(files)
    except config.ConfigError as error:
        print(f"{program}: {error}", file=sys.stderr)
        sys.exit(2)
    print(f"{program}: {stop(program, state_files(conf, program)[0])}")
