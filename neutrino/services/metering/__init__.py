"""The metering service plugin (``service_plugins = metering``)."""
