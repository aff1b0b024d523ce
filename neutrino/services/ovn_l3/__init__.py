"""``ovn-router``: routers realised by OVN instead of L3 agents."""
