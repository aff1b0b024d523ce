"""Metering labels and label rules through HTTP (/v2.0/metering/...)."""

from __future__ import annotations

import uuid

from tests.harness import ApiClient, expect_error

LABELS = "/v2.0/metering/metering-labels"
RULES = "/v2.0/metering/metering-label-rules"
LABEL_KEYS = {"id", "name", "description", "shared", "project_id", "tenant_id"}
RULE_KEYS = {"id", "metering_label_id", "direction", "excluded", "remote_ip_prefix",
             "source_ip_prefix", "destination_ip_prefix", "project_id", "tenant_id"}


def label(client: ApiClient, **attrs) -> dict:
    resp = client.post(LABELS, json={"metering_label": attrs})
    assert resp.status_code == 201, resp.text
    return resp.json()["metering_label"]


def rule(client: ApiClient, label_id: str, direction: str = "ingress", **attrs):
    return client.post(RULES, json={"metering_label_rule": {
        "metering_label_id": label_id, "direction": direction, **attrs}})


def made_rule(client: ApiClient, label_id: str, direction: str = "ingress", **attrs) -> dict:
    resp = rule(client, label_id, direction, **attrs)
    assert resp.status_code == 201, resp.text
    return resp.json()["metering_label_rule"]


def test_label_create_show_list_delete(admin, project):
    made = label(admin, name="web", description="the web tier")
    assert set(made) == LABEL_KEYS
    assert (made["name"], made["description"], made["shared"], made["project_id"],
            made["tenant_id"]) == ("web", "the web tier", False, project, project)
    assert admin.get(f"{LABELS}/{made['id']}").json()["metering_label"] == made
    listed = admin.get(LABELS, params={"project_id": project}).json()["metering_labels"]
    assert listed == [made]
    other = label(admin, name="db", shared=True)
    assert other["shared"] is True and other["description"] == ""
    by_name = admin.get(LABELS, params={"project_id": project, "name": "db"}).json()
    assert [item["id"] for item in by_name["metering_labels"]] == [other["id"]]
    shared = admin.get(LABELS, params={"project_id": project, "shared": "true"}).json()
    assert [item["id"] for item in shared["metering_labels"]] == [other["id"]]
    fields = admin.get(LABELS, params={"project_id": project, "fields": "name",
                                       "sort_key": "name", "sort_dir": "asc"}).json()
    assert fields["metering_labels"] == [{"name": "db"}, {"name": "web"}]
    assert admin.delete(f"{LABELS}/{made['id']}").status_code == 204
    for resp in (admin.get(f"{LABELS}/{made['id']}"), admin.delete(f"{LABELS}/{made['id']}")):
        expect_error(resp, 404, "MeteringLabelNotFound",
                     f"Metering label '{made['id']}' does not exist.")


def test_labels_are_not_updated(admin):
    made = label(admin, name="web")
    resp = admin.put(f"{LABELS}/{made['id']}", json={"metering_label": {"name": "x"}})
    assert resp.status_code in (400, 405), resp.text
    assert admin.get(f"{LABELS}/{made['id']}").json()["metering_label"]["name"] == "web"


def test_label_bad_input(admin):
    for body in ({"name": "x" * 256}, {"description": "x" * 1025}, {"shared": "perhaps"},
                 {"revision_number": 3}):
        resp = admin.post(LABELS, json={"metering_label": body})
        assert resp.status_code == 400, (body, resp.text)
        assert "NeutronError" in resp.json()
    assert label(admin, description="x" * 1024)["description"] == "x" * 1024


