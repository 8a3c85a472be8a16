"""What every simulated agent shares: a reading of the visible context and seeded knobs."""
from __future__ import annotations

import random
import re
from abc import ABC, abstractmethod
from dataclasses import dataclass
from itertools import compress
from operator import is_not
from typing import Any, Callable, Hashable, TypeVar

from harness.core.config import build_dataclass, require
from harness.core.errors import ConfigError
from harness.models.mock.agents.answers import answers
from harness.models.mock.agents.memo import Pattern, Readings, arguments
from harness.models.mock.agents.memory import Ledger, Memory
from harness.models.mock.prefix import shared_prefix
from harness.core.fast_json import sorted_json
from harness.core.tokens import stable_hash

ALL_ROLES = ("system", "user", "assistant", "tool")
# The roles of what the agent was told: the user's messages and the system prompt, which a gateway that
# compacts fills with its summary (litellm's compact_20260112 puts it in front of the system prompt), so a
# fold reading what the user said reads the system prompt too.
TOLD = ("system", "user")


@dataclass(frozen=True)
class Knobs:
    """Seeded imperfections of the simulated agent (a careless agent is a set of knobs)."""

    narrate: float = 0.5  # chance it restates a fact it found in its reply text
    reread_budget: int = 2  # times it fetches a lost or unreadable fact again before giving up
    # It saves notes and condenses at the k-th context warning of a reset cycle (the warnings it has
    # been shown since its last reset notice; None: it never condenses). 1, the first: the strategy's
    # warning_thresholds decide when it condenses (seed 000: the warnings are advisory
    # and the agent decides).
    reset_at_warning: int | None = 1
    notes_completeness: float = 1.0  # chance each fact it holds makes it into its notes before a reset

    def __post_init__(self) -> None:
        require(self.reset_at_warning is None or self.reset_at_warning >= 1,
                f"reset_at_warning must be 1 or more (the k-th warning of a reset cycle) or null, "
                f"got {self.reset_at_warning}")
        require(0.0 <= self.notes_completeness <= 1.0,
                f"notes_completeness must be in [0, 1], got {self.notes_completeness}")
        require(0.0 <= self.narrate <= 1.0, f"narrate must be in [0, 1], got {self.narrate}")
        require(self.reread_budget >= 0, f"reread_budget must be 0 or more, got {self.reread_budget}")


def build_knobs(data: dict[str, Any] | None, where: str = "mock knobs") -> Knobs:
    if isinstance(data, dict) and "reset_stage" in data:  # the knob reset_at_warning replaced
        raise ConfigError(f"{where}: 'reset_stage' was replaced by 'reset_at_warning': the agent "
                          "now condenses at the k-th context warning of a reset cycle, so the strategy's "
                          "warning_thresholds decide when; set reset_at_warning (1 = the first warning, the "
                          "default; null = never)")
    return build_dataclass(Knobs, data or {}, where)


@dataclass(frozen=True)
class Writer:
    """Who writes the facts it holds down, and the chance each one makes it: the agent's notes
    (`notes_completeness`) or the mock summarizer's summary (its `summary_completeness`).

    A draw is a function of the run seed, the writer and the fact alone (ours): a fact a writer
    leaves out once it leaves out every time, as the fact's salience to that writer does not change
    between notes or summaries; so rewriting a summary of a summary does not compound the loss, and
    the agent's and the summarizer's draws are independent of each other.
    """

    name: str
    completeness: float


def notes_writer(knobs: Knobs) -> Writer:
    """The agent writing its own notes before a reset."""
    return Writer("notes", knobs.notes_completeness)


