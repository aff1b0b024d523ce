"""tests/api/test_networks.py, with ML2 writing into OVN (conftest.py)."""

from tests.api.test_networks import *  # noqa: F403
