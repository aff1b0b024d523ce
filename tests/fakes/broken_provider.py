"""A driver module that cannot be imported (its library is missing), for tests."""

raise ImportError("needs the vendor library, which is not installed")