class Fold(ABC):
    """State read from a request's messages in order; subclasses say which texts they read and how.

    `roles`: the roles whose messages it reads. Subclasses write their state only through
    `self.ledger`, in `absorb`; see `harness.models.mock.agents.memory` for how it is kept. A tool
    result is read only when it answers its visible call (`answered`), which in a regular
    context comes before it: a fold reading results needs a regular context.
    """

    roles: tuple[str, ...] = ALL_ROLES
    needs_regular = True  # False: what it reads of a message depends on that message alone
    writes_blindly = False  # True: what `absorb` writes depends on its text alone, never on the state so far
    order_free = False  # True: nothing reads its mappings in order, only by key

    def __init__(self) -> None:
        self.ledger = Ledger()
        self.messages: tuple[dict[str, Any], ...] = ()  # the messages read so far
        self.volatile: dict[int, str] = {}  # position -> text read there that depends on later messages
        self.regular = True  # whether the messages were read as a regular context
        self._derived: dict[Hashable, tuple[int, Any]] = {}

    def text(self, visible: Visible, message: dict[str, Any]) -> tuple[str | None, bool]:
        """What this fold reads of one message (None: nothing), and whether that depends on later messages."""
        role = message.get("role")
        if role not in self.roles or (role == "tool" and not answered(visible, message)):
            return None, False
        return _content(message), False

    @abstractmethod
    def absorb(self, position: int, text: str, message: dict[str, Any]) -> None:
        """Write what `text`, read from `message` at `position`, adds to the state."""

    def derived(self, key: Hashable, compute: Callable[[Any], Any]) -> Any:
        """`compute(previous)` from this fold's state, worked out again only once the state has changed;
        `previous` is what it gave before (None at first), which it may extend once it has checked it."""
        kept = self._derived.get(key)
        if kept is None or kept[0] != self.ledger.version:
            kept = self._derived[key] = (self.ledger.version, compute(kept[1] if kept else None))
        return kept[1]

    def effect(self, text: str) -> Any:
        """What `absorb` takes from a text: texts of equal effect (None: nothing) write the same."""
        return text

    def alike(self, visible: Visible, position: int, old: dict[str, Any], new: dict[str, Any]) -> bool:
        """Whether `new` in place of `old` at `position` leaves the state as it is.

        Asked only in regular contexts for folds that need one. There a result's call comes before it, and
        a message of the same shape keeps it, so the two readings are compared; a fold whose reading of a
        message depends on later messages knows better (`ReadableFold`).
        """
        if self.needs_regular and not same_shape(old, new):
            return False
        return self.same_effect(self.text(visible, old)[0], self.text(visible, new)[0])

    def retracted(self, visible: Visible, position: int, old: dict[str, Any], new: dict[str, Any]) -> bool:
        """Whether the state now reads as if `new` had been read in place of `old` at `position`, without
        reading the messages after it again: when `new` writes nothing (a masked or cleared result) and
        what `old` wrote is undone in place (`Ledger.retract`). Only for folds that write blindly: a
        later message's writes are then the same whatever `old` wrote."""
        if not self.writes_blindly or position in self.volatile or not same_shape(old, new):
            return False
        text, volatile = self.text(visible, new)
        if volatile or (text is not None and self.effect(text) is not None):
            return False
        return self.ledger.retract(position, keep_order=not self.order_free)

    def same_effect(self, old_text: str | None, new_text: str | None) -> bool:
        if old_text == new_text:
            return True
        old_effect = None if old_text is None else self.effect(old_text)
        new_effect = None if new_text is None else self.effect(new_text)
        return old_effect == new_effect

    def sync(self, visible: Visible) -> None:
        """Bring the state up to this request's messages, reading only what it has not read."""
        messages = visible.messages
        start = 0
        if not self.needs_regular or (self.regular and visible.regular):
            start = self._unchanged_through(visible, visible.shared_prefix(self.messages))
            for position, text in self.volatile.items():
                if position >= start:
                    break
                if self.text(visible, messages[position])[0] != text:
                    start = position
                    break
        if start < len(self.messages):  # some of what it read is read again: undo it first
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

    def _unchanged_through(self, visible: Visible, start: int) -> int:
        """How far the state still holds when messages were replaced in place (a masked or cleared
        result) by ones it reads alike; the messages after them are the very objects it read."""
        old = self.messages
        if start == len(old) or len(visible.messages) < len(old):
            return start
        for position in visible.replaced(old):
            before, after = old[position], visible.messages[position]
            if not (self.alike(visible, position, before, after) or self.retracted(visible, position, before, after)):
                return position
        return len(old)


