"""neutrino.log: the [DEFAULT] logging options and what setup() makes of them.

Each test sets logging up for real (a file in the test's directory, a syslog
socket of its own) and reads what came out; the fixture takes it down again.
"""

from __future__ import annotations

import json
import logging
import os
import socket
from pathlib import Path

import pytest

from neutrino import config, log

PROGRAM = "neutrino-test"


@pytest.fixture(autouse=True)
def restored():
    root = logging.getLogger()
    level = root.level
    yield
    log.shutdown()
    root.setLevel(level)


def load(tmp_path: Path, text: str) -> tuple[config.Config, Path]:
    path = tmp_path / "log.conf"
    path.write_text(f"[DEFAULT]\n{text}\n")
    return config.load([str(path)]), path


def lines(path: Path) -> list[str]:
    log.shutdown()  # everything queued is written
    return path.read_text().splitlines()


# --- the options -------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "expected"), [
    ("", []),
    ("sqlalchemy=WARN", ["sqlalchemy=WARN"]),
    ("a=debug, b.c=Error ,d=15", ["a=DEBUG", "b.c=ERROR", "d=15"]),
])
def test_default_log_levels_parse(text, expected):
    assert log.parse_levels(text) == expected


@pytest.mark.parametrize(("text", "reason"), [
    ("sqlalchemy", "expected module=LEVEL, not 'sqlalchemy'"),
    ("sqlalchemy=LOUD", "unknown level 'LOUD' for sqlalchemy"),
    ("=INFO", "expected module=LEVEL"),
])
def test_bad_default_log_levels_name_the_option_and_file(tmp_path, text, reason):
    conf, path = load(tmp_path, f"default_log_levels = {text}")
    with pytest.raises(config.ConfigError) as caught:
        log.setup(conf, PROGRAM)
    assert str(caught.value).startswith(
        f"invalid value {text!r} for option default_log_levels in [DEFAULT] of {path}: ")
    assert reason in str(caught.value)


@pytest.mark.parametrize("text", ["LOG_USER", "LOG_LOCAL0", "local7", "daemon"])
def test_syslog_facilities_as_oslo_takes_them(text):
    assert log.parse_facility(text) == text


def test_bad_syslog_facility_is_a_config_error(tmp_path):
    conf, path = load(tmp_path, "syslog_log_facility = LOG_NOWHERE")
    with pytest.raises(config.ConfigError, match=(
            rf"invalid value 'LOG_NOWHERE' for option syslog_log_facility in \[DEFAULT\] "
            rf"of {path}: expected a syslog facility")):
        log.setup(conf, PROGRAM)


# --- where records go --------------------------------------------------------------------


def test_log_file_gets_the_classic_lines(tmp_path):
    out = tmp_path / "out.log"
    conf, _ = load(tmp_path, f"log_file = {out}")
    log.setup(conf, PROGRAM)
    logging.getLogger("neutrino.a").info("hello %s", "there")
    logging.getLogger("neutrino.a").debug("not at INFO")
    [line] = lines(out)
    assert line.endswith(f" {os.getpid()} INFO neutrino.a hello there"), line


def test_debug_logs_debug(tmp_path):
    out = tmp_path / "out.log"
    conf, _ = load(tmp_path, f"log_file = {out}\ndebug = true")
    log.setup(conf, PROGRAM)
    logging.getLogger("neutrino.a").debug("now shown")
    assert lines(out)[0].endswith("DEBUG neutrino.a now shown")


@pytest.mark.parametrize(("text", "expected"), [
    ("log_dir = {tmp}", "{tmp}/neutrino-test.log"),             # log_dir alone: per program
    ("log_dir = {tmp}\nlog_file = x.log", "{tmp}/x.log"),        # log_file relative to it
    ("log_dir = /elsewhere\nlog_file = {tmp}/abs.log", "{tmp}/abs.log"),  # absolute wins
])
def test_log_dir_as_oslo_log_has_it(tmp_path, text, expected):
    conf, _ = load(tmp_path, text.format(tmp=tmp_path))
    log.setup(conf, PROGRAM)
    logging.getLogger("neutrino.a").warning("here")
    assert lines(Path(expected.format(tmp=tmp_path)))[0].endswith("WARNING neutrino.a here")


def test_log_dir_that_is_missing_stops_with_one_line(tmp_path):
    missing = tmp_path / "missing"
    conf, path = load(tmp_path, f"log_dir = {missing}")
    with pytest.raises(config.ConfigError) as caught:
        log.setup(conf, PROGRAM)
    assert str(caught.value) == (
        f"cannot open log file {missing}/neutrino-test.log: No such file or directory, "
        f"set by log_dir in [DEFAULT] of {path}")


def test_log_file_that_is_a_directory_names_both_options(tmp_path):
    (tmp_path / "taken").mkdir()
    conf, path = load(tmp_path, f"log_dir = {tmp_path}\nlog_file = taken")
    with pytest.raises(config.ConfigError) as caught:
        log.setup(conf, PROGRAM)
    assert str(caught.value) == (
        f"cannot open log file {tmp_path}/taken: Is a directory, set by log_file in "
        f"[DEFAULT] of {path} and log_dir in [DEFAULT] of {path}")


def test_the_command_line_wins_and_is_named(tmp_path):
    out = tmp_path / "cli.log"
    conf, _ = load(tmp_path, f"log_file = {tmp_path / 'conf.log'}")
    log.setup(conf, PROGRAM, {"log_file": str(out), "debug": True})
    logging.getLogger("neutrino.a").debug("from the command line")
    assert lines(out)[0].endswith("DEBUG neutrino.a from the command line")
    assert not (tmp_path / "conf.log").exists()
    with pytest.raises(config.ConfigError, match="set by --log-dir on the command line$"):
        log.setup(conf, PROGRAM, {"log_dir": str(tmp_path / "missing"), "log_file": ""})


