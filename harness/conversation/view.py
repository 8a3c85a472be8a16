"""The view: the messages sent to the model, derived from the event log by folding events.

A `message` event with placement "append" (the default) joins the end of the view. Any
event may carry `view_ops`, applied in order:

* ``{"op": "replace", "id": N, "message": {...}}``: send another rendering of message N
  (a placeholder, a clamped copy); the original stays in the log.
* ``{"op": "drop", "ids": [...]}``: stop sending these messages.
* ``{"op": "set", "ids": [...]}``: the view becomes exactly these messages, in this order
  (resets); messages logged with placement "none" can be placed this way.

Because live runs and replay use this one fold, a saved log rebuilds every view that was
sent without calling a model or a tool.

Every message is frozen when it enters (harness.core.frozen), and `messages` and `ids` are read-only,
so only view ops change what is sent. The fold also keeps, as ops apply, two
failure modes of the view as sent: tool calls and results whose partner is not
in the view (OpenHands #7512), and whether the task statement (the first user message) is in it.
"""
from __future__ import annotations

from hashlib import blake2b
from types import MappingProxyType
from typing import Any, Callable, Iterable, Mapping

from harness.core.frozen import FrozenList, freeze
from harness.core.tokens import count_message, message_text, stable_digest, stable_hash

Message = dict[str, Any]
# Ours: each link of the view hash is a copy of this empty hasher, updated: the same digest as
# blake2b(data, digest_size=12), without parsing the constructor's arguments once per message.
_LINK = blake2b(digest_size=12)


