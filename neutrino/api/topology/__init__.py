"""The topology page: ``/topology``, a picture of networks, routers, ports and
floating IPs that the browser draws from the ordinary API.

This module only serves the page's static files (HTML, JS, CSS), which hold
no data: they are public, and the script reads ``/v2.0/...`` with the
viewer's own credentials, so the auth strategy and policy decide what it
shows (a member sees its project, an admin everything). The files are a fixed
list read once from the package: no name in a URL ever reaches the file
system, so no path can escape it.
"""

from __future__ import annotations

from importlib import resources

from neutrino import exceptions as exc
from neutrino.api.request import Request, Response
from neutrino.config import Opt, OptGroup, parse_bool

#: where the page is served, beside ``/v2.0``
PAGE = "topology"
GROUP = OptGroup("DEFAULT", [
    Opt("enable_topology_page", parse_bool, True,
        "Serve the network topology page at /topology."),
])
#: what may be asked for, and its content type
FILES = {
    "index.html": "text/html; charset=utf-8",
    "topology.js": "text/javascript; charset=utf-8",
    "topology.css": "text/css; charset=utf-8",
}
#: the page loads its own files and talks to its own origin only
SECURITY_HEADERS = {
    "content-security-policy": ("default-src 'none'; script-src 'self'; style-src 'self'; "
                                "connect-src 'self'; img-src 'self' data:; "
                                "frame-ancestors 'none'; base-uri 'none'; form-action 'none'"),
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    # a new version of the server serves new files: the browser asks again
    "cache-control": "no-cache",
}


def is_page(path: str) -> bool:
    """Whether the Router gives ``path`` to the page (so it needs no token);
    read as the Router reads it, ``.json`` stripped."""
    parts = [p for p in path.removesuffix(".json").split("/") if p]
    return bool(parts) and parts[0] == PAGE


class TopologyPage:
    """Serves ``FILES`` under ``/topology/``; ``/topology`` is ``index.html``."""

    def __init__(self) -> None:
        folder = resources.files(__name__)
        self.files = {name: folder.joinpath(name).read_bytes() for name in FILES}

    def dispatch(self, req: Request, rest: list[str]) -> Response:
        if req.method not in ("GET", "HEAD"):
            raise exc.HTTPMethodNotAllowed()
        if not rest and not req.path.endswith("/"):
            # the page's relative links (its files, ../v2.0) need the slash; a
            # relative Location keeps any prefix a proxy put in front
            return Response(301, headers={"location": f"{PAGE}/"})
        name = rest[0] if len(rest) == 1 else "index.html" if not rest else ""
        if name not in FILES:
            raise exc.HTTPNotFound()
        return Response(200, self.files[name],
                        headers={"content-type": FILES[name], **SECURITY_HEADERS})
