"""SQLite writers queue on a lock file, one at a time, across threads and processes."""

from __future__ import annotations

import threading
import time

from neutrino.db.engine import WriterQueue


def test_one_writer_at_a_time_across_threads(tmp_path):
    queue = WriterQueue(str(tmp_path / "db.sqlite"))
    inside, overlaps = [0], []

    def writer() -> None:
        for _ in range(20):
            with queue.turn():
                inside[0] += 1
                overlaps.append(inside[0])
                time.sleep(0.0005)
                inside[0] -= 1

    threads = [threading.Thread(target=writer) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(overlaps) == 80 and max(overlaps) == 1
    assert (tmp_path / "db.sqlite-writers.lock").exists()


def test_a_turn_inside_a_turn_does_not_wait_for_itself(tmp_path):
    queue = WriterQueue(str(tmp_path / "db.sqlite"))
    with queue.turn(), queue.turn():
        pass

    def take_a_turn() -> None:
        with queue.turn():
            pass

    other = threading.Thread(target=take_a_turn)
    other.start()
    other.join(5)
    assert not other.is_alive(), "the lock was not released after the outer turn"


def test_in_memory_database_queues_threads_only():
    for database in (None, "", ":memory:"):
        queue = WriterQueue(database)
        assert queue.path is None
        with queue.turn(), queue.turn():
            pass
