"""Reading NFLOG: packets that iptables' ``-j NFLOG`` rules copy to a netlink group.

One netlink socket (``AF_NETLINK``, ``NETLINK_NETFILTER``) bound to one group
with the ``nfnetlink_log`` config message (``NFULNL_MSG_CONFIG``: bind, copy
the packet). The kernel sends one ``NFULNL_MSG_PACKET`` per logged packet,
its attributes in TLVs: the rule's prefix, the hardware addresses and the
packet from its network header on. Netlink is per network namespace: the socket
must be opened in the namespace whose iptables rules log (the agent's).

``parse`` and ``summary`` are pure (tests feed them bytes they built);
``NflogSocket`` only does the I/O.
"""

from __future__ import annotations

import errno
import ipaddress
import os
import socket
import struct
from dataclasses import dataclass

from pyroute2 import netns

NETLINK_NETFILTER = 12
NFNL_SUBSYS_ULOG = 4
NFULNL_MSG_PACKET = 0
NFULNL_MSG_CONFIG = 1
NLMSG_ERROR = 2
NLMSG_DONE = 3
NLM_F_REQUEST, NLM_F_ACK = 1, 4
NFULA_CFG_CMD, NFULA_CFG_MODE, NFULA_CFG_QTHRESH = 1, 2, 5
NFULNL_CFG_CMD_BIND, NFULNL_CFG_CMD_UNBIND = 1, 2
NFULNL_COPY_PACKET = 2
NFULA_PACKET_HDR, NFULA_HWADDR, NFULA_PAYLOAD, NFULA_PREFIX, NFULA_HWHEADER = 1, 8, 9, 10, 16
NLA_TYPE_MASK = 0x3FFF  # without NLA_F_NESTED and NLA_F_NET_BYTEORDER

_NLMSGHDR = struct.Struct("=IHHII")
_NFGENMSG = struct.Struct("!BBH")
_NLATTR = struct.Struct("=HH")
ETH_P_IP, ETH_P_IPV6 = 0x0800, 0x86DD
PROTOCOLS = {1: "icmp", 6: "tcp", 17: "udp", 58: "icmpv6", 132: "sctp"}


class NflogError(OSError):
    """The kernel refused a config message (errno kept)."""


@dataclass(frozen=True)
class Packet:
    """One logged packet: the rule's prefix, its ethertype, MAC addresses (""
    when the kernel gave none) and its bytes from the network header."""
    prefix: str
    ethertype: int
    src_mac: str
    dst_mac: str
    payload: bytes


def _align(n: int) -> int:
    return (n + 3) & ~3


def attribute(kind: int, value: bytes) -> bytes:
    head = _NLATTR.pack(_NLATTR.size + len(value), kind)
    return (head + value).ljust(_align(_NLATTR.size + len(value)), b"\0")


def message(kind: int, flags: int, seq: int, family: int, res_id: int, attrs: bytes) -> bytes:
    body = _NFGENMSG.pack(family, 0, res_id) + attrs
    return _NLMSGHDR.pack(_NLMSGHDR.size + len(body), kind, flags, seq, 0) + body


def config(group: int, command: int | None, copy_range: int | None, seq: int = 1) -> bytes:
    """A config message for ``group``: a bind/unbind command, the copy mode and
    a queue of one (the kernel's default holds up to 100 packets for a second)."""
    attrs = b""
    if command is not None:
        attrs += attribute(NFULA_CFG_CMD, struct.pack("B", command))
    if copy_range is not None:
        attrs += attribute(NFULA_CFG_MODE, struct.pack("!IBB", copy_range,
                                                       NFULNL_COPY_PACKET, 0))
        attrs += attribute(NFULA_CFG_QTHRESH, struct.pack("!I", 1))
    return message((NFNL_SUBSYS_ULOG << 8) | NFULNL_MSG_CONFIG, NLM_F_REQUEST | NLM_F_ACK,
                   seq, socket.AF_UNSPEC, group, attrs)


def _attributes(data: bytes) -> dict[int, bytes]:
    found: dict[int, bytes] = {}
    offset = 0
    while offset + _NLATTR.size <= len(data):
        length, kind = _NLATTR.unpack_from(data, offset)
        if length < _NLATTR.size or offset + length > len(data):
            break
        found[kind & NLA_TYPE_MASK] = data[offset + _NLATTR.size:offset + length]
        offset += _align(length)
    return found


def _mac(raw: bytes) -> str:
    return ":".join(f"{b:02x}" for b in raw)


def parse(data: bytes) -> tuple[list[Packet], list[int]]:
    """The packets of a datagram, and the errors it acknowledged (0: success)."""
    packets, acks = [], []
    offset = 0
    while offset + _NLMSGHDR.size <= len(data):
        length, kind, _flags, _seq, _pid = _NLMSGHDR.unpack_from(data, offset)
        if length < _NLMSGHDR.size or offset + length > len(data):
            break
        body = data[offset + _NLMSGHDR.size:offset + length]
        offset += _align(length)
        if kind == NLMSG_ERROR and len(body) >= 4:
            acks.append(struct.unpack_from("=i", body)[0])
        elif kind == (NFNL_SUBSYS_ULOG << 8) | NFULNL_MSG_PACKET and len(body) >= 4:
            packets.append(_packet(_NFGENMSG.unpack_from(body)[0],
                                   _attributes(body[_NFGENMSG.size:])))
    return packets, acks


