"""Typed INI configuration in Neutron's option names.

Options are declared as data (``Opt``) in groups; plugins bring their own
groups. Files are read in order, later ones override. A bad value is fatal
(``ConfigError`` names option, section and file); an unknown section or
option is only a warning, because operators carry sections for plugins that
are not loaded and options neutrino does not have (``Config.warn_unknown``
says which option a misspelt one meant, and which command reads one that is
another command's).
"""

from __future__ import annotations

import configparser
import difflib
import functools
import ipaddress
import json
import logging
import os
import re
import socket
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

LOG = logging.getLogger(__name__)
#: the config files as a JSON list, where no ``--config-file`` says: how the
#: server hands its files to its workers, and what neutrino-db-manage reads too
CONFIG_ENV = "NEUTRINO_CONFIG_FILES"


class ConfigError(Exception):
    """A configuration value that cannot be used; the message is one line."""


def parse_bool(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise ValueError("expected a boolean (true/false)")


def parse_list(text: str) -> list[str]:
    return [item.strip() for item in text.split(",") if item.strip()]


def int_range(low: int | None = None, high: int | None = None) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text.strip())
        except ValueError:
            raise ValueError("expected an integer") from None
        if low is not None and value < low:
            raise ValueError(f"must be >= {low}")
        if high is not None and value > high:
            raise ValueError(f"must be <= {high}")
        return value

    return parse


def choice(*choices: str, aliases: dict[str, str] | None = None) -> Callable[[str], str]:
    """One of ``choices``; ``aliases`` maps other spellings (Neutron's class
    paths for a driver, say) to the choice they stand for."""
    def parse(text: str) -> str:
        value = (aliases or {}).get(text.strip(), text.strip())
        if value not in choices:
            raise ValueError(f"must be one of {', '.join(choices)}")
        return value

    return parse


_MAC_RE = re.compile(r"^([0-9a-f]{2}:){5}[0-9a-f]{2}$")


def parse_mac(text: str) -> str:
    value = text.strip().lower()
    if not _MAC_RE.match(value):
        raise ValueError("expected a MAC address like fa:16:3e:00:00:00")
    return value


def parse_cidr(text: str) -> str:
    """An IPv4 or IPv6 network (address/prefix), as written canonically."""
    try:
        return str(ipaddress.ip_network(text.strip(), strict=True))
    except ValueError as error:
        raise ValueError(f"not a network: {error}") from None


def parse_host(text: str) -> str:
    value = text.strip()
    try:
        ipaddress.ip_address(value)
    except ValueError:
        # digits and dots only is a malformed address (256.1.1.1), not a name
        if not re.match(r"^[A-Za-z0-9.-]+$", value) or re.match(r"^[0-9.]+$", value):
            raise ValueError("expected an IP address or host name") from None
    return value


def parse_page_limit(text: str) -> int:
    """Neutron's pagination_max_limit: a positive integer; negative or 'infinite': none."""
    value = text.strip().lower()
    if value == "infinite":
        return -1
    try:
        number = int(value)
    except ValueError:
        raise ValueError("expected an integer or 'infinite'") from None
    if number == 0:
        raise ValueError("must be a positive integer, or -1 for no limit")
    return number


@dataclass(frozen=True)
class Opt:
    name: str
    parse: Callable[[str], Any] = str
    default: Any = None
    help: str = ""
    # every occurrence counts, repeated in a section and across files, in
    # order (oslo.config's MultiStrOpt); the value is a list of parsed items
    multi: bool = False


@dataclass
class OptGroup:
    name: str
    opts: list[Opt] = field(default_factory=list)


