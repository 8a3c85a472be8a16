"""Shared by the summarizing strategies: the view as OpenHands' events, their previews, the
summary prompt, and the retry loop of OpenHands' `hard_context_reset()` (seed 000's hard condenser).

OpenHands counts and cuts **events**, not messages (openhands/sdk/event/): the system prompt is
one SystemPromptEvent, a user or text-only assistant message one MessageEvent, an assistant
message with k tool calls k ActionEvents (the first carries the text as its thought), each tool
result one ObservationEvent, a summary one CondensationSummaryEvent. A summarizer never sees
the messages themselves, only each event's `str()` preview (at most N_CHAR_PREVIEW characters of
text, actions without their arguments), so whatever a preview cuts is lost from the summary.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from harness.core.config import option, require
from harness.core.errors import CtxbenchError, StrategyFailed
from harness.conversation.view import ViewState
from strategies.history import GrowingViewReading, USER_ORIGIN

if TYPE_CHECKING:
    from harness.conversation.context import RunContext

# Seed 000: the text an emergency recovery's notice begins with (the rest is ours).
EMERGENCY_NOTICE = (
    "The environment triggered emergency context condensation after the model provider returned a "
    "context-window error. Your earlier conversation history was replaced by the summary that follows; "
    "it was written from previews of that history and may omit details. Re-read your notes or files as "
    "needed, then continue the user's work."
)
SUMMARY_HEADER = "Summary of the earlier conversation (condensed by the environment):\n"
SUMMARY_PAYLOAD = "CondensationSummaryEvent"

# OpenHands' summarizing prompt asks for these sections (REFERENCES.md); the wording is ours.
SUMMARY_SECTIONS = ("USER_CONTEXT", "TASK_TRACKING", "COMPLETED", "PENDING", "CURRENT_STATE", "CODE_STATE",
                    "TESTS", "CHANGES", "DEPS", "VERSION_CONTROL_STATUS")
SUMMARY_PROMPT = (
    "You are maintaining a context-aware state summary for an interactive agent. The events below are "
    "previews of the part of its history that is being forgotten; previews may be shortened. Write a "
    "summary that lets the agent continue its work without them. Keep the user's task statement and "
    "requirements verbatim, every fact the agent has established, and the ids of any tracked tasks "
    "exactly as written. Use these sections:\n"
    + "\n".join(f"{name}:" for name in SUMMARY_SECTIONS)
)
N_CHAR_PREVIEW = 500  # openhands/sdk/event/base.py N_CHAR_PREVIEW
# Ours (OpenHands' maybe_truncate inserts its own notice; the algorithm, not the text, is followed).
TRUNCATION_NOTICE = "<preview clipped: part of this event is not shown>"


class RecoverableRunError(StrategyFailed):
    """The strategy cannot condense: the run stops here (`strategy_failed`), its history intact, and can be
    resumed with another configuration."""


class NoCondensationAvailable(CtxbenchError):
    """OpenHands' NoCondensationAvailableException: this view offers no condensation now."""


@dataclass
class HardResetConfig:
    """The bounded retry loop of `hard_context_reset()`: attempts, and how previews shrink."""

    hard_context_reset_max_retries: int = option(5, "summary attempts of an emergency hard reset before the run "
                                                     "gives up (OpenHands hard_context_reset)")
    hard_context_reset_context_scaling: float = option(0.8, "each further attempt shrinks the event previews by "
                                                            "this factor, in (0, 1)")

    def __post_init__(self) -> None:
        require(self.hard_context_reset_max_retries >= 1,
                f"hard_context_reset_max_retries must be at least 1, got {self.hard_context_reset_max_retries}")
        require(0.0 < self.hard_context_reset_context_scaling < 1.0,
                f"hard_context_reset_context_scaling must be in (0, 1), got {self.hard_context_reset_context_scaling}")


class Event(NamedTuple):
    """One OpenHands event of a view message: `call` is the tool call's index for an ActionEvent. A named
    tuple, made ~3x faster than a frozen dataclass: one is made for each event of every message read."""

    message_id: int
    kind: str
    call: int | None = None
    call_id: str | None = None


def message_events(message_id: int, message: dict[str, Any]) -> list[Event]:
    """The events OpenHands logs for one message (the adapter's conversion, strategies/adapters/openhands.py)."""
    role = message.get("role")
    if role == "system":
        return [Event(message_id, "SystemPromptEvent")]
    if role == "tool":
        return [Event(message_id, "ObservationEvent", call_id=message.get("tool_call_id", ""))]
    calls = message.get("tool_calls") or [] if role == "assistant" else []
    if calls:
        return [Event(message_id, "ActionEvent", index, call.get("id", "")) for index, call in enumerate(calls)]
    return [Event(message_id, "MessageEvent")]