def test_policy(server, admin, project, other_project):
    member = server.client(project, roles=("member",))
    reader = server.client(project, roles=("reader",))
    stranger = server.client(other_project, roles=("member",))
    resp = member.post(LABELS, json={"metering_label": {"name": "mine"}})
    expect_error(resp, 403, "PolicyNotAuthorized")
    own, shared = label(admin, name="own"), label(admin, name="everyone", shared=True)
    other_admin = server.client(other_project, roles=("admin", "member"))
    theirs = label(other_admin, name="theirs")
    made = made_rule(admin, own["id"], remote_ip_prefix="10.0.0.0/8")
    # a reader of the project sees its own labels and the shared ones, not others'
    assert reader.get(f"{LABELS}/{own['id']}").status_code == 200
    assert reader.get(f"{LABELS}/{shared['id']}").status_code == 200
    expect_error(reader.get(f"{LABELS}/{theirs['id']}"), 404, "MeteringLabelNotFound")
    seen = {item["id"] for item in reader.get(LABELS).json()["metering_labels"]}
    assert {own["id"], shared["id"]} <= seen and theirs["id"] not in seen
    # shared labels are seen by every project; their rules only by the owner's
    assert stranger.get(f"{LABELS}/{shared['id']}").json()["metering_label"]["shared"]
    expect_error(stranger.get(f"{LABELS}/{own['id']}"), 404, "MeteringLabelNotFound")
    assert reader.get(f"{RULES}/{made['id']}").json()["metering_label_rule"] == made
    expect_error(stranger.get(f"{RULES}/{made['id']}"), 404, "MeteringLabelRuleNotFound")
    assert made["id"] not in {r["id"] for r in stranger.get(RULES).json()
                              ["metering_label_rules"]}
    # only admins create and delete, labels and rules
    expect_error(rule(member, own["id"], remote_ip_prefix="10.1.0.0/16"), 403,
                 "PolicyNotAuthorized")
    expect_error(member.delete(f"{RULES}/{made['id']}"), 403, "PolicyNotAuthorized")
    expect_error(member.delete(f"{LABELS}/{own['id']}"), 403, "PolicyNotAuthorized")
    expect_error(stranger.delete(f"{LABELS}/{own['id']}"), 404, "MeteringLabelNotFound")
    assert admin.get(f"{LABELS}/{own['id']}").status_code == 200


def test_rule_create_show_list_delete(admin, project):
    owner = label(admin)
    made = made_rule(admin, owner["id"], "egress", excluded=True,
                     remote_ip_prefix="192.168.0.0/24")
    assert set(made) == RULE_KEYS
    assert made == {**made, "metering_label_id": owner["id"], "direction": "egress",
                    "excluded": True, "remote_ip_prefix": "192.168.0.0/24",
                    "source_ip_prefix": None, "destination_ip_prefix": None,
                    "project_id": project, "tenant_id": project}
    both = made_rule(admin, owner["id"], source_ip_prefix="10.0.0.1",
                     destination_ip_prefix="203.0.113.0/24")
    assert (both["source_ip_prefix"], both["destination_ip_prefix"], both["excluded"],
            both["remote_ip_prefix"]) == ("10.0.0.1/32", "203.0.113.0/24", False, None)
    assert admin.get(f"{RULES}/{made['id']}").json()["metering_label_rule"] == made
    listed = admin.get(RULES, params={"metering_label_id": owner["id"]}).json()
    assert sorted(r["id"] for r in listed["metering_label_rules"]) == sorted(
        [made["id"], both["id"]])
    for params, wanted in (({"direction": "egress"}, [made]), ({"excluded": "false"}, [both]),
                           ({"remote_ip_prefix": "192.168.0.0/24"}, [made])):
        found = admin.get(RULES, params={"metering_label_id": owner["id"], **params}).json()
        assert found["metering_label_rules"] == wanted, params
    assert admin.delete(f"{RULES}/{made['id']}").status_code == 204
    expect_error(admin.get(f"{RULES}/{made['id']}"), 404, "MeteringLabelRuleNotFound",
                 f"Metering label rule '{made['id']}' does not exist.")
    expect_error(admin.delete(f"{RULES}/{made['id']}"), 404, "MeteringLabelRuleNotFound")
    resp = admin.put(f"{RULES}/{both['id']}", json={"metering_label_rule": {"excluded": True}})
    assert resp.status_code in (400, 405), resp.text


def test_deleting_a_label_deletes_its_rules(admin):
    owner = label(admin)
    rules = [made_rule(admin, owner["id"], remote_ip_prefix=cidr)
             for cidr in ("10.0.0.0/24", "10.0.1.0/24")]
    assert admin.delete(f"{LABELS}/{owner['id']}").status_code == 204
    for made in rules:
        expect_error(admin.get(f"{RULES}/{made['id']}"), 404, "MeteringLabelRuleNotFound")
    assert admin.get(RULES, params={"metering_label_id": owner["id"]}).json() == {
        "metering_label_rules": []}


