"""Errors the harness reports to users; each says what was wrong and where."""
from __future__ import annotations

from typing import Iterable


class CtxbenchError(Exception):
    """Base class for errors that the CLI reports without a traceback (exit code 2)."""


class ConfigError(CtxbenchError):
    """A configuration value is unknown, of the wrong type or impossible."""


class TaskFileError(CtxbenchError):
    """A task file or suite row is malformed."""


class StrategyFailed(CtxbenchError):
    """A strategy gave up on its own terms (it cannot fit the window, it refuses to condense): the run ends
    `strategy_failed`, the strategy's failure, not a fault of the harness or the provider (`error`), and
    `--resume` does not run it again. A strategy, a plug-in or an adapter raises it with the reason."""


class ReplayMismatch(CtxbenchError):
    """A view rebuilt from the event log differs from the one that was sent."""


def did_you_mean(value: str, choices: Iterable[str]) -> str:
    """" (did you mean 'a' or 'b'?)" naming the choices closest to a mistyped `value`, else ""."""
    import difflib

    close = difflib.get_close_matches(value, list(choices), n=3, cutoff=0.6)
    return f" (did you mean {' or '.join(map(repr, close))}?)" if close else ""
