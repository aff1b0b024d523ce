"""tests/api/test_floatingips.py, with ML2 writing into OVN (conftest.py)."""

from tests.api.test_floatingips import *  # noqa: F403
