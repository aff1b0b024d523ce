"""The L2 agent's security group data: what it asks the server about, what it keeps."""

from __future__ import annotations

from neutrino.agents.sg_info import SecurityGroupInfo


def port(device: str, *groups: str) -> dict:
    return {"device": device, "port_id": f"id-{device}", "security_groups": list(groups)}


def rule(group: str, remote: str | None = None) -> dict:
    return {"security_group_id": group, "direction": "ingress", "remote_group_id": remote}


def answer(ports: list[dict], rules: dict, members: dict) -> dict:
    return {"devices": {p["port_id"]: p for p in ports}, "security_groups": rules,
            "sg_member_ips": members, "address_group_ips": {}}


def filled() -> SecurityGroupInfo:
    info = SecurityGroupInfo()
    ports = [port("tapa", "web"), port("tapb", "web"), port("tapc", "db")]
    info.update(answer(ports, {"web": [rule("web")], "db": [rule("db", remote="web")]},
                       {"web": {"IPv4": ["10.0.0.1", "10.0.0.2"], "IPv6": []}}),
                {"tapa", "tapb", "tapc"})
    return info


def test_a_group_change_asks_about_one_member_and_one_port_naming_it():
    info = filled()
    concerned = info.concerned({"web"})
    # one of web's members brings its rules; tapc (db names web) brings web's members
    assert len(concerned) == 2 and "tapc" in concerned
    assert concerned - {"tapc"} <= {"tapa", "tapb"}
    assert info.concerned({"db"}) == {"tapc"}
    assert info.concerned({"elsewhere"}) == set()


def test_a_port_that_changed_does_not_speak_for_a_group_it_may_have_left():
    """tapa left web (its answer will not bring web); tapb speaks for web."""
    info = filled()
    for _ in range(3):  # whatever the order of the devices kept
        assert info.concerned({"web"}, changed={"tapa"}) == {"tapb", "tapc"}
        info.devices = dict(reversed(list(info.devices.items())))


def test_answers_merge_and_what_no_port_uses_goes():
    info = filled()
    info.update(answer([port("tapc", "db")], {"db": [rule("db", remote="web")]},
                       {"web": {"IPv4": ["10.0.0.1", "10.0.0.2", "10.0.0.3"], "IPv6": []}}),
                {"tapa", "tapb", "tapc"})
    assert info.members["web"]["IPv4"][-1] == "10.0.0.3"
    assert set(info.info()["devices"]) == {"id-tapa", "id-tapb", "id-tapc"}
    info.update({}, {"tapa"})  # b and c are gone: db's rules and web's members go too
    assert set(info.devices) == {"tapa"} and set(info.rules) == {"web"}
    assert info.members == {}