CORE_GROUPS = [
    OptGroup("DEFAULT", [
        Opt("bind_host", parse_host, "127.0.0.1", "Address the API listens on."),
        Opt("bind_port", int_range(1, 65535), 9696, "Port the API listens on."),
        Opt("api_workers", int_range(1, 64), 1, "API worker processes."),
        Opt("client_socket_timeout", int_range(0), 900,
            "Seconds an idle client connection is kept open; 0: for ever."),
        Opt("wsgi_keep_alive", parse_bool, True,
            "Keep client connections open between requests."),
        Opt("wsgi_default_pool_size", int_range(0, 1000), 0,
            "Requests each API worker handles at once (its threads); 0: by database."),
        Opt("rpc_workers", int_range(0, 64), 0,
            "Processes serving the agents' calls; 0: the API workers serve them."),
        Opt("auth_strategy", choice("noauth", "trusted_headers", "keystone"), "noauth",
            "How requests are authenticated."),
        Opt("core_plugin", str, "ml2", "Core plugin, by entry point name or dotted path."),
        Opt("service_plugins", parse_list, ["router"],
            "Service plugins to load (routers by default: most clouds want them)."),
        Opt("base_mac", parse_mac, "fa:16:3e:00:00:00", "Prefix of generated MACs."),
        Opt("allow_overlapping_ips", parse_bool, True,
            "Allow subnets of different networks to overlap."),
        Opt("max_fixed_ips_per_port", int_range(1), 5, "Fixed IPs a port may carry."),
        Opt("max_dns_nameservers", int_range(0), 5, "DNS servers per subnet."),
        Opt("max_subnet_host_routes", int_range(0), 20, "Host routes per subnet."),
        Opt("max_allowed_address_pair", int_range(0), 10,
            "Allowed address pairs a port may carry."),
        Opt("max_routes", int_range(0), 30, "Extra routes per router."),
        Opt("enable_snat_by_default", parse_bool, True,
            "SNAT on a router gateway unless the request says otherwise."),
        Opt("pagination_max_limit", parse_page_limit, -1,
            "Largest page a list returns (-1 or 'infinite': no limit)."),
        Opt("state_path", str, "state", "Where state files (the SQLite database) live."),
        Opt("global_physnet_mtu", int_range(68), 1500, "MTU of the underlying network."),
        Opt("agent_down_time", int_range(1), 75, "Seconds without a heartbeat before an "
            "agent counts as down."),
        Opt("enable_new_agents", parse_bool, True,
            "Agents start with admin_state_up true when they first report."),
        Opt("dhcp_agents_per_network", int_range(1), 1,
            "DHCP agents that serve each network."),
        Opt("network_auto_schedule", parse_bool, True,
            "DHCP agents take networks without agents when they ask for their work."),
        Opt("allow_automatic_dhcp_failover", parse_bool, True,
            "Move networks away from DHCP agents that went down."),
        Opt("router_auto_schedule", parse_bool, True,
            "L3 agents take routers without an agent when they ask for their work."),
        Opt("allow_automatic_l3agent_failover", parse_bool, False,
            "Move routers away from L3 agents that went down."),
        Opt("l3_ha", parse_bool, False,
            "Routers are highly available (VRRP on several L3 agents) unless made "
            "with ha false."),
        Opt("max_l3_agents_per_router", int_range(0), 3,
            "L3 agents an HA router is scheduled to (0: every one that can)."),
        Opt("l3_ha_net_cidr", parse_cidr, "169.254.192.0/18",
            "The subnet of each project's HA network (where VRRP is spoken)."),
        Opt("l3_ha_network_type", str, "",
            "The network type of HA networks (empty: the first tenant network type)."),
        Opt("l3_ha_network_physical_name", str, "",
            "The physical network of HA networks, for flat or vlan ones."),
        Opt("default_availability_zones", parse_list, [],
            "Availability zones of a router created without availability_zone_hints."),
        Opt("dns_domain", str, "openstacklocal", "Domain for port host names."),
        Opt("debug", parse_bool, False, "Log at debug level."),
        Opt("host", str, "", "This host's name, as its agents report it."),
        Opt("transport_url", str, "memory://",
            "The message bus: memory:// (in the server process) or "
            "rabbit://user:password@host:port/vhost."),
        Opt("rpc_response_timeout", int_range(1), 60,
            "Seconds an RPC call waits for its answer."),
    ]),
    OptGroup("database", [
        Opt("connection", str, "", "SQLAlchemy URL; empty means SQLite in state_path."),
        Opt("max_retries", int_range(1), 20, "Retries of a transaction that conflicted."),
    ]),
    OptGroup("quotas", [
        Opt("quota_network", int_range(-1), 100, "Networks per project (-1: unlimited)."),
        Opt("quota_subnet", int_range(-1), 100, "Subnets per project."),
        Opt("quota_port", int_range(-1), 500, "Ports per project."),
        Opt("quota_subnetpool", int_range(-1), -1, "Subnet pools per project."),
        Opt("quota_security_group", int_range(-1), 10, "Security groups per project."),
        Opt("quota_security_group_rule", int_range(-1), 100,
            "Security group rules per project."),
        Opt("quota_router", int_range(-1), 10, "Routers per project."),
        Opt("quota_floatingip", int_range(-1), 50, "Floating IPs per project."),
        Opt("quota_rbac_policy", int_range(-1), 10, "RBAC policies per project."),
        Opt("quota_firewall_group", int_range(-1), 10, "Firewall groups per project."),
        Opt("quota_firewall_policy", int_range(-1), 10, "Firewall policies per project."),
        Opt("quota_firewall_rule", int_range(-1), 100, "Firewall rules per project."),
        Opt("quota_ikepolicy", int_range(-1), -1, "IKE policies per project."),
        Opt("quota_ipsecpolicy", int_range(-1), -1, "IPsec policies per project."),
        Opt("quota_vpnservice", int_range(-1), -1, "VPN services per project."),
        Opt("quota_endpoint_group", int_range(-1), -1, "VPN endpoint groups per project."),
        Opt("quota_ipsec_site_connection", int_range(-1), -1,
            "IPsec site connections per project."),
        Opt("default_quota", int_range(-1), -1, "Default for resources without a quota_ option."),
    ]),
]


