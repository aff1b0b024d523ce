"""tests/api/test_address_groups.py, with ML2 writing into OVN (conftest.py)."""

from tests.api.test_address_groups import *  # noqa: F403
