"""``--background`` and ``--stop`` (neutrino/cmd/background.py): the parent
returns once the child serves, or says why it died; ``stop`` waits until it is
gone. The child here is a fork of the test process, which ends itself."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from neutrino.cmd import background
from neutrino.linux.process import cmdline

PROGRAM = Path(cmdline(os.getpid())[0]).name  # the python running the tests


def files(tmp_path: Path) -> tuple[Path, Path]:
    return tmp_path / "state" / "x.pid", tmp_path / "state" / "x.log"


def test_a_child_that_dies_is_reported_with_its_last_line(tmp_path):
    pid_file, log = files(tmp_path)
    try:
        background.start(PROGRAM, pid_file, log, lambda: False, timeout=20)
    except background.BackgroundError as error:
        assert "exited (status 3): cannot bind 127.0.0.1:9696" in str(error)
        assert str(log) in str(error)
        return
    os.write(2, b"starting\ncannot bind 127.0.0.1:9696\n")  # the child: fd 2 is the log
    os._exit(3)


def test_the_parent_exits_once_ready_and_stop_waits_for_the_child(tmp_path):
    pid_file, log = files(tmp_path)
    ready_at = time.monotonic() + 0.5
    with pytest.raises(SystemExit) as parent:
        try:
            background.start(PROGRAM, pid_file, log, lambda: time.monotonic() > ready_at,
                             timeout=20)
        except SystemExit:
            raise
        except BaseException:
            os._exit(1)
        else:  # the child: detached, until stopped
            os.write(1, b"serving\n")
            time.sleep(60)
            os._exit(0)
    assert parent.value.code == 0
    pid = background.running(pid_file, PROGRAM)
    assert pid is not None and pid != os.getpid()
    assert os.getsid(pid) == pid  # a session of its own: no terminal's signals
    with pytest.raises(background.BackgroundError, match="already running"):
        background.start(PROGRAM, pid_file, log, lambda: True)
    assert background.stop(PROGRAM, pid_file, timeout=10) == f"stopped pid {pid}"
    assert cmdline(pid) is None and not pid_file.exists()
    assert "serving" in log.read_text()
    assert background.stop(PROGRAM, pid_file) == "not running"


def test_a_stale_pid_file_is_not_running(tmp_path):
    pid_file = tmp_path / "x.pid"
    pid_file.write_text(f"{os.getpid()}\n")
    assert background.running(pid_file, "neutrino-all-in-one") is None
    assert background.running(pid_file, PROGRAM) == os.getpid()
    pid_file.write_text("nonsense")
    assert background.running(pid_file, PROGRAM) is None


def test_local_urls():
    assert background.local_url("0.0.0.0", 9696) == "http://127.0.0.1:9696"
    assert background.local_url("::", 9696) == "http://[::1]:9696"
    assert background.local_url("10.0.0.5", 80) == "http://10.0.0.5:80"
