"""What can go wrong on the bus, as the caller sees it."""

from __future__ import annotations


class RpcError(Exception):
    """Base of every bus error."""


class MessagingTimeout(RpcError):
    """No reply in time: the server is gone, slow, or the message was lost."""


class TransportError(RpcError):
    """The connection to the broker failed or was lost while the call waited."""


class RemoteError(RpcError):
    """The remote endpoint raised; ``type`` is its exception's class name."""

    def __init__(self, type_: str, message: str):
        super().__init__(f"{type_}: {message}")
        self.type = type_
        self.message = message


class UnsupportedVersion(RpcError):
    """No endpoint serves the method at the requested API version."""
