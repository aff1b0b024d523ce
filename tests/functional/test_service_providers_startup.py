"""A [service_providers] entry the server cannot use stops it before it serves,
with one line naming the entry, the option and the file."""

from __future__ import annotations

import pytest

from neutrino import config
from neutrino.cmd.server import load_config
from tests.functional.test_startup import base_conf, fail_to_start, one_error_line, write

FAKES = "tests.fakes.providers"


def providers_conf(tmp_path, *entries: str):
    return write(tmp_path / "providers.conf", "[service_providers]\n" + "".join(
        f"service_provider = {entry}\n" for entry in entries))


@pytest.mark.parametrize(("entry", "reason"), [
    ("VPN:strongswan", "expected TYPE:name:driver or TYPE:name:driver:default"),
    ("VPNAAS:a:neutrino_vpn.Driver", "unknown service type 'VPNAAS'"),
    ("VPN:a:no_such_module.Driver", "cannot load driver no_such_module.Driver: No module "
                                    "named 'no_such_module'"),
    ("VPN:a:neutrino.config.NoSuchDriver", "cannot load driver neutrino.config.NoSuchDriver: "
                                           "module neutrino.config has no NoSuchDriver"),
])
def test_a_bad_entry_stops_the_server_with_one_line(tmp_path, entry, reason):
    conf = providers_conf(tmp_path, entry)
    code, output = fail_to_start(tmp_path, base_conf(tmp_path), conf)
    assert code != 0
    error = one_error_line(output)
    assert error.startswith(f"neutrino-server: invalid value {entry!r} for option "
                            f"service_provider in [service_providers] of {conf}: {reason}"), error
    assert output.strip() == error, "nothing but the error is printed"


@pytest.mark.parametrize(("second", "reason"), [
    (f"VPN:StrongSwan:{FAKES}.OtherVpnDriver", "already has a provider named 'strongswan'"),
    (f"VPN:other:{FAKES}.OtherVpnDriver:default", "already has a default provider"),
    (f"FIREWALL_V2:fw:{FAKES}.VpnDriver", "already serves provider strongswan of VPN"),
])
def test_clashing_entries_fail_the_server_configuration(tmp_path, second, reason):
    """In process: the server's own loading, with the test drivers importable."""
    first = f"VPN:strongswan:{FAKES}.VpnDriver:default"
    conf = providers_conf(tmp_path, first, second)
    with pytest.raises(config.ConfigError) as caught:
        load_config([str(base_conf(tmp_path)), str(conf)])
    assert str(caught.value).startswith(
        f"invalid value {second!r} for option service_provider in [service_providers] "
        f"of {conf}: ")
    assert reason in str(caught.value)


def test_providers_load_with_the_server_configuration(tmp_path):
    conf = providers_conf(tmp_path, f"VPN:strongswan:{FAKES}.VpnDriver:default")
    loaded = load_config([str(base_conf(tmp_path)), str(conf)])
    assert loaded.service_providers.service_provider == [
        f"VPN:strongswan:{FAKES}.VpnDriver:default"]