F = TypeVar("F", bound=Fold)


class Exchange:
    """One tool call the agent can still see, with its result if that is visible too."""

    __slots__ = ("call_id", "name", "args", "position", "_results", "_result_key", "_args_text")

    def __init__(self, call_id: str, name: str, args: dict[str, Any], position: int,
                 results: dict[Any, str], result_key: Any):
        self.call_id = call_id
        self.name = name
        self.args = args
        self.position = position  # index of the assistant message that made the call
        self._results = results  # the latest visible result of each call id, kept by Calls
        self._result_key = result_key
        self._args_text: str | None = None

    @property
    def result(self) -> str | None:
        return self._results.get(self._result_key)

    @property
    def args_text(self) -> str:
        """The arguments as sorted JSON, to compare calls by (worked out once: the call outlives its request)."""
        if self._args_text is None:
            self._args_text = sorted_json(self.args)
        return self._args_text


class Calls(Fold):
    """The tool calls visible, in order, with the latest visible result of each call id.

    A context is regular when no call id repeats and no result comes before its call: then
    what a tool result reads as (its call, its content) is fixed by the messages up to it.
    """

    needs_regular = False  # what it reads of message i depends on message i alone

    def __init__(self) -> None:
        super().__init__()
        self.exchanges: list[Exchange] = []
        self.by_name: dict[str, list[Exchange]] = {}
        self.by_id: dict[str, Exchange] = {}  # the latest call with each id
        self.by_arg: dict[tuple[str, str, Any], list[Exchange]] = {}  # (name, argument, value) -> calls
        self.results: dict[Any, str] = {}
        self.seen: dict[Any, str] = {}  # ids of calls and results read: "call" or "result"
        self.irregular: dict[str, int] = {"count": 0}

    def text(self, visible: Visible, message: dict[str, Any]) -> tuple[str | None, bool]:
        return "", False  # absorb reads the message itself

    def alike(self, visible: Visible, position: int, old: dict[str, Any], new: dict[str, Any]) -> bool:
        """Another rendering of a tool result changes only that call's result: set here in place, as
        in a regular context no later message writes it (the ledger's undo of it stays right)."""
        if not same_shape(old, new):
            return False
        if new.get("role") != "tool" or _content(old) == _content(new):
            return True
        if self.irregular["count"]:
            return False
        key = new.get("tool_call_id")
        self.results[key] = self._answer(key, _content(new))
        self.ledger.version += 1  # a change of state like any other: what was derived from it is stale
        return True

    def _answer(self, key: Any, content: str) -> str | None:
        """The content as the result of the latest call read with this id; None when it answers no call read
        so far (a result counts only for the call it answers)."""
        exchange = self.by_id.get(key)
        return content if exchange is not None and answers(exchange.name, exchange.args, content) else None

    def absorb(self, position: int, text: str, message: dict[str, Any]) -> None:
        put = self.ledger.put
        if message.get("role") == "tool":
            key = message.get("tool_call_id")
            if self.seen.get(key) == "result":  # a repeated result
                put(position, self.irregular, "count", self.irregular["count"] + 1)
            put(position, self.seen, key, "result")
            put(position, self.results, key, self._answer(key, _content(message)))
        for call in message.get("tool_calls") or ():
            function = call.get("function", {})
            key = call.get("id")
            if key in self.seen:  # a repeated call id, or a result that came before its call
                put(position, self.irregular, "count", self.irregular["count"] + 1)
            put(position, self.seen, key, "call")
            exchange = Exchange(call.get("id", ""), function.get("name", ""),
                                arguments(function.get("arguments") or "{}"), position, self.results, key)
            self.ledger.append(position, self.exchanges, exchange)
            self.ledger.append(position, self.by_name.setdefault(exchange.name, []), exchange)
            put(position, self.by_id, exchange.call_id, exchange)
            for argument, value in exchange.args.items():
                try:
                    calls = self.by_arg.setdefault((exchange.name, argument, value), [])
                except TypeError:  # a value that is no key (a list, an object): looked up by a scan (calls_with)
                    continue
                self.ledger.append(position, calls, exchange)


