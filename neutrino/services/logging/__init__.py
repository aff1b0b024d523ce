"""The logging service plugin (``service_plugins = log``): packet logs of
security groups, their drivers, and what the L2 agents ask of them."""