class Config:
    """Parsed configuration: ``conf.DEFAULT.bind_port``, ``conf.group("ml2").type_drivers``."""

    def __init__(self, groups: Iterable[OptGroup], values: dict[str, dict[str, Any]],
                 raw: dict[str, dict[str, tuple[str, str]]], files: Iterable[str] = (),
                 every: dict[str, dict[str, list[tuple[str, str]]]] | None = None):
        self.files = list(files)
        self._every = every or {}  # section -> option -> every (text, file), for multi opts
        self._groups = {g.name: g for g in groups}
        self._values = values
        self._raw = raw  # section -> option -> (text, file), kept for plugin groups
        for name, vals in values.items():
            setattr(self, name, SimpleNamespace(**vals))

    if TYPE_CHECKING:
        # Groups are attributes set from data (a plugin registers its own), so
        # the type checker sees each as Any: the option types stop at this seam.
        def __getattr__(self, name: str) -> Any: ...

    def group(self, name: str) -> SimpleNamespace:
        return getattr(self, name)

    def named_in(self, section: str, option: str) -> str | None:
        """The file that sets an option, or None when it keeps its default."""
        given = self._raw.get(section, {}).get(option)
        return None if given is None else given[1]

    def occurrences(self, section: str, option: str) -> list[tuple[str, str]]:
        """Every (text, file) given for an option, in order: what a multi opt reads."""
        return list(self._every.get(section, {}).get(option, []))

    def source(self, section: str, option: str) -> str:
        """Where an option's value comes from, for error messages."""
        given = self._raw.get(section, {}).get(option)
        if given is None:
            return f"{option} in [{section}] (default)"
        return f"{option} in [{section}] of {given[1]}"

    def register(self, groups: Iterable[OptGroup]) -> None:
        """Add a plugin's option groups and parse their values from the same files."""
        for group in groups:
            known = self._groups.setdefault(group.name, OptGroup(group.name))
            known.opts.extend(o for o in group.opts if o not in known.opts)
            values = _parse_group(known, self._raw.get(group.name, {}),
                                  self._every.get(group.name, {}))
            self._values[group.name] = values
            setattr(self, group.name, SimpleNamespace(**values))

    def setting(self, section: str, option: str) -> str:
        """``option = value in [section] of file`` (or ``(default)``), for messages
        that say which setting wants something."""
        given = self._raw.get(section, {}).get(option)
        if given is not None:
            return f"{option} = {given[0].strip()} in [{section}] of {given[1]}"
        return f"{option} = {getattr(self.group(section), option)} in [{section}] (default)"

    def warn_unknown(self, others: Callable[[], Mapping[str, Iterable[OptGroup]]] | None = None
                     ) -> None:
        """Name what the command does not read, once every component it runs has
        registered its groups (before, options in use would be called unknown).

        An unknown option in a section the command reads is a warning, with the
        option meant when the name is close to one (a typo would otherwise leave
        a mapping unset without a word). An unknown section is a warning when its
        name is close to a section read, else only noted: a file shared between
        commands carries sections for the others (an agent given neutron.conf).
        ``others`` gives neutrino's other commands' groups by command (called
        only if something is unknown): a section or option one of them reads is
        only noted, naming it (the DHCP agent's ``interface_driver`` in a file
        the server reads too)."""
        # who reads what, asked once and only if something is unknown
        readers = functools.cache(lambda: _readers(others() if others else {}))
        for section, options in self._raw.items():
            group = self._groups.get(section)
            if group is None:
                files = sorted({path for _, path in options.values()})
                where = f" in {', '.join(files)}" if files else ""
                meant = _closest(section, self._groups)
                read_by = readers().get((section, ""))
                if read_by:
                    LOG.info("config: section [%s]%s ignored, read by %s", section, where, read_by)
                elif meant:
                    LOG.warning("config: unknown section [%s]%s ignored: did you mean [%s]?",
                                section, where, meant)
                else:
                    LOG.info("config: unknown section [%s]%s ignored", section, where)
                continue
            names = {o.name for o in group.opts}
            for option, (_, path) in options.items():
                if option in names:
                    continue
                read_by = readers().get((section, option))
                if read_by:
                    LOG.info("config: option %s in [%s] of %s ignored, read by %s",
                             option, section, path, read_by)
                else:
                    LOG.warning("config: unknown option %s in [%s] of %s ignored%s",
                                option, section, path, self._hint(option, names))

    def _hint(self, option: str, names: set[str]) -> str:
        """What an unknown option most likely meant, as the end of its warning."""
        meant = _closest(option, names)
        if meant:
            return f": did you mean {meant}?"
        elsewhere = sorted(name for name, group in self._groups.items()
                           if any(o.name == option for o in group.opts))
        if elsewhere:
            return f": it is read in [{elsewhere[0]}]"
        return ""


