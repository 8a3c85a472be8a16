"""Contained failures: whatever a strategy's or a task's code raises ends that run only.

The runner calls a run's strategy and environment through `Guarded`, so an exception names the hook or
the task method it came from (`RunCrash`), and `contained` turns any of it into the run's error. Like
pytest's runner, every BaseException is contained (SystemExit, GeneratorExit, a library's own) except
KeyboardInterrupt: a Ctrl-C raises it at whatever line runs, so it cannot be told from code that raises
it, and it stops the invocation.
"""
from __future__ import annotations

from functools import partial
from typing import Any, Callable


class RunCrash(Exception):
    """Code a run called (`where`: e.g. "strategy none's before_request") raised `error`."""

    def __init__(self, where: str, error: BaseException):
        super().__init__(f"{type(error).__name__} in {where}: {error}")
        self.where = where
        self.error = error


def contained(error: BaseException) -> BaseException:
    """The error a run ends on: the original of a RunCrash; a KeyboardInterrupt is raised again."""
    if isinstance(error, KeyboardInterrupt):
        raise error
    return error.error if isinstance(error, RunCrash) else error


class Guarded:
    """`target` whose method calls raise RunCrash naming `owner` and the method; other attributes as they are."""

    def __init__(self, target: Any, owner: str):
        self._target = target
        self._owner = owner
        self._readers: dict[str, Callable[[], Any]] = {}  # name -> its guarded read, made once (states are read often)

    def __getattr__(self, name: str) -> Any:
        read = self._readers.get(name)
        if read is None:
            read = self._readers[name] = guard(f"{self._owner}'s {name}", partial(getattr, self._target, name))
        value = read()
        if not callable(value):
            return value  # a state (e.g. `submitted`): read afresh each time

        guarded = guard(f"{self._owner}'s {name}", value)
        setattr(self, name, guarded)  # found here from now on: one lookup per method per run
        return guarded


def guard(where: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """`fn`, whatever it raises (but a KeyboardInterrupt) raised again as a RunCrash naming `where`: one frame
    around each call, as `Guarded` calls every hook through it."""
    def guarded(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except (KeyboardInterrupt, RunCrash):
            raise
        except BaseException as exc:
            raise RunCrash(where, exc) from exc

    return guarded


def guarded_call(where: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """`fn(*args, **kwargs)` through `guard`: for the calls a run makes once (building its task and strategy)."""
    return guard(where, fn)(*args, **kwargs)
