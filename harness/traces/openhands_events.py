"""OpenHands conversations (openhands-sdk's persisted event logs), one trace per conversation directory.

Layout (openhands-sdk 1.58, conversation/persistence_const.py, event_store.py, state.py): a
LocalConversation with a persistence dir writes `<persistence_dir>/<conversation id hex>/`:
`base_state.json` (ConversationState: `id`, `agent.llm.model`, `leaf_event_id`, `execution_status`,
`stats`) and `events/event-<index, 5+ digits>-<event id>.json`, one event per file
(`Event.model_dump_json(exclude_none=True)`, its type in `kind`), indices from 0.

A trace that is a directory: `load_traces` works file by file, so a format may also claim a whole
directory (`is_trace_dir`): `trace_files` then lists that directory as one candidate instead of
descending into it, `read_head` gives it no head, and `detect`/`read` take the directory. Here a
conversation directory (base_state.json beside events/) or a bare events/ directory is claimed, so
`ctxbench traces <persistence_dir>` finds every conversation in it and skips nothing else. An event
file named on its own is recognized and refused with a pointer to its conversation directory.

Which events: the active branch, as the SDK resolves it (state.py `_resolve_active_leaf`, event_store.py
`path_to_root`): from `leaf_event_id` (else the last event that is not a state-update or error
artifact) up the `parent_id` chain (no parent_id: the previous index; `__root__`: a root). Events of
abandoned branches are not read. An index gap is refused (ours: the SDK silently stops at it).

Messages, as the SDK builds the LLM's messages (event/base.py `events_to_messages`, the SDK's own
example examples/01_standalone_sdk/36_event_json_to_openai_messages.py): the system prompt (its
dynamic context a second part), user and agent MessageEvents, ActionEvents of one LLM response (same
`llm_response_id`, consecutive) as ONE assistant message with a tool call each and the first event's
thought as content, observations, rejections and agent errors as `tool` messages, consecutive plain
user messages merged into one. Content parts are joined by newlines (the SDK's string serializer,
llm/message.py); images are left out. Reasoning content and thinking blocks are dropped (sent back
only to the few models that ask for it; Anthropic strips earlier turns' thinking). The SDK cuts tool
text past 50,000 characters when it sends it (DEFAULT_TEXT_CONTENT_LIMIT); the trace keeps the
recorded text whole. An observation is rendered as the base Observation does (an error header when
`is_error`, then its content): a tool package's own rendering (openhands-tools' terminal adds its
working directory and exit code) is not reproduced, on either path.

Condensations are the recorded agent's own context resets. OpenHands' Condensation forgets events of
the view and inserts its summary (a user message) at `summary_offset`: the agent's later requests held
a head (the `keep_first` events), the summary and a kept tail of recent events, which a reset index
alone cannot keep. The mapping: the reset is placed where the kept tail starts, and copies of the
head's system and user messages and the summary go there, so every request after the condensation
holds what the recorded agent sent (the trace after the last reset is the SDK's own View of the
conversation). What is lost: the requests that produced the tail's responses (recorded before the
condensation, with the forgotten events in their context) are replayed as if it had already
happened; head events that are not system or user messages (keep_first reaching past the first user
message) are not copied, as a copied response would be replayed as a new one. Copies are dated by
the first tail message (or the condensation, when nothing was kept after the head). A conversation
without an assistant response holds nothing to replay (NoTrace: refused named alone, skipped in a
directory, as a conversation created but never run).

Usage per response: base_state.json `stats.usage_to_metrics[usage id].token_usages`, one per LLM
call, keyed by `response_id` = the events' `llm_response_id` (llm/utils/metrics.py, telemetry.py).
`prompt_tokens` is litellm's, cache reads and writes included (litellm's Anthropic transformation
adds them): input = prompt_tokens, cached = cache_read_tokens, cache writes = cache_write_tokens,
output = completion_tokens. `recorded_input_tokens` sums every call of the LLM(s) whose responses
are in the trace (the agent's, not the condenser's). Times: event timestamps, which the SDK writes as
local time without a zone (`datetime.now().isoformat()`): read as UTC, so differences are right.
Tools: the system prompt event records each tool's name (`title`) and description but not its
parameters (those come from the tool's action class): the schemas carry an empty parameter object.

Two paths give the same Trace: with openhands-sdk importable (the `openhands` extra, Python >= 3.12),
each event is validated by the SDK's own Event model and the messages are built by its
`events_to_messages` and View (harness.traces.openhands_sdk); otherwise the same JSON is read by its
fields here. The SDK path reads an action or observation of a tool this installation does not define
(a tool package's, e.g. openhands-tools') without that part: the call is in `tool_call`, the result
is read as the base Observation.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

from harness.traces import Message, NoTrace, Trace, TraceError, check_trace
from harness.traces.openhands_base import SUMMARY, Event, Group, Reader, chat, unknown_kind
from harness.traces.records import load_json

FORMAT = "openhands"
BASE_STATE = "base_state.json"
EVENTS_DIR = "events"
EVENT_NAME = re.compile(r"^event-(?P<index>\d{5,})-(?P<event_id>[0-9a-fA-F\-]{8,})\.json$")  # persistence_const.py
ROOT_PARENT_ID = "__root__"  # event/types.py: a parent_id marking a root
ARTIFACTS = ("ConversationStateUpdateEvent", "ConversationErrorEvent")  # not tree nodes (state.py)
OBSERVATIONS = ("ObservationEvent", "UserRejectObservation", "AgentErrorEvent")
SEEN = ("SystemPromptEvent", "MessageEvent", "ActionEvent", *OBSERVATIONS, SUMMARY)  # LLMConvertibleEvent
CONDENSATION = "Condensation"
UNSEEN = ("CondensationRequest", "ACPToolCallEvent", "HookExecutionEvent", "LLMCompletionLogEvent",
          "SecurityAnalysisEvent", "StreamingDeltaEvent", "TokenEvent", "InterruptEvent", "PauseEvent", *ARTIFACTS)
KNOWN = (*SEEN, CONDENSATION, *UNSEEN)  # every Event kind openhands-sdk 1.58 defines
ERROR_HEADER = "[An error occurred during execution.]\n"  # tool/schema.py Observation.ERROR_MESSAGE_HEADER
EMPTY_PARAMETERS = {"type": "object", "properties": {}}


# ----- the format's face

def is_trace_dir(path: Path) -> bool:
    """A conversation directory (base_state.json beside events/), or an events/ directory of event files."""
    if (path / BASE_STATE).is_file() and (path / EVENTS_DIR).is_dir():
        return True
    return path.name == EVENTS_DIR and any(EVENT_NAME.match(entry.name) for entry in path.iterdir())


def detect(path: Path, head: Any) -> bool:
    """A conversation or events directory; or one event file (to refuse it with a pointer)."""
    path = Path(path)
    if path.is_dir():
        return is_trace_dir(path)
    return bool(EVENT_NAME.match(path.name)) and isinstance(head, dict) and "kind" in head


def read(path: Path) -> list[Trace]:
    """The conversation as one trace, through the SDK's own types where it is importable."""
    from strategies.adapters import OPENHANDS_SDK

    return [read_conversation(Path(path), sdk=OPENHANDS_SDK.available())]


