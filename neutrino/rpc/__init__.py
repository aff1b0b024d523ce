"""The message bus: RPC between the server and its agents.

``transport`` moves bytes (in-process ``memory://`` or RabbitMQ
``rabbit://``); ``envelope`` says what the bytes hold; ``client`` calls, casts
and fans out; ``server`` dispatches to versioned endpoint objects. Nothing here
imports a plugin: plugins and agents hand their endpoints to a server.
"""
