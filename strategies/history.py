"""Readings of the view shared by the strategies that edit history (ladder, masking, clearing).

They answer three questions the same way everywhere: where the turn in progress begins
(the latest genuine user prompt), which tool call each tool result answers (so no edit
leaves a call without its result or a result without its call), and how a cleared or
masked result reads (a placeholder that says how to get the content back).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from harness.conversation.view import Message, ViewState

USER_ORIGIN = "user"
FIXED_ORIGIN = "task"  # the system prompt and other fixed context: never evicted


@dataclass(frozen=True)
class ToolPair:
    """One tool call and the view message holding its result (None while unanswered)."""

    call_id: str
    name: str
    arguments: str
    assistant_id: int
    result_id: int | None


def turn_start_position(view: ViewState) -> int | None:
    """Position in the view of the latest genuine user prompt, or None if there is none."""
    for position in range(len(view.ids) - 1, -1, -1):
        if view.origins.get(view.ids[position]) == USER_ORIGIN:
            return position
    return None


def settled_ids(view: ViewState) -> list[int]:
    """Messages before the latest genuine user prompt: the only ones an edit may touch."""
    position = turn_start_position(view)
    return list(view.ids[:position]) if position is not None else []


def first_user_id(view: ViewState) -> int | None:
    return next((i for i in view.ids if view.origins.get(i) == USER_ORIGIN), None)


def tool_pairs(view: ViewState) -> list[ToolPair]:
    """Every tool call in the view with its result, ordered by call position (oldest first)."""
    results = {}
    for message_id in view.ids:
        message = view.messages[message_id]
        if message.get("role") == "tool":
            results[message.get("tool_call_id")] = message_id
    pairs = []
    for message_id in view.ids:
        for call in view.messages[message_id].get("tool_calls") or ():
            function = call.get("function") or {}
            pairs.append(ToolPair(call.get("id", ""), function.get("name", ""), function.get("arguments") or "",
                                  message_id, results.get(call.get("id"))))
    return pairs


def units(view: ViewState) -> list[list[int]]:
    """The view cut into pieces that can be dropped whole: a call message with its results, or one message."""
    owner: dict[int, int] = {}
    for pair in tool_pairs(view):
        if pair.result_id is not None:
            owner[pair.result_id] = pair.assistant_id
    grouped: dict[int, list[int]] = {}
    order: list[int] = []
    for message_id in view.ids:
        head = owner.get(message_id, message_id)
        if head not in grouped:
            grouped[head] = []
            order.append(head)
        grouped[head].append(message_id)
    return [grouped[head] for head in order]


def library_messages(view: ViewState) -> list[list[int]]:
    """The view as pydantic-ai counts messages: each assistant response alone, each run of consecutive
    request-side messages (system, user, tool) as one ModelRequest."""
    groups: list[list[int]] = []
    messages, extends = view.messages, False  # whether the last group is request-side (a message joins it)
    for message_id in view.ids:
        request_side = messages[message_id].get("role") != "assistant"
        if request_side and extends:
            groups[-1].append(message_id)
        else:
            groups.append([message_id])
        extends = request_side
    return groups


class GrowingViewReading:
    """A reading of the view kept while the view only grows (the same id list object, no edit since), so a
    request costs O(new messages): `unread(view)` gives the ids not read yet, and every id, after `restart()`,
    once the view was edited or replaced."""

    def __init__(self) -> None:
        self._ids: list[int] | None = None  # the view's id list read (the same list object while it grows)
        self._edits = -1
        self._read = 0

    def restart(self) -> None:
        """Forget what was read: the view is read afresh."""

    def unread(self, view: ViewState) -> list[int]:
        if self._ids is not view.ids or self._edits != view.edits or self._read > len(view.ids):
            self._ids, self._read = view.ids, 0
            self.restart()
        new = view.ids[self._read:]
        self._read, self._edits = len(view.ids), view.edits
        return new


class LibraryMessageCount(GrowingViewReading):
    """`len(library_messages(view))`, kept while the view only grows: the ladder asks at every turn start
    whether the context fits; an edited view is counted afresh."""

    def __init__(self) -> None:
        super().__init__()
        self._count = 0
        self._extends = False  # whether the last group counted is request-side (the next such message joins it)

    def restart(self) -> None:
        self._count, self._extends = 0, False

    def of(self, view: ViewState) -> int:
        new = self.unread(view)  # first: a restart resets the count
        messages, count, extends = view.messages, self._count, self._extends
        for message_id in new:
            request_side = messages[message_id].get("role") != "assistant"
            count += not (request_side and extends)
            extends = request_side
        self._count, self._extends = count, extends
        return count


def placeholder(message: Message, verb: str, tokens: int) -> Message:
    """A cleared/masked rendering of a tool result: starts with '[' and says how to recover."""
    name = message.get("name") or "the tool"
    text = (f"[Tool result {verb} to save context: this {name} output ({tokens} tokens) is no longer shown. "
            f"Call {name} again with the same arguments if you need it.]")
    return {**message, "content": text}


def is_placeholder(message: Message) -> bool:
    content = message.get("content")
    return isinstance(content, str) and content.startswith("[Tool result ") and (
        " cleared to save context" in content or " masked to save context" in content)


def replace_op(message_id: int, message: Message) -> dict[str, Any]:
    return {"op": "replace", "id": message_id, "message": message}