def read_conversation(path: Path, *, sdk: bool) -> Trace:
    """One conversation read by the SDK path (`sdk`) or the plain one."""
    if not path.is_dir():
        raise TraceError(path, "an OpenHands event file holds one event of a conversation: give the conversation's "
                               f"directory ({path.parent.parent}) or its events/ directory")
    if sdk:
        from harness.traces.openhands_sdk import SdkReader
        reader: Reader = SdkReader()
    else:
        reader = PlainReader()
    conversation = path.parent if path.name == EVENTS_DIR and not (path / EVENTS_DIR).is_dir() else path
    state = _state(conversation / BASE_STATE)
    events = _events(conversation / EVENTS_DIR)
    for event in events:
        reader.check(event)
    branch = _active_branch(events, state, conversation / EVENTS_DIR)
    return check_trace(_trace(conversation, state, branch, reader))


# ----- files and the active branch

def _state(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    state = load_json(path)
    if not isinstance(state, dict):
        raise TraceError(path, f"ConversationState is a JSON object, got {type(state).__name__}")
    return state


def _events(directory: Path) -> list[Event]:
    """Every event file in index order (event_store.py `_scan_and_build_index`); a gap is refused."""
    if not directory.is_dir():
        raise TraceError(directory, "no events/ directory: not an OpenHands conversation")
    named = {}
    for entry in directory.iterdir():
        match = EVENT_NAME.match(entry.name)
        if match and entry.is_file():
            named[int(match["index"])] = entry
    missing = next((index for index in range(len(named)) if index not in named), None)
    if missing is not None:
        raise TraceError(directory, f"event index {missing:05d} is missing (there are events up to "
                                    f"{max(named):05d}): a partial copy of the conversation")
    events = []
    for index in range(len(named)):
        raw = load_json(named[index])
        if not (isinstance(raw, dict) and isinstance(raw.get("id"), str) and isinstance(raw.get("kind"), str)):
            raise TraceError(named[index], "an OpenHands event is a JSON object with a string `id` and `kind`")
        events.append(Event(raw, named[index]))
    return events


def _active_branch(events: list[Event], state: dict[str, Any], where: Path) -> list[Event]:
    """The events on the conversation's active branch, root first."""
    index_of: dict[str, int] = {}
    for index, event in enumerate(events):
        index_of.setdefault(event.id, index)  # the first of duplicated ids, as the SDK's scan keeps
    leaf = state.get("leaf_event_id")
    if leaf is None:
        if state.get("head_is_empty"):
            return []
        leaf = next((event.id for event in reversed(events) if event.kind not in ARTIFACTS), None)
    chain: list[Event] = []
    seen: set[str] = set()
    current = leaf
    while current is not None:
        if current not in index_of:
            raise TraceError(where, f"event {current!r} of the active branch is not in the log")
        index = index_of[current]
        event = events[index]
        if current in seen:
            raise event.error("the parent_id chain runs in a circle")
        seen.add(current)
        chain.append(event)
        parent = event.raw.get("parent_id")
        if parent is None:
            current = events[index - 1].id if index else None
        else:
            current = None if parent == ROOT_PARENT_ID else parent
    return chain[::-1]


# ----- events to the trace

@dataclass
class _Walk:
    """The trace's events in order, each with the event that dates it, and where each reset starts."""

    items: list[tuple[Event, Event]] = field(default_factory=list)
    starts: list[int] = field(default_factory=list)


def _walk(branch: list[Event], reader: Reader) -> _Walk:
    """Every event the LLM was shown, condensations mapped to resets (module docstring)."""
    out = _Walk()
    view: list[Event] = []
    calls: set[str] = set()
    for event in branch:
        if event.kind == "ActionEvent":
            calls.add(event.raw["tool_call"]["id"])
        elif event.kind in OBSERVATIONS and event.raw["tool_call_id"] not in calls:
            raise event.error(f"it answers tool call {event.raw['tool_call_id']!r}, which no earlier ActionEvent "
                              "of the conversation made")
        if event.kind == CONDENSATION:
            after = reader.condense(view, event)
            _reset(out, view, after, event)
            view = after
        elif event.kind in SEEN:
            view.append(event)
            out.items.append((event, event))
    return out


def _reset(out: _Walk, view: list[Event], after: list[Event], condensation: Event) -> None:
    """Copies of the kept head's system and user messages and the summary, placed before the kept tail."""
    kept = 0
    while kept < min(len(view), len(after)) and view[-1 - kept].id == after[-1 - kept].id:
        kept += 1
    tail = {event.id for event in after[len(after) - kept:]}
    floor = out.starts[-1] if out.starts else 0
    start = len(out.items)
    while start > floor and out.items[start - 1][0].id in tail:
        start -= 1
    anchor = out.items[start][1] if start < len(out.items) else condensation
    copies = [(event, anchor) for event in after[:len(after) - kept] if event.role() in ("system", "user")]
    if copies or start > floor:
        out.items[start:start] = copies
        out.starts.append(start)


def _groups(items: list[Event]) -> list[Group]:
    """Events per message: one LLM response's consecutive actions, consecutive plain user messages."""
    out: list[Group] = []
    for event in items:
        previous = out[-1][-1] if out else None
        batch = (previous is not None and event.kind == previous.kind == "ActionEvent"
                 and event.raw["llm_response_id"] == previous.raw["llm_response_id"])
        if batch or (previous is not None and event.plain_user() and previous.plain_user()):
            out[-1].append(event)
        else:
            out.append([event])
    return out


def _trace(conversation: Path, state: dict[str, Any], branch: list[Event], reader: Reader) -> Trace:
    walked = _walk(branch, reader)
    messages: list[Message] = []
    resets: dict[int, str] = {}
    times: dict[int, float] = {}
    responses: dict[int, str] = {}  # assistant message index -> its llm_response_id
    bounds = sorted({0, *walked.starts, len(walked.items)})
    for low, high in zip(bounds, bounds[1:]):
        segment = walked.items[low:high]
        if low:
            resets[len(messages)] = "condensation"
        grouped = _groups([event for event, _ in segment])
        position = 0
        for group, message in zip(grouped, reader.messages(grouped)):
            times[len(messages)] = _unix_time(segment[position][1])
            position += len(group)
            if message["role"] == "assistant" and group[0].raw.get("llm_response_id"):
                responses[len(messages)] = group[0].raw["llm_response_id"]
            messages.append(message)
    if not responses:
        raise NoTrace(conversation, "the conversation holds no assistant response (no ActionEvent or agent "
                                    "MessageEvent on its active branch)")
    llm = (state.get("agent") or {}).get("llm") or {}
    trace = Trace(trace_id=str(state.get("id") or conversation.name), source_format=FORMAT, path=str(conversation),
                  messages=messages, tools=_tools(branch), times=times, resets=resets,
                  model=llm.get("model") if isinstance(llm.get("model"), str) else None)
    _usage(trace, responses, reader.usages(state, conversation / BASE_STATE))
    if isinstance(state.get("execution_status"), str):
        trace.outcome = {"execution_status": state["execution_status"]}
    return trace


def _tools(branch: list[Event]) -> list[dict[str, Any]]:
    """The first system prompt's tools: name and description as recorded, parameters not recorded."""
    prompt = next((event for event in branch if event.kind == "SystemPromptEvent"), None)
    if prompt is None:
        return []
    return [{"type": "function", "function": {"name": tool["title"], "description": tool["description"],
                                              "parameters": dict(EMPTY_PARAMETERS)}}
            for tool in prompt.raw.get("tools") or []]


def _usage(trace: Trace, responses: dict[int, str], usages: dict[str, list[dict[str, Any]]]) -> None:
    """Each response's recorded usage, and the total input of the LLMs that made them."""
    owner: dict[str, tuple[str, dict[str, Any]]] = {}
    for usage_id, records in usages.items():
        for record in records:
            owner.setdefault(record.get("response_id") or "", (usage_id, record))
    callers = set()
    for index, response_id in responses.items():
        if response_id in owner:
            usage_id, record = owner[response_id]
            callers.add(usage_id)
            trace.usage[index] = {"input_tokens": record["prompt_tokens"], "cached_tokens": record["cache_read_tokens"],
                                  "cache_write_tokens": record["cache_write_tokens"],
                                  "output_tokens": record["completion_tokens"]}
            trace.model = trace.model or record.get("model") or None
    if callers:
        trace.recorded_input_tokens = sum(record["prompt_tokens"] for usage_id in sorted(callers)
                                          for record in usages[usage_id])


def _unix_time(event: Event) -> float:
    """An event's timestamp in Unix seconds; one without a zone is read as UTC (module docstring)."""
    stamp = event.raw.get("timestamp")
    try:
        moment = datetime.fromisoformat(stamp)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise event.error(f"timestamp {stamp!r} is not an ISO 8601 time") from None
    return (moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)).timestamp()


