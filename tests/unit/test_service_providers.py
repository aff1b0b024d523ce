"""[service_providers] service_provider: a multi-valued option, parsed and checked
into the registry service plugins pick their drivers from."""

from __future__ import annotations

import pytest

from neutrino import config, entry_points
from neutrino import exceptions as exc
from neutrino.plugins import providers
from neutrino.plugins.providers import ServiceProviders
from tests.fakes.providers import FirewallDriver, OtherVpnDriver, VpnDriver

FAKES = "tests.fakes.providers"
VPN = f"VPN:strongswan:{FAKES}.VpnDriver:default"
VPN_OTHER = f"VPN:Other:{FAKES}.OtherVpnDriver"
FIREWALL = f"FIREWALL_V2:iptables:{FAKES}.FirewallDriver:default"


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def section(*entries: str) -> str:
    return "[service_providers]\n" + "".join(f"service_provider = {e}\n" for e in entries)


def registry(*paths: str) -> ServiceProviders:
    return ServiceProviders.from_config(config.load(list(paths)))


def error_of(*paths: str) -> str:
    with pytest.raises(config.ConfigError) as caught:
        registry(*paths)
    return str(caught.value)


# --- the multi-valued option in config -------------------------------------------------

MULTI = config.OptGroup("things", [config.Opt("thing", str, [], "", multi=True),
                                   config.Opt("single", str, "", "")])


def test_a_multi_option_keeps_every_occurrence_in_a_section(tmp_path):
    path = write(tmp_path, "a.conf", "[things]\nthing = a\nsingle = x\nthing = b\n"
                                     "single = y\n[things]\nthing = c\n")
    conf = config.load([path], [MULTI])
    assert conf.things.thing == ["a", "b", "c"]
    assert conf.things.single == "y", "a single-valued option keeps its last value"


def test_a_multi_option_adds_up_over_files_in_order(tmp_path):
    first = write(tmp_path, "a.conf", "[things]\nthing = a\nthing = b\n")
    second = write(tmp_path, "b.conf", "[things]\nthing = c\n")
    assert config.load([first, second], [MULTI]).things.thing == ["a", "b", "c"]
    assert config.load([second, first], [MULTI]).things.thing == ["c", "a", "b"]


def test_a_multi_option_registered_later_reads_the_same_files(tmp_path):
    path = write(tmp_path, "a.conf", "[things]\nthing = a\nthing = b\n")
    conf = config.load([path])
    conf.register([MULTI])
    assert conf.things.thing == ["a", "b"]


def test_a_multi_option_follows_configparser_syntax(tmp_path):
    path = write(tmp_path, "a.conf",
                 "# a comment\n[things]\n; another\nthing : a\n"
                 "thing = b\n  continued\n\n  and more\n# not part of it\n"
                 "thing =\n[other]\nthing = elsewhere\n")
    conf = config.load([path], [MULTI])
    assert conf.things.thing == ["a", "b\ncontinued\n\nand more"], \
        "an empty occurrence adds nothing"
    assert conf.occurrences("things", "thing") == [
        ("a", path), ("b\ncontinued\n\nand more", path), ("", path)]


def test_a_multi_option_defaults_to_its_default(tmp_path):
    assert config.load([], [MULTI]).things.thing == []


def test_a_bad_item_of_a_multi_option_names_its_file(tmp_path):
    group = config.OptGroup("things", [config.Opt("count", config.int_range(0), [], "",
                                                  multi=True)])
    good = write(tmp_path, "good.conf", "[things]\ncount = 1\n")
    bad = write(tmp_path, "bad.conf", "[things]\ncount = 2\ncount = x\n")
    with pytest.raises(config.ConfigError) as caught:
        config.load([good, bad], [group])
    assert str(caught.value).startswith(f"invalid value 'x' for option count in [things] "
                                        f"of {bad}: ")


# --- the registry ------------------------------------------------------------------------


def test_no_provider_by_default():
    found = registry()
    assert found.providers == ()
    assert found.drivers_for("VPN") == {} and found.default_for("VPN") is None


