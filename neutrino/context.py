"""Who is asking: the request context handed to plugins."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

DEFAULT_PROJECT_ID = "a8e5dd4b6b2f4cf4a3ae7ad1b0e3b5f0"


@dataclass(frozen=True)
class Context:
    project_id: str | None
    user_id: str | None = None
    roles: frozenset[str] = field(default_factory=frozenset)
    is_admin: bool = False
    request_id: str = ""
    user_domain_id: str | None = None
    # noauth: the caller is trusted to name any project in a body.
    project_from_body: bool = False
    project_name: str | None = None
    user_name: str | None = None
    project_domain_id: str | None = None
    system_scope: str | None = None  # "all" for a system-scoped token

    def with_admin(self, is_admin: bool) -> Context:
        return replace(self, is_admin=is_admin)

    @property
    def tenant_id(self) -> str | None:
        return self.project_id

    @classmethod
    def admin(cls, request_id: str = "") -> Context:
        return cls(project_id=None, roles=frozenset({"admin"}), is_admin=True,
                   request_id=request_id)