def is_summary(view: ViewState, message_id: int) -> bool:
    """A summary a condensation inserted (a strategy's user message opening with SUMMARY_HEADER)."""
    content = view.messages[message_id].get("content")
    return view.origins.get(message_id) == "strategy" and isinstance(content, str) and content.startswith(SUMMARY_HEADER)


def view_events(view: ViewState, ids: list[int] | None = None) -> list[Event]:
    """The view (or its messages `ids`) as OpenHands' event list."""
    events: list[Event] = []
    for message_id in view.ids if ids is None else ids:
        events.extend(_events_of(view, message_id))
    return events


def _events_of(view: ViewState, message_id: int) -> list[Event]:
    if is_summary(view, message_id):
        return [Event(message_id, SUMMARY_PAYLOAD)]
    return message_events(message_id, view.messages[message_id])


class ViewEvents(GrowingViewReading):
    """The view as OpenHands' event list, kept while the view only grows: a request costs O(new
    messages), as OpenHands' View grows by `append_event`. An edited view is listed afresh from each
    message's events, read once: they depend on the logged message and its origin alone, both fixed."""

    def __init__(self) -> None:
        super().__init__()
        self.events: list[Event] = []
        self._of_message: dict[int, list[Event]] = {}  # message id -> its events

    def restart(self) -> None:
        self.events = []

    def of(self, view: ViewState) -> list[Event]:
        known = self._of_message
        for message_id in self.unread(view):
            events = known.get(message_id)
            if events is None:
                events = known[message_id] = _events_of(view, message_id)
            self.events.extend(events)
        return self.events


def cut_points(events: list[Event]) -> list[bool]:
    """Where a list of events may be cut (index 0..len): never inside a batch of parallel actions,
    never between an action and its observation (openhands/sdk/context/view/properties/
    batch_atomicity.py and tool_call_matching.py `manipulation_indices`)."""
    allowed = [True] * (len(events) + 1)
    pending: set[str] = set()
    for index, event in enumerate(events):
        if event.kind == "ActionEvent":
            pending.add(event.call_id or "")
            if index + 1 < len(events) and events[index + 1].kind == "ActionEvent" \
                    and events[index + 1].message_id == event.message_id:
                allowed[index + 1] = False
        elif event.kind == "ObservationEvent":
            pending.discard(event.call_id or "")
        if pending:
            allowed[index + 1] = False
    return allowed


def next_cut(allowed: list[bool], threshold: int) -> int:
    """The smallest cut point >= threshold (ManipulationIndices.find_next): forgotten ranges move forward."""
    for index in range(max(threshold, 0), len(allowed)):
        if allowed[index]:
            return index
    raise NoCondensationAvailable(f"no cut point at or after event {threshold}")


def content_text(message: dict[str, Any]) -> str:
    """A message's text content alone (tool calls are separate events), as the adapter's conversion."""
    content = message.get("content")
    if isinstance(content, list):
        return "\n".join(part.get("text", "") for part in content if isinstance(part, dict))
    return content or ""


def _clip(text: str, keep: int, marker: str = "...") -> str:
    return text[:keep] + marker if len(text) > N_CHAR_PREVIEW else text


def event_preview(view: ViewState, event: Event, tool_count: int) -> str:
    """The event's `str()` as OpenHands renders it (openhands/sdk/event/llm_convertible/*.py `__str__`)."""
    message = view.messages[event.message_id]
    text = content_text(message)
    if event.kind == "SystemPromptEvent":
        return f"SystemPromptEvent (agent)\n  System: {_clip(text, N_CHAR_PREVIEW)}\n  Tools: {tool_count} available"
    if event.kind == "ObservationEvent":
        return (f"ObservationEvent (environment)\n  Tool: {message.get('name') or ''}\n"
                f"  Result: {_clip(text, N_CHAR_PREVIEW)}")
    if event.kind == "ActionEvent":
        call = (message.get("tool_calls") or [])[event.call or 0]
        thought = text if event.call == 0 else ""
        function = call.get("function") or {}
        head = f"ActionEvent (agent)\n  Thought: {_clip(thought, N_CHAR_PREVIEW)}\n  Action: "
        if _valid_arguments(function.get("arguments")):
            return head + f"ClientAction_{function.get('name', '')}"
        return head + f"(not executed)\n  Call: {function.get('name', '')}:{call.get('id', '')}"
    if event.kind == SUMMARY_PAYLOAD:  # OpenHands' summary event holds the summary alone (our header is not shown)
        source, role, text = "environment", "user", text.removeprefix(SUMMARY_HEADER)
    else:
        source = "agent" if message.get("role") == "assistant" else "user"
        role = "assistant" if source == "agent" else "user"
    shown = _clip(text, N_CHAR_PREVIEW - 3) if text else "[no text content]"
    return f"{event.kind} ({source})\n  {role}: {shown}"