def test_entries_become_providers_with_their_drivers(tmp_path):
    found = registry(write(tmp_path, "a.conf", section(VPN, VPN_OTHER, FIREWALL)))
    assert [p.view() for p in found.providers] == [
        {"service_type": "VPN", "name": "strongswan", "default": True},
        {"service_type": "VPN", "name": "other", "default": False},  # lower case, as Neutron
        {"service_type": "FIREWALL_V2", "name": "iptables", "default": True}]
    vpn = found.drivers_for("VPN")
    assert list(vpn) == ["strongswan", "other"]
    assert vpn["strongswan"].driver_class is VpnDriver
    assert vpn["other"].driver_class is OtherVpnDriver
    assert found.default_for("VPN").name == "strongswan"
    assert found.default_for("FIREWALL_V2").driver_class is FirewallDriver
    assert found.drivers_for("METERING") == {}


def test_a_service_file_adds_its_providers(tmp_path):
    """neutron_vpnaas.conf beside neutrino.conf: both files' entries count."""
    main = write(tmp_path, "neutrino.conf", section(FIREWALL))
    vpnaas = write(tmp_path, "neutron_vpnaas.conf", section(VPN, VPN_OTHER))
    found = registry(main, vpnaas)
    assert [(p.service_type, p.name) for p in found.providers] == [
        ("FIREWALL_V2", "iptables"), ("VPN", "strongswan"), ("VPN", "other")]


def test_an_empty_value_configures_nothing(tmp_path):
    assert registry(write(tmp_path, "a.conf", "[service_providers]\nservice_provider =\n")
                    ).providers == ()


def test_the_default_field_may_be_empty(tmp_path):
    found = registry(write(tmp_path, "a.conf", section(f"VPN:x:{FAKES}.VpnDriver:")))
    assert found.providers[0].default is False


def test_a_provider_is_picked_by_name_or_default(tmp_path):
    found = registry(write(tmp_path, "a.conf", section(VPN, VPN_OTHER)))
    assert found.provider_for("VPN").name == "strongswan"
    assert found.provider_for("VPN", "OTHER").driver_class is OtherVpnDriver
    with pytest.raises(providers.ServiceProviderNotFound) as missing:
        found.provider_for("VPN", "nope")
    assert missing.value.status == 400 and isinstance(missing.value, exc.InvalidInput)
    assert "Service provider 'nope' could not be found for service type VPN" in str(
        missing.value)
    with pytest.raises(providers.DefaultServiceProviderNotFound) as no_default:
        found.provider_for("FIREWALL_V2")
    assert "Service type FIREWALL_V2 does not have a default service provider" in str(
        no_default.value)


def test_a_service_that_needs_a_provider_says_so(tmp_path):
    found = registry(write(tmp_path, "a.conf", section(VPN)))
    assert list(found.require("VPN", "vpnaas")) == ["strongswan"]
    with pytest.raises(config.ConfigError) as caught:
        found.require("FIREWALL_V2", "firewall_v2")
    assert str(caught.value) == (
        "service plugin firewall_v2 needs a provider: set service_provider = "
        "FIREWALL_V2:NAME:DRIVER:default in [service_providers]")


