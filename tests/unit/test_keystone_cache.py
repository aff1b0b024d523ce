"""The keystone token cache and token parsing (keystone itself: tests/functional)."""

from neutrino.api.keystone import TokenCache, TokenInfo

BODY = {"token": {
    "expires_at": "2030-01-01T00:00:00.000000Z",
    "user": {"id": "u1", "name": "alice", "domain": {"id": "default"}},
    "project": {"id": "p1", "name": "alpha", "domain": {"id": "default"}},
    "roles": [{"id": "r1", "name": "Member"}, {"id": "r2", "name": "reader"}],
}}


def info(expires_at: float = 1e12) -> TokenInfo:
    parsed = TokenInfo.parse(BODY)
    return TokenInfo(**{**parsed.__dict__, "expires_at": expires_at})


def test_parse_takes_identity_scope_and_lowercased_roles():
    parsed = TokenInfo.parse(BODY)
    assert (parsed.user_id, parsed.user_name, parsed.project_id, parsed.project_name) == (
        "u1", "alice", "p1", "alpha")
    assert parsed.roles == {"member", "reader"}
    assert parsed.system_scope is None
    system = TokenInfo.parse({"token": {**BODY["token"], "project": None,
                                        "system": {"all": True}}})
    assert system.project_id is None and system.system_scope == "all"


def test_cache_keeps_a_token_for_its_lifetime_only():
    now = [1000.0]
    cache = TokenCache(lifetime=5, size=10, clock=lambda: now[0])
    cache.put("tok", info())
    assert cache.get("tok") is not None
    now[0] += 4.9
    assert cache.get("tok") is not None
    now[0] += 0.2
    assert cache.get("tok") is None


def test_cache_never_outlives_the_token():
    now = [1000.0]
    cache = TokenCache(lifetime=300, size=10, clock=lambda: now[0])
    cache.put("tok", info(expires_at=1002.0))
    now[0] = 1002.5
    assert cache.get("tok") is None


def test_cache_is_bounded_and_can_be_off():
    cache = TokenCache(lifetime=300, size=2)
    for name in ("a", "b", "c"):
        cache.put(name, info())
    assert cache.get("a") is None and cache.get("c") is not None
    off = TokenCache(lifetime=-1, size=2)
    off.put("a", info())
    assert off.get("a") is None
