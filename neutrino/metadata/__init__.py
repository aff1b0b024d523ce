"""The metadata path: an instance's ``http://169.254.169.254/...`` to Nova.

Three hops, as in Neutron:

1. a small proxy (``neutrino.metadata.proxy``) in the namespace that answers
   169.254.169.254 for the instance (the DHCP namespace of an isolated network,
   or a router's namespace) adds who asked (``X-Forwarded-For``) and where
   (``X-Neutron-Network-ID`` or ``X-Neutron-Router-ID``), and passes the request
   over a UNIX socket to
2. ``neutrino-metadata-agent`` (``neutrino.agents.metadata``), which asks the
   server over the bus which port has that address there
   (``neutrino.metadata.handler``), and forwards the request to
3. Nova's metadata API with the port's device (the instance) and project, and
   a signature of the instance id that proves the request came through us.

``neutrino.metadata.http`` holds the bit of HTTP/1.1 both hops speak.
"""