# ----- the plain path: the JSON by its documented fields

class PlainReader:
    """Reads the events' fields as the SDK's models define them, without the SDK."""

    def check(self, event: Event) -> None:
        if event.kind not in KNOWN:
            raise unknown_kind(event, KNOWN)
        need: Callable[..., Any] = _needs(event)
        if event.kind == "SystemPromptEvent":
            need("system_prompt", "text", kind=str)
            for tool in need("tools", kind=list):
                if not (isinstance(tool, dict) and isinstance(tool.get("title"), str)
                        and isinstance(tool.get("description"), str)):
                    raise event.error("each of `tools` needs a string `title` and `description`")
        elif event.kind == "MessageEvent":
            if need("llm_message", "role", kind=str) not in ("system", "user", "assistant", "tool"):
                raise event.error(f"llm_message.role {event.raw['llm_message']['role']!r} is not an LLM role")
            _parts(event, need("llm_message", "content", kind=list))
        elif event.kind == "ActionEvent":
            need("llm_response_id", kind=str)
            _parts(event, need("thought", kind=list))
            for key in ("id", "name", "arguments"):
                need("tool_call", key, kind=str)
        elif event.kind in OBSERVATIONS:
            need("tool_call_id", kind=str)
            need("tool_name", kind=str)
            if event.kind == "ObservationEvent":
                _parts(event, need("observation", "content", kind=list))
            else:
                need("rejection_reason" if event.kind == "UserRejectObservation" else "error", kind=str)
        elif event.kind == CONDENSATION:
            need("forgotten_event_ids", kind=list)

    def condense(self, view: list[Event], condensation: Event) -> list[Event]:
        """Condensation.apply (event/condenser.py): forgotten events out, the summary in at its offset."""
        forgotten = set(condensation.raw["forgotten_event_ids"])
        after = [event for event in view if event.id not in forgotten]
        summary, offset = condensation.raw.get("summary"), condensation.raw.get("summary_offset")
        if summary is not None and offset is not None:
            after.insert(offset, Event({"id": f"{condensation.id}-summary", "kind": SUMMARY, "summary": summary},
                                       condensation.path))
        return after

    def messages(self, grouped: list[Group]) -> list[Message]:
        return [_plain_message(group) for group in grouped]

    def usages(self, state: dict[str, Any], path: Path) -> dict[str, list[dict[str, Any]]]:
        metrics = ((state.get("stats") or {}).get("usage_to_metrics") or {})
        out = {}
        for usage_id, record in metrics.items():
            usages = (record.get("token_usages") or []) if isinstance(record, dict) else None
            if not (isinstance(usages, list) and all(isinstance(u, dict) and all(
                    isinstance(u.get(key, 0), int) for key in ("prompt_tokens", "completion_tokens", "cache_read_tokens",
                                                              "cache_write_tokens")) for u in usages)):
                raise TraceError(path, f"stats.usage_to_metrics[{usage_id!r}].token_usages is a list of token "
                                       "usages with integer counts")
            out[usage_id] = [{"prompt_tokens": 0, "completion_tokens": 0, "cache_read_tokens": 0,
                              "cache_write_tokens": 0, **usage} for usage in usages]
        return out


