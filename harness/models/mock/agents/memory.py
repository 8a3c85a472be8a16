"""What the simulated agent keeps between the requests of one mock session: readings of a message prefix.

A request usually repeats the previous request's messages (the same objects) and adds a
few. Everything the agent derives from its context is a `Fold`: state built by reading the
request's messages in order, where the state after message i depends only on messages
0..i. The next request reuses a fold's state up to the first position whose message is not
the very same object (`new[i] is old[i]`: the harness never mutates a logged message) and
reads on from there, rewinding what the dropped or replaced messages had written. So the
agent still knows exactly what a fresh reading of this request would give it, and nothing
else: the memory saves work, never knowledge.

Two readings depend on later messages, so they are checked again on every request:

* a truncated tool result read together with its pages (`reading.ReadableFold`): folds
  record it as `volatile` and restart from its position when it reads differently now;
* a tool result's call, looked up by id: when call ids repeat, or a result comes before its
  call, a context is not `regular` and every fold reads it from the start.

`Fold` and the folds every family uses are in `common`; here is what keeps them.
"""
from __future__ import annotations

import threading
from typing import Any, Hashable, NamedTuple

_MISSING = object()


class Ledger:
    """An undo log of a fold's writes, so its state can be rewound to any earlier position.

    `version` changes with every write that changes a value and every undo, so a fold's state at
    one version is always the same state: what is derived from it can be kept until the version moves.
    The log is one flat list, four items per write (position, target, key, old value): a
    long run makes thousands of writes, and a tuple for each would weigh twice as much.
    """

    __slots__ = ("_log", "version")

    def __init__(self) -> None:
        self._log: list[Any] = []
        self.version = 0

    def put(self, position: int, mapping: dict[Any, Any], key: Any, value: Any) -> None:
        """mapping[key] = value, written while reading message `position` (logged even when it changes
        nothing, so `retract` knows the key was written again; the version moves only on a change)."""
        old = mapping.get(key, _MISSING)
        self._log += (position, mapping, key, old)
        mapping[key] = value
        if old is not value and (type(old) is not type(value) or old != value):
            self.version += 1

    def append(self, position: int, items: list[Any], value: Any) -> None:
        """items.append(value), written while reading message `position`."""
        self._log += (position, items, None, None)
        items.append(value)
        self.version += 1

    def retract(self, position: int, keep_order: bool = True) -> bool:
        """Undo in place the writes made while reading message `position` alone, keeping those made
        after it; False, with nothing undone, when it appended to a list.

        A key it wrote that a later write overwrites keeps its current value, and the undo record of
        the first later write takes over the value from before `position`. A key it inserted cannot
        be moved in the mapping's order to where that later write would have inserted it, so with
        `keep_order` that case is refused too (for readings whose order matters)."""
        log, end = self._log, len(self._log)
        start = end
        while start and log[start - 4] >= position:
            start -= 4
        stop = start
        while stop < end and log[stop] == position:
            stop += 4
        if start == stop:  # it wrote nothing there: nothing to undo, and the state has not changed
            return True
        before: dict[tuple[int, Any], tuple[Any, Any, Any]] = {}  # (mapping, key) -> the state before `position`
        for at in range(start, stop, 4):
            if isinstance(log[at + 1], list):
                return False
            before.setdefault((id(log[at + 1]), log[at + 2]), (log[at + 1], log[at + 2], log[at + 3]))
        handed_on: dict[tuple[int, Any], int] = {}  # (mapping, key) -> its first later write
        for at in range(stop, end, 4):
            written = (id(log[at + 1]), log[at + 2])
            if written in before and written not in handed_on:
                if keep_order and before[written][2] is _MISSING:
                    return False
                handed_on[written] = at
        for written, at in handed_on.items():
            log[at + 3] = before[written][2]
        for written, (target, key, old) in before.items():
            if written in handed_on:
                continue
            if old is _MISSING:
                del target[key]
            else:
                target[key] = old
        del log[start:stop]
        self.version += 1
        return True

    def rewind(self, position: int) -> None:
        """Undo every write made while reading messages at `position` or later."""
        log = self._log
        while log and log[-4] >= position:
            old, key, target = log.pop(), log.pop(), log.pop()
            log.pop()
            if isinstance(target, list):
                target.pop()
            elif old is _MISSING:
                del target[key]
            else:
                target[key] = old
            self.version += 1


class Family(NamedTuple):
    """The task family found in a request's messages (a regular context), the first in order whose task
    statement they show: the families before it showed none there."""

    agent: Any  # the family's agent module
    messages: tuple[dict[str, Any], ...]


class Memory:
    """One session's folds, by kind and parameters; `lock` keeps concurrent requests of a session apart."""

    def __init__(self) -> None:
        self.folds: dict[Hashable, Any] = {}  # each a common.Fold: kept here, never read (common builds on this store)
        self.family: Family | None = None  # found in the session's latest request (harness.models.mock.agents._family)
        self.tools: tuple[tuple[dict[str, Any], ...], set[str]] | None = None  # the latest tool list, its names
        self.read: tuple[dict[str, Any], ...] = ()  # the messages of the session's latest request
        self.asked: dict[Hashable, None] = {}  # the folds it asked for, in order
        self.asked_before: dict[Hashable, None] = {}  # those the request before it asked for
        self.lock = threading.Lock()

