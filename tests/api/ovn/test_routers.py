"""tests/api/test_routers.py, with ML2 writing into OVN (conftest.py)."""

from tests.api.test_routers import *  # noqa: F403
