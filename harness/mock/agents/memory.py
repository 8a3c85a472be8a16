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

* a truncated tool result read together with its pages (`reading.readable`): folds record
  it as `volatile` and restart from its position when it reads differently now;
* a tool result's call, looked up by id: when call ids repeat, or a result comes before its
  call, a context is not `regular` and every fold reads it from the start.
"""
from __future__ import annotations

import operator
import threading
from typing import TYPE_CHECKING, Any, Callable, Hashable

if TYPE_CHECKING:
    from harness.mock.agents.common import Visible

_MISSING = object()
ALL_ROLES = ("system", "user", "assistant", "tool")


class Ledger:
    """An undo log of a fold's writes, so its state can be rewound to any earlier position."""

    __slots__ = ("_log",)

    def __init__(self) -> None:
        self._log: list[tuple[int, Any, Any, Any]] = []

    def put(self, position: int, mapping: dict[Any, Any], key: Any, value: Any) -> None:
        """mapping[key] = value, written while reading message `position`."""
        self._log.append((position, mapping, key, mapping.get(key, _MISSING)))
        mapping[key] = value

    def append(self, position: int, items: list[Any], value: Any) -> None:
        """items.append(value), written while reading message `position`."""
        self._log.append((position, items, None, None))
        items.append(value)

    def rewind(self, position: int) -> None:
        """Undo every write made while reading messages at `position` or later."""
        log = self._log
        while log and log[-1][0] >= position:
            _, target, key, old = log.pop()
            if isinstance(target, list):
                target.pop()
            elif old is _MISSING:
                del target[key]
            else:
                target[key] = old


class Fold:
    """State read from a request's messages in order; subclasses say which texts they read and how.

    `roles`: the roles whose messages it reads; `readable`: read a truncated tool result as
    its visible pages joined (see `reading.readable`) instead of as sent. Subclasses write
    their state only through `self.ledger` in `absorb`.
    """

    roles: tuple[str, ...] = ALL_ROLES
    readable = False
    needs_regular = True  # False: what it reads of a message depends on that message alone

    def __init__(self) -> None:
        self.ledger = Ledger()
        self.messages: tuple[dict[str, Any], ...] = ()  # the messages read so far
        self.volatile: dict[int, str] = {}  # position -> text read there that depends on later messages
        self.regular = True  # whether the messages were read as a regular context

    def text(self, visible: Visible, message: dict[str, Any]) -> tuple[str | None, bool]:
        """What this fold reads of one message (None: nothing), and whether that depends on later messages."""
        if message.get("role") not in self.roles:
            return None, False
        if self.readable:
            from harness.mock.agents.reading import readable

            return readable(visible, message)
        from harness.mock.agents.common import _content

        return _content(message), False

    def absorb(self, position: int, text: str, message: dict[str, Any]) -> None:
        """Write what `text`, read from `message` at `position`, adds to the state."""
        raise NotImplementedError

    def sync(self, visible: Visible) -> None:
        """Bring the state up to this request's messages, reading only what it has not read."""
        messages = visible.messages
        start = 0
        if not self.needs_regular or (self.regular and visible.regular):
            start = visible.shared_prefix(self.messages)
            for position, text in self.volatile.items():
                if position >= start:
                    break
                if self.text(visible, messages[position])[0] != text:
                    start = position
                    break
        self.ledger.rewind(start)
        for position in [p for p in self.volatile if p >= start]:
            del self.volatile[position]
        for position in range(start, len(messages)):
            text, volatile = self.text(visible, messages[position])
            if text is None:
                continue
            if volatile:
                self.volatile[position] = text
            self.absorb(position, text, messages[position])
        self.messages = visible.frozen
        if self.needs_regular:
            self.regular = visible.regular


def shared_prefix(old: tuple[dict[str, Any], ...], new: list[dict[str, Any]]) -> int:
    """How many leading messages of `new` are the very same objects as in `old`."""
    same = list(map(operator.is_, old, new))
    try:
        return same.index(False)
    except ValueError:
        return len(same)


class Memory:
    """One session's folds, by kind and parameters; `lock` keeps concurrent requests of a session apart."""

    def __init__(self) -> None:
        self.folds: dict[Hashable, Fold] = {}
        self.lock = threading.Lock()

    def fold(self, key: Hashable, build: Callable[[], Fold]) -> Fold:
        found = self.folds.get(key)
        if found is None:
            found = self.folds[key] = build()
        return found