def _readers(others: Mapping[str, Iterable[OptGroup]]) -> dict[tuple[str, str], str]:
    """(section, option) -> the commands that read it, ``a, b``; (section, "")
    for the section itself."""
    found: dict[tuple[str, str], list[str]] = {}
    for command, groups in sorted(others.items()):
        for group in groups:
            for key in [(group.name, ""), *((group.name, opt.name) for opt in group.opts)]:
                if command not in found.setdefault(key, []):
                    found[key].append(command)
    return {key: ", ".join(commands) for key, commands in found.items()}


def _closest(name: str, known: Iterable[str]) -> str | None:
    """The one of ``known`` that ``name`` most likely misspells."""
    by_case = {k.lower(): k for k in known}
    if name.lower() in by_case:
        return by_case[name.lower()]
    found = difflib.get_close_matches(name.lower(), list(by_case), n=1, cutoff=0.8)
    return by_case[found[0]] if found else None


def _parse_group(group: OptGroup, raw: dict[str, tuple[str, str]],
                 every: dict[str, list[tuple[str, str]]] | None = None) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for opt in group.opts:
        if opt.multi:
            given = (every or {}).get(opt.name, [])
            # an empty occurrence (``option =``) adds nothing
            values[opt.name] = ([_parse_value(group, opt, text, path)
                                 for text, path in given if text.strip()]
                                if given else list(opt.default or ()))
            continue
        if opt.name not in raw:
            values[opt.name] = opt.default
            continue
        text, path = raw[opt.name]
        values[opt.name] = _parse_value(group, opt, text, path)
    return values


def _parse_value(group: OptGroup, opt: Opt, text: str, path: str) -> Any:
    try:
        return opt.parse(text)
    except ValueError as exc:
        raise ConfigError(
            f"invalid value {text!r} for option {opt.name} in [{group.name}] "
            f"of {path}: {exc}") from None