def test_drivers_load_by_entry_point_too(tmp_path, monkeypatch, request):
    """An outside package names its driver in the ``neutrino.service_providers``
    entry point group; the entry is then just its name. (A distribution on the
    path, as an installed package would be.)"""
    dist = tmp_path / "outside_driver-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: outside-driver\n"
                                   "Version: 1.0\n")
    (dist / "entry_points.txt").write_text(
        f"[{providers.ENTRY_POINT_GROUP}]\nfake_vpn = {FAKES}:OtherVpnDriver\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    entry_points.forget()
    request.addfinalizer(entry_points.forget)  # later tests read them without it
    found = registry(write(tmp_path, "a.conf", section("VPN:ep:fake_vpn:default")))
    assert found.default_for("VPN").driver_class is OtherVpnDriver
    assert found.default_for("VPN").driver == "fake_vpn"
    message = error_of(write(tmp_path, "b.conf", section("VPN:ep:fake_fw")))
    known = message.partition("unknown driver 'fake_fw': neither a dotted path nor an "
                              "entry point (known: ")[2]
    assert "fake_vpn" in known.rstrip(")").split(", "), message


# --- mistakes: one line naming the entry, the option and the file ------------------------

BAD_ENTRIES = [
    ("VPN:strongswan", "expected TYPE:name:driver or TYPE:name:driver:default"),
    (f"VPN:a:{FAKES}.VpnDriver:default:x", "expected TYPE:name:driver or "
                                            "TYPE:name:driver:default"),
    (f"VPN::{FAKES}.VpnDriver", "expected TYPE:name:driver or TYPE:name:driver:default"),
    (f"VPNAAS:a:{FAKES}.VpnDriver", "unknown service type 'VPNAAS' (known: FIREWALL, "
                                     "FIREWALL_V2, L3_ROUTER_NAT, LOADBALANCERV2, LOGGING, "
                                     "METERING, QOS, TRUNK, VPN)"),
    (f"vpn:a:{FAKES}.VpnDriver", "unknown service type 'vpn'"),
    (f"VPN:a:{FAKES}.VpnDriver:yes", "the last field must be 'default' or empty, not 'yes'"),
    (f"VPN:{'n' * 256}:{FAKES}.VpnDriver", "the provider name is longer than 255 characters"),
    ("VPN:a:no_such_module.Driver", "cannot load driver no_such_module.Driver: No module "
                                    "named 'no_such_module'"),
    (f"VPN:a:{FAKES}.Missing", f"cannot load driver {FAKES}.Missing: module {FAKES} has no "
                               "Missing"),
    (f"VPN:a:{FAKES}.NOT_A_CLASS", f"driver {FAKES}.NOT_A_CLASS is not a class"),
    ("VPN:a:tests.fakes.broken_provider.Driver",
     "cannot load driver tests.fakes.broken_provider.Driver: needs the vendor library, "
     "which is not installed"),
    # (known: the installed entry points, the router's providers among them)
    ("VPN:a:strongswan", "unknown driver 'strongswan': neither a dotted path nor an entry "
                         "point (known: dvr, dvrha, ha, single_node)"),
]


@pytest.mark.parametrize(("entry", "reason"), BAD_ENTRIES)
def test_a_bad_entry_is_one_line_naming_it(tmp_path, entry, reason):
    path = write(tmp_path, "bad.conf", section(entry))
    message = error_of(path)
    assert message.startswith(f"invalid value {entry!r} for option service_provider in "
                              f"[service_providers] of {path}: {reason}"), message
    assert "\n" not in message


@pytest.mark.parametrize(("entries", "reason"), [
    ((VPN, f"VPN:StrongSwan:{FAKES}.OtherVpnDriver"),
     "service type VPN already has a provider named 'strongswan'"),
    ((VPN, f"VPN:other:{FAKES}.OtherVpnDriver:default"),
     "service type VPN already has a default provider (strongswan)"),
    ((VPN, f"VPN:again:{FAKES}.VpnDriver"),
     f"driver {FAKES}.VpnDriver already serves provider strongswan of VPN"),
    ((VPN, f"FIREWALL_V2:fw:{FAKES}.VpnDriver"),
     f"driver {FAKES}.VpnDriver already serves provider strongswan of VPN"),
])
def test_entries_that_clash_name_the_later_one_and_its_file(tmp_path, entries, reason):
    first = write(tmp_path, "first.conf", section(entries[0]))
    second = write(tmp_path, "second.conf", section(entries[1]))
    assert error_of(first, second) == (
        f"invalid value {entries[1]!r} for option service_provider in [service_providers] "
        f"of {second}: {reason}")


def test_one_name_may_serve_two_types(tmp_path):
    found = registry(write(tmp_path, "a.conf", section(
        VPN, f"FIREWALL_V2:strongswan:{FAKES}.FirewallDriver:default")))
    assert [p.default for p in found.providers] == [True, True]
