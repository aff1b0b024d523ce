"""What every agent -> server stub is built on: something that calls."""

from __future__ import annotations

from typing import Any, ClassVar, Protocol, Self

from neutrino.rpc.bus import Bus
from neutrino.rpc.client import RpcClient


class Caller(Protocol):
    """``RpcClient.call``'s shape: a fake server in a test is one too."""

    async def call(self, ctx: dict[str, Any], method: str, **args: Any) -> Any: ...


class Api:
    """A typed stub of one API: its methods name the calls and their arguments;
    the caller carries them (over the bus, or to a fake in a test)."""

    topic: ClassVar[str]
    version: ClassVar[str]
    namespace: ClassVar[str | None] = None

    def __init__(self, caller: Caller):
        self.caller = caller

    @classmethod
    def on(cls, bus: Bus) -> Self:
        """The stub over ``bus``, at this contract's topic, version and namespace."""
        return cls(RpcClient(bus, cls.topic, cls.version, namespace=cls.namespace))
