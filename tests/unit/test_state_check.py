"""The session check that no test leaves state in the working directory
(tests/conftest.py), run on a session of its own."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def session(tmp_path: Path, test: str, state: bool = True) -> subprocess.CompletedProcess:
    """A pytest session in ``tmp_path``, with the check and one test; its
    ./state holds a database from before (a developer's server) if ``state``."""
    if state:
        (tmp_path / "state").mkdir()
        (tmp_path / "state" / "neutrino.db").write_text("")
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "conftest.py").write_text(
        "from tests.conftest import no_state_in_the_working_directory  # noqa: F401\n")
    (tmp_path / "test_it.py").write_text(test)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_it.py"],
        capture_output=True, text=True, timeout=60, cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)})


def test_a_file_left_under_an_existing_state_fails_the_run(tmp_path):
    done = session(tmp_path, "def test_it():\n    open('state/metadata_proxy', 'w').close()\n")
    assert done.returncode != 0, done.stdout
    assert "a test wrote to" in done.stdout and "state/metadata_proxy" in done.stdout


def test_a_new_state_directory_fails_the_run(tmp_path):
    done = session(tmp_path, "import os\ndef test_it():\n    os.mkdir('state')\n", state=False)
    assert done.returncode != 0, done.stdout
    assert "a test wrote to" in done.stdout


@pytest.mark.parametrize("test", ["def test_it():\n    pass\n",
                                  "def test_it():\n    open('state/neutrino.db', 'a').close()\n"],
                         ids=["nothing", "an-existing-file"])
def test_state_from_before_is_no_failure(tmp_path, test):
    done = session(tmp_path, test)
    assert done.returncode == 0, done.stdout