def _valid_arguments(arguments: str | None) -> bool:
    """Whether a call's arguments make an executable action (a JSON object), as the adapter's client tools."""
    try:
        return isinstance(json.loads(arguments or "{}"), dict)
    except ValueError:
        return False


def truncate(text: str, cap: int | None) -> str:
    """Keep head and tail around a notice, itself clipped when the cap is smaller
    (openhands/sdk/utils/truncate.py `maybe_truncate`: the head gets the odd character)."""
    if not cap or cap < 0 or len(text) <= cap:
        return text
    if len(TRUNCATION_NOTICE) >= cap:
        return TRUNCATION_NOTICE[:cap]
    available = cap - len(TRUNCATION_NOTICE)
    head = available // 2 + available % 2
    tail = available - head
    return text[:head] + TRUNCATION_NOTICE + (text[-tail:] if tail > 0 else "")


def summary_request(previews: list[str]) -> list[dict[str, Any]]:
    """The summarizer's request: our instructions, then one `<EVENT>` block per forgotten event."""
    blocks = "\n\n".join(f"<EVENT>\n{text}\n</EVENT>" for text in previews)
    return [{"role": "system", "content": SUMMARY_PROMPT},
            {"role": "user", "content": "Events to summarize:\n\n" + blocks + "\n\nWrite the summary now."}]


def fixed_ids(ctx: "RunContext") -> list[int]:
    """The fixed context that no condensation removes: the leading system prompt(s)."""
    fixed = []
    for message_id in ctx.view.ids:
        if ctx.view.messages[message_id].get("role") != "system":
            break
        fixed.append(message_id)
    return fixed


def pending_user_ids(ctx: "RunContext", after_event: int) -> list[int]:
    """Genuine user messages in the view logged after event `after_event` (not yet answered)."""
    return [i for i in ctx.view.ids if i > after_event and ctx.view.origins.get(i) == USER_ORIGIN]


def summarize_once(ctx: "RunContext", profile: str, previews: list[str], purpose: str, attempt: int = 1,
                   cap: int | None = None) -> str:
    """One summary call over `previews` (already capped); '' for an empty summary. Raises on failure."""
    ctx.log.append("summary_attempt", purpose=purpose, attempt=attempt, preview_cap=cap, events=len(previews))
    result = ctx.call_llm(profile, summary_request(previews), purpose=purpose)
    return (result.message.get("content") or "").strip()


def check_profile(ctx: "RunContext", profile: str) -> None:
    if profile not in ctx.profiles:
        raise RecoverableRunError(f"summary profile {profile!r} is not among the run's profiles "
                                  f"({', '.join(sorted(ctx.profiles))}); history kept")


def hard_reset_summary(ctx: "RunContext", profile: str, forgotten: list[Event], retry: HardResetConfig,
                       purpose: str) -> tuple[str, int]:
    """OpenHands' hard_context_reset() loop; return (summary, attempts), '' for an empty summary.

    The first attempt sends the previews as they are (each already at most N_CHAR_PREVIEW
    characters of text); after a failure every preview is cut to the longest preview of the
    whole view times the scaling, and the cap shrinks by that factor after each further failure.
    Raises RecoverableRunError when the profile is missing or every attempt failed.
    """
    check_profile(ctx, profile)
    tools = len(ctx.tools)
    texts = [event_preview(ctx.view, event, tools) for event in forgotten]
    cap: int | None = None
    errors = []
    for attempt in range(1, retry.hard_context_reset_max_retries + 1):
        try:
            return summarize_once(ctx, profile, [truncate(t, cap) for t in texts], purpose, attempt, cap), attempt
        except Exception as exc:  # any failure of the side call counts as a failed attempt
            errors.append(f"attempt {attempt}: {type(exc).__name__}: {str(exc)[:200]}")
        if cap is None:
            cap = max(len(event_preview(ctx.view, e, tools)) for e in view_events(ctx.view))
        cap = int(cap * retry.hard_context_reset_context_scaling)
    raise RecoverableRunError(f"all {retry.hard_context_reset_max_retries} summary attempts failed; history kept "
                              f"({'; '.join(errors[-2:])})")
