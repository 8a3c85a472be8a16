"""The OpenHands reader's SDK path: openhands-sdk's own types read the conversation (`openhands` extra).

Each event is validated by the SDK's `Event` model, as its EventLog loads one (event_store.py,
`Event.model_validate_json`); a condensation is applied by the SDK's `View.append_event`; the messages
of each stretch between resets are built by `LLMConvertibleEvent.events_to_messages`, the call the
agent's `prepare_llm_messages` makes (agent/utils.py), and the token usages are validated by
`ConversationStats`. harness.traces.openhands_events shares the rest with the plain path.

A tool's action or observation is a type of the package that defines the tool; where this process
does not define it (openhands-tools' terminal, a user's own tool), the SDK could not load the event.
The SDK path then validates the event without that part, which no message needs: an ActionEvent's
call is its `tool_call` (the action is optional: None for a call that was not executed), an
observation's result is its recorded `content` and `is_error` as the base Observation renders them, a
system prompt's tool is kept from its recorded name and description.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness.traces import Message, TraceError
from harness.traces.openhands_base import Event, Group, chat, unknown_kind

WHERE = "trace format openhands"


class SdkReader:
    """The Reader (openhands_events.Reader) built on openhands-sdk."""

    def __init__(self) -> None:
        from pydantic import TypeAdapter
        from strategies.adapters import OPENHANDS_SDK
        from strategies.adapters.openhands import _load

        _load(WHERE)  # imports the SDK once, its side effects on logging and litellm contained
        self.label = OPENHANDS_SDK.label
        self.event = OPENHANDS_SDK.load(WHERE, "openhands.sdk.event")
        self.View = OPENHANDS_SDK.load(WHERE, "openhands.sdk.context.view").View
        self.stats = OPENHANDS_SDK.load(WHERE, "openhands.sdk.conversation.conversation_stats").ConversationStats
        tool = OPENHANDS_SDK.load(WHERE, "openhands.sdk.tool")
        llm = OPENHANDS_SDK.load(WHERE, "openhands.sdk.llm")
        known = OPENHANDS_SDK.load(WHERE, "openhands.sdk.utils.models").get_known_concrete_subclasses
        self.Observation, self.TextContent = tool.Observation, llm.TextContent
        self.content = TypeAdapter(list[llm.TextContent | llm.ImageContent])
        self.kinds = {name: {cls.__name__ for cls in known(base)} for name, base in (
            ("event", self.event.Event), ("action", tool.Action), ("observation", tool.Observation),
            ("tool", tool.ToolDefinition))}

    def check(self, event: Event) -> None:
        if event.kind not in self.kinds["event"]:
            raise unknown_kind(event, sorted(self.kinds["event"]))
        try:
            event.obj = self.event.Event.model_validate(self.loadable(event.raw))
        except ValueError as exc:  # pydantic's ValidationError, and the SDK's own validators
            raise event.error(f"{self.label} refuses it: {_why(exc)}") from None

    def loadable(self, raw: dict[str, Any]) -> dict[str, Any]:
        """The event without the parts of tools this process does not define (module docstring)."""
        kinds = self.kinds
        if raw["kind"] == "ActionEvent" and "action" in raw and _kind(raw["action"]) not in kinds["action"]:
            return {key: value for key, value in raw.items() if key != "action"}
        if raw["kind"] == "ObservationEvent" and _kind(raw.get("observation")) not in kinds["observation"]:
            recorded = raw.get("observation") or {}
            stand_in = self.Observation.model_construct(content=self.content.validate_python(recorded.get("content", [])),
                                                        is_error=bool(recorded.get("is_error", False)))
            return {**raw, "observation": stand_in}
        if raw["kind"] == "SystemPromptEvent" and isinstance(raw.get("tools"), list):
            return {**raw, "tools": [tool for tool in raw["tools"] if _kind(tool) in kinds["tool"]]}
        return raw

    def condense(self, view: list[Event], condensation: Event) -> list[Event]:
        after = self.View(events=[event.obj for event in view])
        after.append_event(condensation.obj)
        kept = {event.id: event for event in view}
        return [kept.get(obj.id) or Event(json.loads(obj.model_dump_json()), condensation.path, obj)
                for obj in after.events]

    def messages(self, grouped: list[Group]) -> list[Message]:
        built = self.event.LLMConvertibleEvent.events_to_messages([event.obj for group in grouped for event in group])
        if len(built) != len(grouped):
            raise TraceError(grouped[0][0].path, f"{self.label} built {len(built)} messages from the events that "
                                                 f"the reader grouped into {len(grouped)}: report this SDK release")
        return [self.message(message) for message in built]

    def message(self, message: Any) -> Message:
        texts = [part.text for part in message.content if isinstance(part, self.TextContent)]
        calls = [(call.id, call.name, call.arguments) for call in message.tool_calls or []]
        return chat(message.role, texts, tool_calls=calls, tool_call_id=message.tool_call_id, name=message.name)

    def usages(self, state: dict[str, Any], path: Path) -> dict[str, list[dict[str, Any]]]:
        try:
            stats = self.stats.model_validate(state.get("stats") or {})
        except ValueError as exc:
            raise TraceError(path, f"{self.label} refuses its stats: {_why(exc)}") from None
        return {usage_id: [usage.model_dump() for usage in metrics.token_usages]
                for usage_id, metrics in stats.usage_to_metrics.items()}


def _why(exc: ValueError) -> str:
    """A validation error on one line: each failing field and pydantic's reason (the first three)."""
    errors = getattr(exc, "errors", None)
    if not callable(errors):
        return str(exc)
    return "; ".join(f"{'.'.join(map(str, error['loc'])) or 'the event'}: {error['msg']}" for error in errors()[:3])


def _kind(value: Any) -> Any:
    return value.get("kind") if isinstance(value, dict) else None
