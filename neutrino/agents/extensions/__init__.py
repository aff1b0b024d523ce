"""Agent extensions: features that plug into an agent's sync without touching
its core (``[agent] extensions``, Neutron's names).

``api`` is what an extension implements, ``manager`` finds the configured ones
and calls them so that one failing never stops the agent's own work, and each
other module here is an extension of neutrino's own (``port_forwarding``).
"""
