"""Errors the harness reports to users; each says what was wrong and where."""


class CtxbenchError(Exception):
    """Base class for errors that the CLI reports without a traceback (exit code 2)."""


class ConfigError(CtxbenchError):
    """A configuration value is unknown, of the wrong type or impossible."""


class TaskFileError(CtxbenchError):
    """A task file or suite row is malformed."""


class ReplayMismatch(CtxbenchError):
    """A view rebuilt from the event log differs from the one that was sent."""