def read_files(paths: Iterable[str]) -> dict[str, dict[str, tuple[str, str]]]:
    raw: dict[str, dict[str, tuple[str, str]]] = {}
    for path in paths:
        # strict=False: a section or option repeated in one file is merged and
        # the last value wins, as oslo.config does for Neutron
        parser = configparser.ConfigParser(interpolation=None, default_section="\0none",
                                           strict=False)
        parser.optionxform = str  # type: ignore[assignment,method-assign]
        try:
            with open(path, encoding="utf-8") as handle:
                parser.read_file(handle)
        except OSError as exc:
            raise ConfigError(f"cannot read config file {path}: {exc.strerror}") from None
        except configparser.Error as exc:
            first = str(exc).splitlines()[0]
            raise ConfigError(f"cannot parse config file {path}: {first}") from None
        for section in parser.sections():
            target = raw.setdefault(section, {})
            for option, text in parser.items(section):
                target[option] = (text, path)
    return raw


_SECTION_RE = re.compile(r"\[(?P<header>.+)\]")
_OPTION_RE = re.compile(r"(?P<option>.*?)\s*[=:]\s*(?P<value>.*)$")


def every_value(paths: Iterable[str]) -> dict[str, dict[str, list[tuple[str, str]]]]:
    """Every occurrence of every option, in file order: section -> option ->
    [(text, file)]. configparser keeps only the last one, so files (already
    parsed by ``read_files``, hence well formed) are scanned again here, by
    configparser's rules: '#' and ';' comments, indented continuation lines."""
    found: dict[str, dict[str, list[tuple[list[str], str]]]] = {}
    for path in paths:
        with open(path, encoding="utf-8") as handle:
            lines = handle.read().splitlines()
        section: str | None = None
        current: list[str] | None = None  # the lines of the value being read
        indent = 0
        for line in lines:
            text = line.strip()
            if not text or text[0] in "#;":
                if current is not None and not text:
                    current.append("")
                continue
            depth = len(line) - len(line.lstrip())
            if current is not None and depth > indent:
                current.append(text)
                continue
            indent, current = depth, None
            header = _SECTION_RE.match(text)
            if header:
                section = header.group("header")
                continue
            option = _OPTION_RE.match(text)
            if section is None or option is None:
                continue
            current = [option.group("value")]
            found.setdefault(section, {}).setdefault(option.group("option"), []).append(
                (current, path))
    return {section: {option: [("\n".join(value).rstrip(), path) for value, path in given]
                      for option, given in options.items()}
            for section, options in found.items()}


def load(paths: Iterable[str], extra_groups: Iterable[OptGroup] = ()) -> Config:
    paths = list(paths)
    raw = read_files(paths)
    every = every_value(paths)
    merged: dict[str, OptGroup] = {}  # groups of one name are one section, as register has it
    for group in [*CORE_GROUPS, *extra_groups]:
        known = merged.setdefault(group.name, OptGroup(group.name))
        known.opts.extend(o for o in group.opts if o not in known.opts)
    groups = list(merged.values())
    values = {g.name: _parse_group(g, raw.get(g.name, {}), every.get(g.name, {}))
              for g in groups}
    return Config(groups, values, raw, paths, every)


def files_from_env() -> list[str]:
    """The files ``CONFIG_ENV`` names (none when it is unset or empty)."""
    text = os.environ.get(CONFIG_ENV, "").strip()
    if not text:
        return []
    try:
        files = json.loads(text)
    except ValueError:
        files = None
    if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
        raise ConfigError(f"{CONFIG_ENV} must be a JSON list of file names, "
                          f"like [\"/etc/neutrino/neutrino.conf\"]")
    return files


def host_name(conf: Config) -> str:
    """``[DEFAULT] host``, or the machine's name when it is not set."""
    return conf.DEFAULT.host or socket.gethostname()


def database_url(conf: Config) -> str:
    """``[database] connection``, or an SQLite file in ``state_path`` (made if need be)."""
    if conf.database.connection:
        return conf.database.connection
    state = os.path.abspath(conf.DEFAULT.state_path)
    try:
        os.makedirs(state, exist_ok=True)
    except OSError as error:
        raise ConfigError(f"cannot create directory {state}: {error.strerror}, set by "
                          f"{conf.source('DEFAULT', 'state_path')}") from None
    return f"sqlite:///{os.path.join(state, 'neutrino.db')}"
