"""What both paths of the OpenHands reader (harness.traces.openhands_events) share: an event as
recorded, the operations where the SDK path and the plain path differ, a chat message from parts."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from harness.traces import Message, TraceError

SUMMARY = "CondensationSummaryEvent"  # event/condenser.py: a condensation's summary, never persisted


@dataclass
class Event:
    """One persisted event: its JSON, its file, and (SDK path) the SDK's own event object."""

    raw: dict[str, Any]
    path: Path
    obj: Any = None

    @property
    def id(self) -> str:
        return self.raw["id"]

    @property
    def kind(self) -> str:
        return self.raw["kind"]

    def error(self, problem: str) -> TraceError:
        return TraceError(self.path, f"event {self.id!r} ({self.kind}): {problem}")

    def role(self) -> str:
        """The role of the message this event becomes."""
        if self.kind == "MessageEvent":
            return self.raw["llm_message"]["role"]
        return {"SystemPromptEvent": "system", SUMMARY: "user", "ActionEvent": "assistant"}.get(self.kind, "tool")

    def plain_user(self) -> bool:
        """A user turn without tool metadata: the SDK merges such consecutive messages (event/base.py)."""
        message = self.raw.get("llm_message") or {}
        return self.kind == SUMMARY or (self.kind == "MessageEvent" and message.get("role") == "user" and not any(
            message.get(key) for key in ("tool_calls", "tool_call_id", "name")))


Group = list[Event]  # the events that make one message


class Reader(Protocol):
    """What differs between the SDK path and the plain path."""

    def check(self, event: Event) -> None: ...
    def condense(self, view: list[Event], condensation: Event) -> list[Event]: ...
    def messages(self, groups: list[Group]) -> list[Message]: ...
    def usages(self, state: dict[str, Any], path: Path) -> dict[str, list[dict[str, Any]]]: ...


def unknown_kind(event: Event, known: tuple[str, ...] | list[str]) -> TraceError:
    return event.error(f"unknown event kind (openhands-sdk defines {', '.join(sorted(known))}): "
                       "a newer SDK's log, or not an OpenHands log")


def chat(role: str, texts: list[str], *, tool_calls: list[tuple[str, str, str]] | None = None,
         tool_call_id: str | None = None, name: str | None = None) -> Message:
    """A chat message from its text parts (joined by newlines) and (id, name, arguments) tool calls."""
    message: Message = {"role": role, "content": "\n".join(texts)}
    if role == "assistant" and tool_calls:
        message["content"] = message["content"] or None
        message["tool_calls"] = [{"id": call_id, "type": "function", "function": {"name": call_name,
                                                                                   "arguments": arguments}}
                                 for call_id, call_name, arguments in tool_calls]
    if role == "tool":
        message.update(tool_call_id=tool_call_id, name=name)
    return message
