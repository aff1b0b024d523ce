"""ML2/OVN: the ``ovn`` mechanism driver and what keeps OVN's Northbound database
in step with neutrino's."""