class Texts(Fold):
    """Contents of the messages with some roles, in order, tool results as sent (for the summarizer, which
    summarizes what it is shown and answers no call)."""

    needs_regular = False

    def __init__(self, roles: tuple[str, ...]) -> None:
        super().__init__()
        self.roles = roles
        self.texts: list[str] = []

    def text(self, visible: Visible, message: dict[str, Any]) -> tuple[str | None, bool]:
        return (_content(message) if message.get("role") in self.roles else None), False

    def absorb(self, position: int, text: str, message: dict[str, Any]) -> None:
        self.ledger.append(position, self.texts, text)


class FirstMatch(Fold):
    """The first match of a pattern in the messages with some roles."""

    def __init__(self, pattern: Pattern, roles: tuple[str, ...]) -> None:
        super().__init__()
        self.pattern = pattern
        self.roles = roles
        self.needs_regular = "tool" in roles  # a result is read by its call
        self.found: dict[str, re.Match[str]] = {}

    def effect(self, text: str) -> Any:
        return text if self.pattern.search(text) else None

    def absorb(self, position: int, text: str, message: dict[str, Any]) -> None:
        if not self.found:
            match = self.pattern.search(text)
            if match:
                self.ledger.put(position, self.found, "match", match)


class Found(Fold):
    """Every distinct findall() item of a pattern in the messages with some roles, in order found."""

    writes_blindly = True  # every item is put as found; one found before keeps its place in the order

    def __init__(self, pattern: Pattern, roles: tuple[str, ...]) -> None:
        super().__init__()
        self.pattern = pattern
        self.roles = roles
        self.needs_regular = "tool" in roles  # a result is read by its call
        self.items: dict[Any, None] = {}

    def effect(self, text: str) -> Any:
        return self.pattern.findall(text) or None

    def absorb(self, position: int, text: str, message: dict[str, Any]) -> None:
        for item in self.pattern.findall(text):
            self.ledger.put(position, self.items, item, None)


# The first random() of a generator seeded with the stable hash of a draw's key (the run seed and the key's
# strings), by that key: a pure function of it, memoized like the agent's other readings (a writer's notes draw
# each fact again on every request that writes them; seeding the Mersenne Twister from a string costs ~4 us, and
# the hash's canonical JSON and digest ~3 us more, so the memo is keyed by the key itself).
_first_draws = Readings(lambda key: random.Random(stable_hash(list(key))).random())


