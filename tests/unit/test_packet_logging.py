"""Packet logging's pure parts: the NFLOG rules in a port's chains, the NFLOG
messages the kernel sends (built here byte by byte), the lines written."""

from __future__ import annotations

import socket
import struct

from neutrino.agents.extensions.log import line, port_log
from neutrino.linux import firewall_log, iptables_firewall, nflog

PORT = "11111111-2222-3333-4444-555555555555"
GROUP = "gggggggg-0000-0000-0000-000000000000"
LIMITS = firewall_log.Limits(rate=150, burst=30)
INFO = {
    "devices": {PORT: {"port_id": PORT, "device": "tap11111111-22", "mac_address":
                       "fa:16:3e:00:00:01", "fixed_ips": [{"subnet_id": "s",
                                                           "ip_address": "10.0.0.5"}],
                       "security_groups": [GROUP], "port_security_enabled": True}},
    "security_groups": {GROUP: [{"direction": "ingress", "ethertype": "IPv4",
                                 "protocol": "tcp", "port_range_min": 22,
                                 "port_range_max": 22, "remote_ip_prefix": None,
                                 "remote_group_id": None, "remote_address_group_id": None,
                                 "security_group_id": GROUP}]},
}
NFLOG = "-j NFLOG --nflog-group 3101"
HASHLIMIT = ("-m hashlimit --hashlimit-upto 150/sec --hashlimit-burst 30 "
             f"--hashlimit-name {firewall_log.bucket(LIMITS)}")


def ingress(logs):
    chains = iptables_firewall.build(INFO, logs=logs, limits=LIMITS).chains[4]
    return chains[f"neutrino-i{PORT[:11]}"]


def test_no_log_no_nflog():
    plain = ingress(None)
    assert not any("NFLOG" in rule for rule in plain)
    assert ingress({PORT: firewall_log.PortLog()}) == plain


def test_accept_logs_each_rule_before_it_returns():
    rules = ingress({PORT: firewall_log.PortLog(accept=True)})
    at = rules.index("-p tcp -m tcp --dport 22 -j RETURN")
    assert rules[at - 1] == (f"-p tcp -m tcp --dport 22 {HASHLIMIT} {NFLOG} "
                             f"--nflog-prefix A:{PORT} --nflog-size 128")
    assert sum("NFLOG" in rule for rule in rules) == 1  # DHCP, state: not logged
    assert rules[-1] == "-j neutrino-sg-fallback"


def test_drop_logs_what_falls_through():
    rules = ingress({PORT: firewall_log.PortLog(drop=True)})
    assert rules[-2:] == [f"{HASHLIMIT} {NFLOG} --nflog-prefix D:{PORT} --nflog-size 128",
                          "-j neutrino-sg-fallback"]
    both = ingress({PORT: firewall_log.PortLog(accept=True, drop=True)})
    assert sum("NFLOG" in rule for rule in both) == 2


def test_other_limits_are_another_bucket():
    """The kernel keeps a hashlimit's first limits while a rule names it: an
    agent restarted with new limits must write a new name (at most 15
    characters)."""
    names = {firewall_log.bucket(firewall_log.Limits(rate, burst))
             for rate in (100, 150, 1000, 10**9) for burst in (25, 30, 10**9)}
    assert len(names) == 12
    assert all(name.startswith("neutrino-") and len(name) == 15 for name in names)
    assert firewall_log.bucket(LIMITS) == firewall_log.bucket(firewall_log.Limits(150, 30))


def test_prefixes_round_trip():
    assert firewall_log.parse_prefix(firewall_log.prefix("D", PORT)) == ("D", PORT)
    for other in ("", "X:abc", "D:", "nonsense"):
        assert firewall_log.parse_prefix(other) is None


def test_what_logs_ask_together():
    def logs(*events):
        return [{"id": f"l{i}", "project_id": "p", "event": e} for i, e in enumerate(events)]

    assert port_log([]) is None
    assert port_log(logs("DROP")) == firewall_log.PortLog(drop=True)
    assert port_log(logs("ACCEPT", "DROP")) == port_log(logs("ALL"))
    assert port_log(logs("ALL")) == firewall_log.PortLog(accept=True, drop=True)


