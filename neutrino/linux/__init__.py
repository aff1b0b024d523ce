"""The one seam between the agents and the host: everything that changes the
host's networking (links, namespaces, filtering, DHCP servers) is here."""