class Visible:
    """The request as the agent sees it: nothing more.

    Readings of the context are folds kept in `memory` (one per mock session; a fresh one
    when None) and brought up to this request's messages when first asked for.
    """

    def __init__(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *, seed: int, knobs: Knobs,
                 memory: Memory | None = None, writer: Writer | None = None):
        self.messages = messages
        self.frozen = tuple(messages)  # what the folds remember having read
        self.seed = seed
        self.knobs = knobs
        self._writer = writer  # who writes `notes()` over this context (None: the agent, see `writer`)
        self.memory = memory or Memory()
        self.tool_names = _tool_names(self.memory, tools)  # shared with the memory: read-only
        self._synced: dict[Hashable, None] = {}  # the folds asked for and read from this request's messages, in order
        self._read: set[Hashable] = set()  # folds read along from this request's messages before they were asked for
        self._prefixes: dict[int, tuple[tuple[dict[str, Any], ...], int]] = {}
        self._replaced: dict[int, tuple[tuple[dict[str, Any], ...], list[int]]] = {}
        self.answer_checks: dict[int, bool] = {}  # id of a tool message read this request -> whether it answers its call
        self._calls = self.fold(Calls)
        self.regular = self._calls.irregular["count"] == 0
        self._read_along()

    def fold(self, kind: type[F], *params: Hashable) -> F:
        """The fold `kind(*params)` as read from exactly this request's messages."""
        key = (kind, *params)
        found = self.memory.folds.get(key)
        if found is None:
            found = self.memory.folds[key] = kind(*params)
        if key not in self._synced:
            if key not in self._read:
                found.sync(self)
            self._synced[key] = None
        return found  # type: ignore[return-value]

    def _read_along(self) -> None:
        """Bring the folds the session's previous request read up to this request together, in one pass over the
        messages appended since, when it holds all of that request's messages (ours: the common
        request, the previous one's messages and two more; each fold finding that out and walking the new messages on
        its own cost more than reading them). Only folds asked for by the last two requests (so they read exactly the
        last one's messages, and are asked for steadily: not those a first request asks of every family, nor those asked
        every other request, which would be read for nothing) and that last read those very messages (checked, not
        assumed), in as regular a context as this one when they need one, holding no reading that later messages change;
        the others sync when asked, as every fold does when messages were dropped or replaced. A fold reads nothing of a
        message whose role is not one of its `roles` (Calls, which reads every message, has been read first, alone: what
        other folds read of a result depends on the calls)."""
        memory = self.memory
        old, asked, before = memory.read, memory.asked, memory.asked_before
        memory.read, memory.asked, memory.asked_before = self.frozen, self._synced, asked  # filled as it asks
        if not asked or not before or self.shared_prefix(old) != len(old):
            return
        folds = {}
        for key in asked:
            fold = memory.folds[key]
            if (key in before and key not in self._synced and fold.messages is old and not fold.volatile
                    and (not fold.needs_regular or (fold.regular and self.regular))):
                folds[key] = fold
        messages = self.messages
        for position in range(len(old), len(messages)):
            message = messages[position]
            role = message.get("role")
            for fold in folds.values():
                if role in fold.roles:
                    text, volatile = fold.text(self, message)
                    if text is not None:
                        if volatile:
                            fold.volatile[position] = text
                        fold.absorb(position, text, message)
        for fold in folds.values():
            fold.messages = self.frozen
            if fold.needs_regular:
                fold.regular = self.regular
        self._read.update(folds)

    def shared_prefix(self, old: tuple[dict[str, Any], ...]) -> int:
        """How many leading messages are the very objects of `old` (folds mostly share one `old`)."""
        known = self._prefixes.get(id(old))
        if known is None or known[0] is not old:
            known = self._prefixes[id(old)] = (old, shared_prefix(old, self.frozen))  # two tuples: no copies
        return known[1]

    def replaced(self, old: tuple[dict[str, Any], ...]) -> list[int]:
        """Positions after the shared prefix, within both `old` and this request, whose objects differ."""
        known = self._replaced.get(id(old))
        if known is None or known[0] is not old:
            start, end = self.shared_prefix(old), min(len(old), len(self.messages))
            changed = list(compress(range(start, end), map(is_not, old[start:end], self.messages[start:end])))
            known = self._replaced[id(old)] = (old, changed)
        return known[1]

    def derived(self, key: Hashable, compute: Callable[[], Any]) -> Any:
        """`compute()` from the visible calls and results alone, worked out again only once they have changed
        (several steps of one request ask for the same list)."""
        return self._calls.derived(key, lambda _: compute())

    @property
    def exchanges(self) -> list[Exchange]:
        """Every visible tool call in order (shared with the memory: read-only)."""
        return self._calls.exchanges

    def calls(self, name: str) -> list[Exchange]:
        """The visible calls of one tool, in order (shared with the memory: read-only)."""
        return self._calls.by_name.get(name, [])

    def calls_with(self, name: str, argument: str, value: Any) -> list[Exchange]:
        """The visible calls of one tool whose `argument` equals `value`, in order (read-only)."""
        if _hashable(value):
            return self._calls.by_arg.get((name, argument, value), [])
        return [e for e in self.calls(name) if e.args.get(argument) == value]

    def accepted_calls(self, name: str, argument: str, value: Any, refused: str) -> list[Exchange]:
        """The visible calls of one tool with `argument` equal to `value` whose result, when visible,
        does not start with `refused` (the tool's refusal), in order."""
        return [e for e in self.calls_with(name, argument, value) if not (e.result or "").startswith(refused)]

    def exchange(self, call_id: Any) -> Exchange | None:
        """The latest visible call with this id."""
        return self._calls.by_id.get(call_id)

    def first(self, pattern: Pattern, roles: tuple[str, ...] = ALL_ROLES) -> re.Match[str] | None:
        """The first match of `pattern` in the visible messages with these roles."""
        return self.fold(FirstMatch, pattern, roles).found.get("match")

    def found(self, pattern: Pattern, roles: tuple[str, ...] = ALL_ROLES) -> dict[Any, None]:
        """The distinct findall() items of `pattern` in the visible messages with these roles (read-only)."""
        return self.fold(Found, pattern, roles).items

    def texts(self, roles: tuple[str, ...] = ALL_ROLES) -> list[str]:
        """Contents of the messages with these roles, in order (shared with the memory: read-only)."""
        return self.fold(Texts, roles).texts

    def last_result(self) -> Exchange | None:
        """The exchange answered by the latest tool message, if the context ends with one."""
        if not self.messages or self.messages[-1].get("role") != "tool":
            return None
        return self.exchange(self.messages[-1].get("tool_call_id"))

    def chance(self, probability: float, *key: Any) -> bool:
        """A draw seeded by the run seed and a key of visible facts: same input, same choice. A draw is in
        [0, 1), so a probability of 1 or more always holds and one of 0 or less never does: no draw needed."""
        if not 0.0 < probability < 1.0:
            return probability >= 1.0
        return _first_draws[(self.seed, *map(str, key))] < probability

    @property
    def writer(self) -> Writer:
        """Who writes `notes()` over this context: the one given, else the agent (made only when notes are)."""
        return self._writer or notes_writer(self.knobs)

    def keeps(self, *fact: Any) -> bool:
        """Whether the writer of notes over this context writes this fact down (see Writer)."""
        writer = self.writer
        return self.chance(writer.completeness, writer.name, *fact)

    def call(self, name: str, args: dict[str, Any], content: str = "") -> dict[str, Any]:
        """An assistant message with one tool call, its id derived from the visible context."""
        last = _content(self.messages[-1]) if self.messages else ""
        previous = self.exchanges[-1].call_id if self.exchanges else ""
        call_id = "call_" + stable_hash([self.seed, len(self.messages), previous, last[-200:], name, args])[:16]
        return {"role": "assistant", "content": content,
                "tool_calls": [{"id": call_id, "type": "function",
                                "function": {"name": name, "arguments": sorted_json(args)}}]}