class ViewState:
    """The current view, with per-message token counts and prefix hashes kept incrementally."""

    def __init__(self, count: Callable[[Message], int] = count_message) -> None:
        """`count`: a message's size in `tokens` and `total_tokens` (tokens by default; a reader that must not load
        the tokenizer, `ctxbench show`, passes another measure)."""
        self._count = count
        self._messages: dict[int, Message] = {}
        self.messages: Mapping[int, Message] = MappingProxyType(self._messages)  # every logged message, by id
        self.origins: dict[int, str] = {}
        self.ids: list[int] = FrozenList()  # the view's message ids in order (read-only: view ops change it)
        # Each id's first position in `ids`, built at a replace and kept up to date while the view only grows
        # (None until then, and again after a drop or set): a replace ~20 messages back on every request (masking,
        # clearing) finds its message without scanning the view, and a view never edited keeps no index.
        self._positions: dict[int, int] | None = None
        self._overrides: dict[int, Message] = {}
        self._tokens: dict[int, int] = {}
        self._digests: dict[int, bytes] = {}  # of each message as sent
        self._prefix: list[str] = []  # hex digest of the view up to each position, valid up to its length
        self._sent: list[Message] = []  # the messages of `ids` as sent, valid up to its length
        self._by_role: dict[str, tuple[list[int], int, list[int]]] = {}  # role -> (ids read, how far, its ids)
        self.total_tokens = 0
        self.edits = 0  # view ops applied so far: unchanged, the view has only grown by appended messages
        self._balance: dict[Any, int] = {}  # tool call id -> its calls minus its results in the view, where not 0
        self.statement: str | None = None  # the task statement: the text of the first user message logged
        self._holders: set[int] = set()  # ids of the messages in the view that (as sent) hold the statement
        # Told of each message (as sent) entering the view (+1) or leaving it (-1), as ops apply: an index over
        # the view kept without rescanning it (harness.traces.replay's references).
        self.watch: Callable[[int, Message, int], None] | None = None

    # ----- reading
    def message(self, message_id: int) -> Message:
        return self._overrides.get(message_id) or self._messages[message_id]

    def is_replaced(self, message_id: int) -> bool:
        return message_id in self._overrides

    def tokens(self, message_id: int) -> int:
        count = self._tokens.get(message_id)
        if count is None:
            count = self._tokens[message_id] = self._count(self.message(message_id))
        return count

    def ids_of_role(self, role: str) -> list[int]:
        """Ids in the view whose logged message has this role, in view order (read-only); O(new messages)
        while the view only grows."""
        ids_read, read, found = self._by_role.get(role, (None, 0, FrozenList()))
        if ids_read is not self.ids or read > len(self.ids):
            read, found = 0, FrozenList()
        list.extend(found, (i for i in self.ids[read:] if self._messages[i].get("role") == role))
        self._by_role[role] = (self.ids, len(self.ids), found)
        return found

    def to_messages(self) -> list[Message]:
        """A new list of the messages as sent (shared message objects); O(new messages) while the view grows."""
        sent = self._sent
        if len(sent) < len(self.ids):  # after an edit ~20 messages back (masking, clearing) those are taken again
            overrides, messages = self._overrides, self._messages
            sent += [overrides.get(i) or messages[i] for i in self.ids[len(sent):]]  # `message`, inlined
        return list(sent)

    def hash(self, tools_hash: str = "") -> str:
        """Hash of the view as sent; O(1) amortized while the view only grows (after an edit at
        position p, the chain is extended again from p: one short hash per message). Each link
        hashes the hex text of the one before and of the message's own hash."""
        prefix, digests = self._prefix, self._digests
        previous = prefix[-1] if prefix else ""
        for message_id in self.ids[len(prefix):]:  # a strategy editing ~20 messages back re-links them all
            digest = digests.get(message_id) or self._message_digest(message_id)
            link = _LINK.copy()  # stable_digest's hash
            link.update((previous + digest.hex()).encode())
            previous = link.hexdigest()
            prefix.append(previous)
        return stable_hash(tools_hash + previous)

    @property
    def orphaned_tool_ids(self) -> int:
        """Tool call ids whose calls and results in the view do not pair up (a result without its call,
        a call without its result): O(1), kept as ops apply."""
        return len(self._balance)

    @property
    def task_statement_missing(self) -> bool:
        """True when no message of the view as sent (tool results aside) holds the task statement's text."""
        return self.statement is not None and not self._holders

    def _message_digest(self, message_id: int) -> bytes:
        digest = self._digests.get(message_id)
        if digest is None:
            digest = self._digests[message_id] = stable_digest(self.message(message_id))
        return digest

    def _invalidate_from(self, position: int) -> None:
        del self._prefix[position:]
        del self._sent[position:]

    # ----- folding events
    def apply(self, event: dict[str, Any]) -> None:
        """Fold one event; a message event's message is frozen in the event itself (read-only from now on)."""
        if event["type"] == "message":
            message_id = event["id"]
            message = event["message"] = freeze(event["message"])  # frozen already when logged by a run
            self._messages[message_id] = message
            origin = self.origins[message_id] = event.get("origin", "")
            if self.statement is None and origin == "user":
                self.statement = message_text(message)
            if event.get("placement", "append") == "append":
                if self._positions is not None:
                    self._positions.setdefault(message_id, len(self.ids))
                list.append(self.ids, message_id)
                self.total_tokens += self.tokens(message_id)
                self._enter(message_id, 1)
        for op in event.get("view_ops", ()):
            self._apply_op(op)

    def _enter(self, message_id: int, sign: int) -> None:
        """Count a message (as sent) into the view's failure modes (sign 1) or out of them (-1)."""
        message = self._overrides.get(message_id) or self._messages[message_id]
        if self.watch is not None:
            self.watch(message_id, message, sign)
        calls = message.get("tool_calls")
        if calls:
            for call in calls:
                self._pair(call.get("id"), sign)
        if message.get("role") == "tool":  # a tool's output does not state the task
            self._pair(message.get("tool_call_id"), -sign)
        elif sign < 0:
            self._holders.discard(message_id)
        elif self.statement is not None:
            content = message.get("content")
            if self.statement in (content if type(content) is str and not calls else message_text(message)):
                self._holders.add(message_id)

    def _pair(self, call_id: Any, change: int) -> None:
        balance = self._balance.get(call_id, 0) + change
        if balance:
            self._balance[call_id] = balance
        else:
            del self._balance[call_id]

    def _set_ids(self, new_ids: list[int]) -> None:
        """The view becomes `new_ids`: messages leaving and entering are counted out and in."""
        old, new = set(self.ids), set(new_ids)
        for message_id in old - new:
            self._enter(message_id, -1)
        for message_id in new - old:
            self._enter(message_id, 1)
        self.ids = FrozenList(new_ids)
        self._positions = None

    def _apply_op(self, op: Mapping[str, Any]) -> None:
        kind = op["op"]
        self.edits += 1
        if kind == "replace":
            message_id = op["id"]
            positions = self._positions
            if positions is None:
                positions = self._positions = {}
                for index, known in enumerate(self.ids):
                    positions.setdefault(known, index)
            position = positions.get(message_id)
            in_view = position is not None
            if in_view:
                self.total_tokens -= self.tokens(message_id)
                self._enter(message_id, -1)
            self._overrides[message_id] = freeze(op["message"])
            self._tokens.pop(message_id, None)
            self._digests[message_id] = stable_digest(op["message"])
            if in_view:
                self.total_tokens += self.tokens(message_id)
                self._enter(message_id, 1)
                self._invalidate_from(position)
        elif kind == "drop":
            doomed = set(op["ids"])
            first = next((p for p, i in enumerate(self.ids) if i in doomed), len(self.ids))
            self._set_ids([i for i in self.ids if i not in doomed])
            self.total_tokens = sum(self.tokens(i) for i in self.ids)
            self._invalidate_from(first)
        elif kind == "set":
            new_ids = list(op["ids"])
            unknown = [i for i in new_ids if i not in self._messages]
            if unknown:
                raise ValueError(f"view op 'set' names unknown message ids {unknown}")
            common = 0
            for old, new in zip(self.ids, new_ids):
                if old != new:
                    break
                common += 1
            self._set_ids(new_ids)
            self.total_tokens = sum(self.tokens(i) for i in self.ids)
            self._invalidate_from(common)
        else:
            raise ValueError(f"unknown view op {kind!r}")


def fold(events: Iterable[Mapping[str, Any]]) -> ViewState:
    view = ViewState()
    for event in events:
        view.apply(event)
    return view
