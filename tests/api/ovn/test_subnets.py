"""tests/api/test_subnets.py, with ML2 writing into OVN (conftest.py)."""

from tests.api.test_subnets import *  # noqa: F403