def _attr(kind: int, value: bytes) -> bytes:
    length = 4 + len(value)
    return (struct.pack("=HH", length, kind) + value).ljust((length + 3) & ~3, b"\0")


def _packet_message(prefix: bytes, payload: bytes, family=socket.AF_INET) -> bytes:
    attrs = (_attr(nflog.NFULA_PACKET_HDR, struct.pack("!HBB", 0x0800, 3, 0))
             + _attr(nflog.NFULA_PREFIX, prefix + b"\0")
             + _attr(nflog.NFULA_HWHEADER, bytes.fromhex("fa163e000001" "fa163e000002" "0800"))
             + _attr(nflog.NFULA_PAYLOAD, payload))
    body = struct.pack("!BBH", family, 0, 3101) + attrs
    return struct.pack("=IHHII", 16 + len(body), 0x400, 0, 0, 0) + body


ICMP_ECHO = (bytes.fromhex("45000054abcd40004001") + b"\0\0" + bytes([10, 0, 0, 9])
             + bytes([10, 0, 0, 5]) + bytes([8, 0]) + b"\0" * 6)
TCP_SYN = (bytes.fromhex("4500003c000040003f06") + b"\0\0" + bytes([10, 0, 0, 9])
           + bytes([10, 0, 0, 5]) + struct.pack("!HHIIBB", 40000, 22, 0, 0, 0x50, 0x02))


def test_parse_packets_and_acks():
    ack = struct.pack("=IHHII", 36, nflog.NLMSG_ERROR, 0, 1, 0) + struct.pack("=i", -16) + \
        b"\0" * 16
    data = _packet_message(b"D:" + PORT.encode(), ICMP_ECHO) + _packet_message(
        b"A:" + PORT.encode(), TCP_SYN) + ack
    packets, acks = nflog.parse(data)
    assert acks == [-16]
    assert [p.prefix for p in packets] == [f"D:{PORT}", f"A:{PORT}"]
    assert (packets[0].dst_mac, packets[0].src_mac, packets[0].ethertype) == (
        "fa:16:3e:00:00:01", "fa:16:3e:00:00:02", 0x0800)
    assert nflog.summary(packets[0]) == (
        "ethernet(dst='fa:16:3e:00:00:01',ethertype=2048,src='fa:16:3e:00:00:02'),"
        "ipv4(dst='10.0.0.5',proto=1,src='10.0.0.9',ttl=64),icmp(code=0,type=8)")
    assert nflog.summary(packets[1]).endswith(
        "ipv4(dst='10.0.0.5',proto=6,src='10.0.0.9',ttl=63),"
        "tcp(dst_port=22,bits=2,src_port=40000)")


def test_truncated_input_is_not_a_crash():
    whole = _packet_message(b"D:x", ICMP_ECHO)
    for cut in range(len(whole)):
        nflog.parse(whole[:cut])  # no exception, whatever is left out


def test_config_message_binds_the_group():
    data = nflog.config(3101, nflog.NFULNL_CFG_CMD_BIND, 128)
    length, kind, flags = struct.unpack_from("=IHH", data)
    assert (length, kind, flags) == (len(data), 0x401, 5)
    assert struct.unpack_from("!BBH", data, 16) == (socket.AF_UNSPEC, 0, 3101)
    attrs = nflog._attributes(data[20:])
    assert attrs[nflog.NFULA_CFG_CMD] == bytes([1])
    assert attrs[nflog.NFULA_CFG_MODE] == struct.pack("!IBB", 128, 2, 0)
    assert attrs[nflog.NFULA_CFG_QTHRESH] == struct.pack("!I", 1)


def test_lines_name_the_logs_that_asked():
    packet = nflog.parse(_packet_message(b"D:" + PORT.encode(), ICMP_ECHO))[0][0]
    logs = [{"id": "b", "project_id": "p", "event": "DROP"},
            {"id": "a", "project_id": "p", "event": "ALL"},
            {"id": "c", "project_id": "p", "event": "ACCEPT"}]
    assert line("D", PORT, logs, packet) == (
        f"action=DROP project_id=p log_resource_ids=['a', 'b'] vm_port={PORT} "
        f"pkt={nflog.summary(packet)}")
    assert line("D", PORT, logs[2:], packet) is None
