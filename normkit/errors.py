"""Exceptions shared by every normkit backend."""


class BackendUnavailable(RuntimeError):
    """A backend was asked for that cannot run here; the message says why (see ``normkit.backends()``)."""
