"""What the host seam raises when the host says no."""


class HostError(RuntimeError):
    """A host tool or the kernel refused a change; the message names which and why,
    so callers log it in one line rather than with a traceback."""
