"""The installed entry points, read once per group and process.

``importlib.metadata.entry_points()`` reads every installed distribution's
metadata on each call (about 30 ms in a venv with the test tools); a server
start looked plugins and drivers up some 150 times, which was two thirds of
its start-up CPU.
"""

from __future__ import annotations

import functools
from importlib.metadata import EntryPoint, entry_points


@functools.cache
def _of_group(group: str) -> tuple[EntryPoint, ...]:
    return tuple(entry_points(group=group))


def of_group(group: str, name: str | None = None) -> tuple[EntryPoint, ...]:
    """The entry points of ``group`` (those called ``name`` only, when given)."""
    points = _of_group(group)
    return points if name is None else tuple(p for p in points if p.name == name)


def forget() -> None:
    """Read them again on the next lookup: for a distribution put on the path
    after they were read (tests do; an installed package needs a restart)."""
    _of_group.cache_clear()
