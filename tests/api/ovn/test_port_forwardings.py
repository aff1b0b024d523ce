"""tests/api/test_port_forwardings.py, with ML2 writing into OVN (conftest.py)."""

from tests.api.test_port_forwardings import *  # noqa: F403