def _tool_names(memory: Memory, tools: list[dict[str, Any]]) -> set[str]:
    """The names of the request's tools, worked out again only when the list holds other schemas than the
    session's previous request (the very objects, which the harness never changes once sent, or equal ones)."""
    listed = tuple(tools)
    if memory.tools is None or memory.tools[0] != listed:
        memory.tools = (listed, {t.get("function", {}).get("name") for t in tools})
    return memory.tools[1]


def answered(visible: Visible, message: dict[str, Any]) -> bool:
    """Whether a tool message answers the visible call whose id it carries.

    In a regular context `Calls` has checked each result against its call, keeping the very content
    object when it answers: that one is known without reading it again; others (a result replaced
    since) are checked once per request, however many folds ask."""
    key, content = message.get("tool_call_id"), _content(message)
    if visible.regular and visible._calls.results.get(key) is content:
        return True
    known = visible.answer_checks.get(id(message))
    if known is None:
        exchange = visible.exchange(key)
        known = visible.answer_checks[id(message)] = exchange is not None and answers(exchange.name, exchange.args,
                                                                                 content)
    return known


def same_shape(old: dict[str, Any], new: dict[str, Any]) -> bool:
    """Whether two messages differ at most in content: same role, same result id, same tool calls."""
    return (old.get("role"), old.get("tool_call_id"), old.get("tool_calls") or None) == (
        new.get("role"), new.get("tool_call_id"), new.get("tool_calls") or None)


def _hashable(value: Any) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


def _content(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return "\n".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content or ""


def text_reply(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}
