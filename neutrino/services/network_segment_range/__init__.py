"""The network segment ranges' service plugin (``service_plugins = network_segment_range``)."""
