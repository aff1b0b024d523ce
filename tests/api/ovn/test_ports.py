"""tests/api/test_ports.py, with ML2 writing into OVN (conftest.py)."""

from tests.api.test_ports import *  # noqa: F403
