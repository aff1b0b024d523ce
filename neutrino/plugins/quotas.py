"""Quota limits and usage as the ``/v2.0/quotas`` API reads and writes them.

The API's controller checks policy and the request's shape; the reads and the
transactions are here, beside the plugins, so the API touches no table.
"""

from __future__ import annotations

from neutrino import exceptions as exc
from neutrino.db.engine import Database
from neutrino.db.quota import QuotaEngine


class QuotaService:
    def __init__(self, db: Database, engine: QuotaEngine):
        self.db = db
        self.engine = engine

    @property
    def defaults(self) -> dict[str, int]:
        return dict(self.engine.defaults)

    def limits(self, project_id: str) -> dict[str, int]:
        with self.db.reader() as conn:
            return self.engine.limits(conn, project_id)

    def details(self, project_id: str) -> dict[str, dict[str, int]]:
        """Limit, use and (always 0) reservations of every resource, in one read."""
        with self.db.reader() as conn:
            limits = self.engine.limits(conn, project_id)
            return {r: {"limit": limits[r], "used": self.engine.used(conn, project_id, r),
                        "reserved": 0} for r in self.engine.resources}

    def all_limits(self) -> list[dict[str, int | str]]:
        """The limits of every project that has some of its own."""
        with self.db.reader() as conn:
            return [{**self.engine.limits(conn, p), "project_id": p, "tenant_id": p}
                    for p in self.engine.projects_with_limits(conn)]

    def update(self, project_id: str, values: dict[str, int], force: bool) -> dict[str, int]:
        """Set limits; unless ``force``, none below what the project uses (400)."""
        def work(conn) -> dict[str, int]:
            if not force:
                for resource, limit in values.items():
                    if limit < 0:
                        continue  # unlimited
                    used = self.engine.used(conn, project_id, resource)
                    if limit < used:
                        raise exc.HTTPBadRequest(
                            msg=f"Quota limit {limit} for {resource} must be greater "
                                f"than or equal to already used {used}")
            self.engine.set_limits(conn, project_id, values)
            return self.engine.limits(conn, project_id)

        return self.db.write(work)

    def reset(self, project_id: str) -> None:
        self.db.write(lambda conn: self.engine.reset(conn, project_id))