def _packet(family: int, attrs: dict[int, bytes]) -> Packet:
    ethertype = {int(socket.AF_INET): ETH_P_IP, int(socket.AF_INET6): ETH_P_IPV6}.get(family, 0)
    header = attrs.get(NFULA_PACKET_HDR, b"")
    if len(header) >= 2 and struct.unpack_from("!H", header)[0]:
        ethertype = struct.unpack_from("!H", header)[0]
    src = dst = ""
    hw = attrs.get(NFULA_HWADDR, b"")
    if len(hw) >= 4:
        src = _mac(hw[4:4 + min(struct.unpack_from("!H", hw)[0], 8)])
    hw_header = attrs.get(NFULA_HWHEADER, b"")
    if len(hw_header) >= 12:  # Ethernet: destination, source, type
        dst, src = _mac(hw_header[:6]), _mac(hw_header[6:12])
    return Packet(attrs.get(NFULA_PREFIX, b"").split(b"\0")[0].decode("ascii", "replace"),
                  ethertype, src, dst, attrs.get(NFULA_PAYLOAD, b""))


def summary(packet: Packet) -> str:
    """``ethernet(...),ipv4(...),tcp(...)``: what the log line says of a packet."""
    parts = [f"ethernet(dst='{packet.dst_mac}',ethertype={packet.ethertype},"
             f"src='{packet.src_mac}')"]
    data = packet.payload
    if packet.ethertype == ETH_P_IP and len(data) >= 20:
        header = (data[0] & 0x0F) * 4
        proto, ttl = data[9], data[8]
        parts.append(f"ipv4(dst='{ipaddress.IPv4Address(data[16:20])}',proto={proto},"
                     f"src='{ipaddress.IPv4Address(data[12:16])}',ttl={ttl})")
        parts += _transport(proto, data[header:])
    elif packet.ethertype == ETH_P_IPV6 and len(data) >= 40:
        proto = data[6]
        parts.append(f"ipv6(dst='{ipaddress.IPv6Address(data[24:40])}',hop_limit={data[7]},"
                     f"nxt={proto},src='{ipaddress.IPv6Address(data[8:24])}')")
        parts += _transport(proto, data[40:])
    return ",".join(parts)


def _transport(proto: int, data: bytes) -> list[str]:
    name = PROTOCOLS.get(proto)
    if name in ("tcp", "udp", "sctp") and len(data) >= 4:
        src, dst = struct.unpack_from("!HH", data)
        flags = f",bits={data[13]}" if name == "tcp" and len(data) >= 14 else ""
        return [f"{name}(dst_port={dst}{flags},src_port={src})"]
    if name in ("icmp", "icmpv6") and len(data) >= 2:
        return [f"{name}(code={data[1]},type={data[0]})"]
    return []


def _netlink_socket(namespace: str | None) -> socket.socket:
    if namespace is None:
        return socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_NETFILTER)
    netns.pushns(namespace)  # this thread only, for as long as the socket takes
    try:
        return socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_NETFILTER)
    finally:
        netns.popns()


class NflogSocket:
    """A netlink socket bound to one NFLOG group of this network namespace."""

    def __init__(self, group: int, copy_range: int = 128, buffer: int = 1 << 20,
                 namespace: str | None = None):
        """``namespace``: the named network namespace whose rules log (None:
        this one); a socket belongs to the namespace it was made in."""
        self.group = group
        self._sock = _netlink_socket(namespace)
        try:
            self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, buffer)
            self._sock.bind((0, 0))
            self._configure(config(group, NFULNL_CFG_CMD_BIND, copy_range))
        except BaseException:
            self._sock.close()
            raise
        self._sock.setblocking(False)

    def _configure(self, request: bytes) -> None:
        self._sock.send(request)
        while True:
            _, acks = parse(self._sock.recv(65536))
            if acks:
                if acks[0]:
                    raise NflogError(-acks[0], f"NFLOG group {self.group}: "
                                     f"{os.strerror(-acks[0])}")
                return

    def fileno(self) -> int:
        return self._sock.fileno()

    def read(self) -> list[Packet]:
        """The packets waiting (none when the kernel has none yet). A full buffer
        (ENOBUFS) lost some: the next read goes on with what comes."""
        packets: list[Packet] = []
        while True:
            try:
                data = self._sock.recv(65536)
            except BlockingIOError:
                return packets
            except OSError as error:
                if error.errno == errno.ENOBUFS:
                    continue
                raise
            packets += parse(data)[0]

    def close(self) -> None:
        try:
            self._sock.setblocking(True)
            self._configure(config(self.group, NFULNL_CFG_CMD_UNBIND, None, seq=2))
        except OSError:
            pass  # closing is what matters: the kernel unbinds a closed socket's group
        finally:
            self._sock.close()
