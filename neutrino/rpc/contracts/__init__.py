"""The agent<->server RPC contracts, one module per API, below both sides.

Each module names what the two ends must agree on: the topic, the namespace,
the version, the method names and the payloads (TypedDicts), with typed stubs
for both directions: an ``...Api`` class an agent calls the server through,
and a ``...Notifier`` class the server tells agents through. The server's
endpoints declare ``rpc_version``/``rpc_namespace`` from here, so the agents
need nothing of the server to speak to it. The wire format is Neutron's.
"""