def _needs(event: Event) -> Callable[..., Any]:
    """A getter of a nested field that refuses the event when it is absent or of another type."""
    def need(*keys: str, kind: type) -> Any:
        value: Any = event.raw
        for key in keys:
            value = value.get(key) if isinstance(value, dict) else None
        if not isinstance(value, kind):
            raise event.error(f"`{'.'.join(keys)}` must be a {kind.__name__}, got {type(value).__name__}")
        return value
    return need


def _parts(event: Event, parts: list[Any]) -> None:
    if not all(isinstance(part, dict) and (part.get("type") != "text" or isinstance(part.get("text"), str))
               for part in parts):
        raise event.error("content parts are objects, text parts with a string `text`")


def _texts(parts: list[dict[str, Any]] | None) -> list[str]:
    """The text parts' texts (TextContent); images are left out, as the SDK's string serializer does."""
    return [part["text"] for part in parts or [] if part.get("type") == "text"]


def _plain_message(group: Group) -> Message:
    """The message a group of events becomes, as each event's to_llm_message and events_to_messages make it."""
    first = group[0].raw
    kind = group[0].kind
    if kind == "SystemPromptEvent":
        return chat("system", _texts([first["system_prompt"], *([first["dynamic_context"]]
                                                               if first.get("dynamic_context") else [])]))
    if kind == "ActionEvent":
        return chat("assistant", _texts(first["thought"]), tool_calls=[
            (event.raw["tool_call"]["id"], event.raw["tool_call"]["name"], event.raw["tool_call"]["arguments"])
            for event in group])
    if kind == "ObservationEvent":
        observation = first["observation"]
        header = [ERROR_HEADER] if observation.get("is_error") else []
        return chat("tool", header + _texts(observation["content"]) + _texts(first.get("extended_content")),
                    tool_call_id=first["tool_call_id"], name=first["tool_name"])
    if kind == "UserRejectObservation":  # observation.py UserRejectObservation.to_llm_message
        return chat("tool", [f"Action rejected: {first['rejection_reason']}"], tool_call_id=first["tool_call_id"],
                    name=first["tool_name"])
    if kind == "AgentErrorEvent":
        return chat("tool", [first["error"]], tool_call_id=first["tool_call_id"], name=first["tool_name"])
    texts: list[str] = []
    for event in group:  # MessageEvents and summaries, merged when they are plain user turns
        message = event.raw.get("llm_message") or {}
        texts += [event.raw["summary"]] if event.kind == SUMMARY else (
            _texts(message.get("content")) + _texts(event.raw.get("extended_content")))
    message = first.get("llm_message") or {}
    calls = [(call["id"], call["name"], call["arguments"]) for call in message.get("tool_calls") or []]
    return chat(group[0].role(), texts, tool_calls=calls, tool_call_id=message.get("tool_call_id"),
                name=message.get("name"))
