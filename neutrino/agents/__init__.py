"""Agents: processes on each host that make it match the server's desired state."""