def test_rule_bad_input(admin):
    owner = label(admin)
    missing = str(uuid.uuid4())
    expect_error(rule(admin, missing, remote_ip_prefix="10.0.0.0/24"), 404,
                 "MeteringLabelNotFound", f"Metering label '{missing}' does not exist.")
    expect_error(rule(admin, owner["id"], "sideways", remote_ip_prefix="10.0.0.0/24"), 400,
                 "HTTPBadRequest")
    expect_error(rule(admin, "not-a-uuid", remote_ip_prefix="10.0.0.0/24"), 400,
                 "HTTPBadRequest")
    resp = admin.post(RULES, json={"metering_label_rule": {"metering_label_id": owner["id"],
                                                           "remote_ip_prefix": "10.0.0.0/8"}})
    expect_error(resp, 400, "HTTPBadRequest")  # direction is required
    for bad in ("10.0.0.0/33", "nonsense", "10.0.0.1"):
        assert rule(admin, owner["id"], remote_ip_prefix=bad).status_code == 400, bad
    expect_error(rule(admin, owner["id"]), 400, "Invalid",
                 "You must define at least one of the following parameters "
                 "'remote_ip_prefix', or 'source_ip_prefix' or 'destination_ip_prefix'.")
    expect_error(rule(admin, owner["id"], remote_ip_prefix="10.0.0.0/24",
                      source_ip_prefix="10.1.0.0/24"), 400, "Invalid",
                 "Cannot use 'remote-ip-prefix' in conjunction with 'source-ip-prefix' or "
                 "'destination-ip-prefix'.")
    error = expect_error(rule(admin, owner["id"], destination_ip_prefix="10.0.0.0/40"), 400,
                         "Invalid")
    assert error["message"].startswith("destination_ip_prefix: 10.0.0.0/40 is invalid [")
    for bad in (5, ["10.0.0.0/8"], {"a": 1}, "10.0.0.0/8\x00"):
        expect_error(rule(admin, owner["id"], source_ip_prefix=bad), 400, "Invalid")
    expect_error(rule(admin, owner["id"], source_ip_prefix="10.0.0.0/8",
                      destination_ip_prefix="2001:db8::/64"), 400, "Invalid")
    expect_error(rule(admin, owner["id"], remote_ip_prefix="10.0.0.0/8", excluded="maybe"),
                 400, "InvalidInput")
    assert admin.get(RULES, params={"metering_label_id": owner["id"]}).json() == {
        "metering_label_rules": []}  # nothing half-written


def test_rule_overlap(admin):
    owner = label(admin)
    made_rule(admin, owner["id"], remote_ip_prefix="10.0.0.0/16")
    expect_error(rule(admin, owner["id"], remote_ip_prefix="10.0.5.0/24"), 409,
                 "MeteringLabelRuleOverlaps",
                 "Metering label rule with remote_ip_prefix '10.0.5.0/24' overlaps another.")
    # another direction, an excluded rule, another label, source/destination: no overlap
    made_rule(admin, owner["id"], "egress", remote_ip_prefix="10.0.5.0/24")
    made_rule(admin, owner["id"], excluded=True, remote_ip_prefix="10.0.5.0/24")
    made_rule(admin, label(admin)["id"], remote_ip_prefix="10.0.5.0/24")
    made_rule(admin, owner["id"], source_ip_prefix="10.0.5.0/24")
    made_rule(admin, owner["id"], remote_ip_prefix="2001:db8::/64")
    found = admin.get(RULES, params={"metering_label_id": owner["id"]}).json()
    assert len(found["metering_label_rules"]) == 5


def test_rule_on_a_label_of_another_project(server, admin, other_project):
    theirs = label(server.client(other_project, roles=("admin", "member")), shared=True)
    made = made_rule(admin, theirs["id"], remote_ip_prefix="10.0.0.0/8")
    assert made["project_id"] == other_project  # a rule's project is its label's


def test_bulk_create_is_all_or_nothing(admin, project):
    owner = label(admin)
    resp = admin.post(RULES, json={"metering_label_rules": [
        {"metering_label_id": owner["id"], "direction": "ingress",
         "remote_ip_prefix": "10.0.0.0/24"},
        {"metering_label_id": owner["id"], "direction": "ingress",
         "remote_ip_prefix": "10.0.0.128/25"}]})
    expect_error(resp, 409, "MeteringLabelRuleOverlaps")
    assert admin.get(RULES, params={"metering_label_id": owner["id"]}).json() == {
        "metering_label_rules": []}
    resp = admin.post(LABELS, json={"metering_labels": [{"name": "a"}, {"name": "b"}]})
    assert resp.status_code == 201, resp.text
    assert [item["name"] for item in resp.json()["metering_labels"]] == ["a", "b"]
