"""tests/api/test_port_extras.py, with ML2 writing into OVN (conftest.py)."""

from tests.api.test_port_extras import *  # noqa: F403