def test_default_log_levels_quiet_their_loggers_even_with_debug(tmp_path):
    out = tmp_path / "out.log"
    conf, _ = load(tmp_path, f"log_file = {out}\ndebug = true\n"
                             "default_log_levels = chatty=WARNING, chatty.inner=DEBUG")
    log.setup(conf, PROGRAM)
    logging.getLogger("chatty").info("dropped")
    logging.getLogger("chatty.deep").info("dropped too")
    logging.getLogger("chatty.inner").debug("kept")
    logging.getLogger("neutrino.a").debug("kept as well")
    got = lines(out)
    assert [line.split(" ", 4)[-1] for line in got] == [
        "chatty.inner kept", "neutrino.a kept as well"], got


def test_setup_again_replaces_the_first(tmp_path):
    first, second = tmp_path / "first.log", tmp_path / "second.log"
    log.setup(load(tmp_path, f"log_file = {first}")[0], PROGRAM)
    log.setup(load(tmp_path, f"log_file = {second}")[0], PROGRAM)
    logging.getLogger("neutrino.a").info("once")
    assert lines(second)[0].endswith("once")
    assert first.read_text() == ""


def test_arguments_are_taken_when_logged_not_when_written(tmp_path):
    out = tmp_path / "out.log"
    log.setup(load(tmp_path, f"log_file = {out}")[0], PROGRAM)
    ports = ["a"]
    logging.getLogger("neutrino.a").info("ports %s", ports)
    ports.append("b")  # the record is written later, by another thread
    assert lines(out)[0].endswith("ports ['a']")


def test_request_id_goes_with_what_a_request_logs(tmp_path):
    out = tmp_path / "out.log"
    log.setup(load(tmp_path, f"log_file = {out}")[0], PROGRAM)
    token = log.REQUEST_ID.set("req-1234")
    try:
        logging.getLogger("neutrino.a").info("inside")
    finally:
        log.REQUEST_ID.reset(token)
    logging.getLogger("neutrino.a").info("outside")
    inside, outside = lines(out)
    assert inside.endswith("INFO neutrino.a [req-1234] inside")
    assert outside.endswith("INFO neutrino.a outside")


def test_json_lines(tmp_path):
    out = tmp_path / "out.log"
    log.setup(load(tmp_path, f"log_file = {out}\nuse_json = true")[0], PROGRAM)
    token = log.REQUEST_ID.set("req-42")
    try:
        logging.getLogger("neutrino.a").info("with \"quotes\"\nand a newline")
        try:
            raise ValueError("boom")
        except ValueError:
            logging.getLogger("neutrino.b").exception("failed")
    finally:
        log.REQUEST_ID.reset(token)
    logging.getLogger("neutrino.c").warning("no request")
    first, second, third = (json.loads(line) for line in lines(out))
    assert set(first) == {"time", "level", "logger", "message", "process", "request_id"}
    assert first["level"] == "INFO" and first["logger"] == "neutrino.a"
    assert first["message"] == "with \"quotes\"\nand a newline"
    assert first["process"] == os.getpid() and first["request_id"] == "req-42"
    assert first["time"][:2] == "20" and "T" in first["time"]
    assert second["message"] == "failed" and second["level"] == "ERROR"
    assert second["traceback"].startswith("Traceback") and "ValueError: boom" in second[
        "traceback"]
    assert "request_id" not in third and third["message"] == "no request"


def test_a_forked_child_still_logs(tmp_path):
    """--background forks after logging is set up: the child's records must
    not wait in a queue no thread reads."""
    out = tmp_path / "out.log"
    log.setup(load(tmp_path, f"log_file = {out}")[0], PROGRAM)
    child = os.fork()
    if child == 0:
        try:
            logging.getLogger("neutrino.child").info("from the child")
            log.shutdown()
        finally:
            os._exit(0)
    os.waitpid(child, 0)
    logging.getLogger("neutrino.parent").info("from the parent")
    got = lines(out)
    assert any(line.endswith("neutrino.child from the child") for line in got), got
    assert any(line.endswith("neutrino.parent from the parent") for line in got), got


# --- syslog ------------------------------------------------------------------------------


@pytest.fixture
def syslog_socket(tmp_path):
    path = tmp_path / "log.sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind(str(path))
        sock.settimeout(5)
        yield path, sock


def test_syslog_gets_tagged_lines_with_the_facility(tmp_path, syslog_socket):
    path, sock = syslog_socket
    conf, _ = load(tmp_path, f"use_syslog = true\nsyslog_log_facility = LOG_LOCAL0\n"
                             f"log_file = {tmp_path / 'also.log'}")
    log.setup(conf, PROGRAM, syslog_address=str(path))
    logging.getLogger("neutrino.a").warning("to syslog")
    message = sock.recv(4096).decode()
    # local0 (16) * 8 + warning (4)
    assert message == f"<132>{PROGRAM}[{os.getpid()}]: WARNING neutrino.a to syslog\x00"
    assert lines(tmp_path / "also.log")[0].endswith("WARNING neutrino.a to syslog")


def test_syslog_that_is_not_there_stops_with_one_line(tmp_path):
    conf, path = load(tmp_path, "use_syslog = true")
    nowhere = tmp_path / "no.sock"
    with pytest.raises(config.ConfigError) as caught:
        log.setup(conf, PROGRAM, syslog_address=str(nowhere))
    assert str(caught.value) == (
        f"cannot reach syslog at {nowhere}: No such file or directory, needed by "
        f"use_syslog in [DEFAULT] of {path}")
