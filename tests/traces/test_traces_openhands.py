"""OpenHands conversations (openhands-sdk persisted event logs) as traces: harness.traces.openhands_events.

Sources (openhands-sdk 1.58.2): conversation/persistence_const.py and event_store.py (layout, index
order), conversation/state.py (active branch), event/base.py `events_to_messages` (one message per LLM
response's actions, user messages merged), event/llm_convertible/*.py (each event's message),
event/condenser.py (Condensation.apply, the summary as a user message), context/view/view.py (View),
llm/utils/metrics.py and telemetry.py (token usage per response id). The fixtures under
tests/fixtures/traces/openhands/conversations/ were written by the SDK itself (make_logs.py there).
The plain path runs everywhere; the SDK path where the `openhands` extra is installed (Python >= 3.12).
"""
from __future__ import annotations

import dataclasses
import json
import shutil
import time
from pathlib import Path

import pytest

from harness.cli import main as cli
from harness.traces import FORMAT_MODULES, NoTrace, TraceError, format_module, load_traces, read_head, trace_files
from harness.traces import openhands_events
from harness.traces.openhands_events import read_conversation
from strategies.adapters import OPENHANDS_SDK
from tests.adapter_helpers import requires

FIXTURES = Path(__file__).parents[1] / "fixtures" / "traces"
CONVERSATIONS = FIXTURES / "openhands" / "conversations"
LOOKUP, REJECT = CONVERSATIONS / "lookup", CONVERSATIONS / "reject"
needs_sdk = requires(OPENHANDS_SDK)
PATHS = [pytest.param(False, id="plain"), pytest.param(True, id="sdk", marks=needs_sdk)]


# ----- synthetic conversations, shaped as openhands-sdk writes them (valid for its own models)

def eid(n: int) -> str:
    return f"{n:08x}-0000-4000-8000-000000000000"


def ev(n: int, kind: str, **fields) -> dict:
    return {"id": eid(n), "timestamp": f"2026-01-01T00:00:{n:02d}", "kind": kind, **fields}


def text(value: str) -> list[dict]:
    return [{"type": "text", "text": value}]


def system(n: int = 0) -> dict:
    return ev(n, "SystemPromptEvent", source="agent", system_prompt={"type": "text", "text": "You are an agent."},
              tools=[])


def user(n: int, value: str) -> dict:
    return ev(n, "MessageEvent", source="user", llm_message={"role": "user", "content": text(value)})


def reply(n: int, value: str) -> dict:
    return ev(n, "MessageEvent", source="agent", llm_message={"role": "assistant", "content": text(value)},
              llm_response_id=f"resp-{n}")


def action(n: int, call: str, response: str | None = None, thought: str = "") -> dict:
    return ev(n, "ActionEvent", source="agent", thought=text(thought) if thought else [], tool_name="think",
              tool_call_id=call, tool_call={"id": call, "name": "think", "arguments": "{}", "origin": "completion"},
              llm_response_id=response or f"resp-{n}", action={"kind": "ThinkAction", "thought": "t"})


def result(n: int, call: str, of: int, value: str) -> dict:
    return ev(n, "ObservationEvent", source="environment", tool_name="think", tool_call_id=call, action_id=eid(of),
              observation={"kind": "ThinkObservation", "content": text(value), "is_error": False})


def condensation(n: int, forgotten: list[int | str], summary: str | None, offset: int | None) -> dict:
    ids = [eid(i) if isinstance(i, int) else i for i in forgotten]
    return ev(n, "Condensation", source="environment", forgotten_event_ids=ids, summary=summary,
              summary_offset=offset, llm_response_id=f"summary-{n}")


def write(tmp_path: Path, events: list[dict], state: dict | None = None, name: str = "conv") -> Path:
    conversation = tmp_path / name
    (conversation / "events").mkdir(parents=True)
    (conversation / "base_state.json").write_text(json.dumps({"id": name, **(state or {})}), encoding="utf-8")
    for index, event in enumerate(events):
        (conversation / "events" / f"event-{index:05d}-{event['id']}.json").write_text(json.dumps(event),
                                                                                      encoding="utf-8")
    return conversation


@pytest.fixture
def tokyo(monkeypatch):
    """The reading machine in another time zone than UTC."""
    monkeypatch.setenv("TZ", "Asia/Tokyo")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def event_file(conversation: Path, index: int) -> Path:
    return next((conversation / "events").glob(f"event-{index:05d}-*.json"))


def roles(trace) -> list[str]:
    return [m["role"] for m in trace.messages]


def names(message: dict) -> list[str]:
    return [call["function"]["name"] for call in message.get("tool_calls", [])]


# ----- the SDK-written fixtures

@pytest.mark.parametrize("sdk", PATHS)
def test_a_conversation_is_the_messages_the_llm_was_sent(sdk):
    """Rule (event/base.py events_to_messages; event/llm_convertible/*): system prompt, user message, one
    assistant message per LLM response (two parallel calls: two ActionEvents, one message, content None),
    the thought as content, observations and the agent's error for an unknown tool as tool messages."""
    trace = read_conversation(LOOKUP, sdk=sdk)
    assert roles(trace) == ["system", "user", "assistant", "tool", "assistant", "tool", "tool", "assistant", "tool",
                            "system", "user", "assistant", "tool", "assistant", "tool", "assistant", "tool",
                            "assistant", "tool", "system", "user", "assistant"]
    assert trace.messages[0]["content"].startswith("<SOUL>")
    assert trace.messages[2]["content"] == "I will look up alpha first." and names(trace.messages[2]) == ["lookup"]
    assert trace.messages[4]["content"] is None and names(trace.messages[4]) == ["lookup", "lookup"]
    assert [trace.messages[i]["tool_call_id"] for i in (5, 6)] == ["toolu_b1", "toolu_g1"]
    assert trace.messages[6] == {"role": "tool", "content": "gamma → 日本 🚀", "tool_call_id": "toolu_g1",
                                 "name": "lookup"}
    assert trace.messages[12]["content"].startswith("Tool 'nosuch' not found")
    assert trace.messages[14]["content"] == "[An error occurred during execution.]\n\nunknown key 'epsilon'"
    assert trace.messages[21]["content"] == "beta is 7." and "tool_calls" not in trace.messages[21]
    assert trace.trace_id == json.loads((LOOKUP / "base_state.json").read_text())["id"]
    assert trace.model == "anthropic/claude-sonnet-4-5-20250929" and trace.outcome == {"execution_status": "finished"}
    assert [t["function"]["name"] for t in trace.tools] == ["lookup", "finish", "think"]
    assert trace.tools[0]["function"]["parameters"] == {"type": "object", "properties": {}}


@pytest.mark.parametrize("sdk", PATHS)
def test_the_condensation_is_a_reset_before_the_kept_tail(sdk):
    """Rule (event/condenser.py Condensation.apply, keep_first=2): after the condensation the agent sent the
    head (system prompt, first user message), the summary (a user message, merged with the user message
    before it as events_to_messages merges them) and the kept tail; the reset sits where the tail starts,
    with copies of head and summary, dated by the tail's first message."""
    trace = read_conversation(LOOKUP, sdk=sdk)
    assert trace.resets == {9: "condensation", 19: "condensation"}
    assert trace.messages[9] == trace.messages[19] == trace.messages[0]
    task, summary = trace.messages[1]["content"], ("USER_CONTEXT: find alpha, beta, gamma, delta. COMPLETED: "
                                                   "alpha=ALPHA-42, beta=7, gamma=日本. PENDING: delta.")
    assert trace.messages[10]["content"] == f"{task}\n{summary}"
    assert names(trace.messages[11]) == ["nosuch"]  # the first one's kept tail: the last action and its error
    assert trace.times[9] == trace.times[10] == trace.times[11]
    assert trace.messages[20]["content"] == f"{task}\n{summary}\nWhat was beta?"  # the second kept the question
    assert trace.times[19] == trace.times[20] > trace.times[18]


@pytest.mark.parametrize("sdk", PATHS)
def test_content_parts_are_joined_as_the_sdk_sends_them_as_a_string(sdk, tmp_path):
    """Rule (llm/message.py string serializer: text parts joined by newlines, images left out; system.py: the
    dynamic context a second part; message.py/observation.py: extended content after the content; schema.py:
    an error observation starts with its header)."""
    prompt = system()
    prompt["dynamic_context"] = {"type": "text", "text": "Repository: demo"}
    asked = user(1, "look")
    asked["llm_message"]["content"].append({"type": "image", "image_urls": ["https://example.org/a.png"]})
    asked["extended_content"] = text("Skill: be brief")
    failed = result(3, "c1", 2, "boom")
    failed["observation"]["is_error"] = True
    trace = read_conversation(write(tmp_path, [prompt, asked, action(2, "c1", thought="try"), failed,
                                               reply(4, "done")]), sdk=sdk)
    assert [m["content"] for m in trace.messages] == [
        "You are an agent.\nRepository: demo", "look\nSkill: be brief", "try",
        "[An error occurred during execution.]\n\nboom", "done"]


@pytest.mark.parametrize("sdk", PATHS)
def test_usage_per_response_from_the_conversation_stats(sdk):
    """Rule (llm/utils/metrics.py TokenUsage per response_id; litellm's prompt_tokens holds cache reads and
    writes): input = prompt_tokens, cached = cache_read_tokens, cache writes = cache_write_tokens, output =
    completion_tokens, keyed by llm_response_id; recorded_input_tokens sums the agent LLM's calls, not the
    condenser's summary call."""
    trace = read_conversation(LOOKUP, sdk=sdk)
    state = json.loads((LOOKUP / "base_state.json").read_text())
    agent = state["stats"]["usage_to_metrics"]["agent"]["token_usages"]
    assert sorted(trace.usage) == [i for i, m in enumerate(trace.messages) if m["role"] == "assistant"]
    assert [trace.usage[i] for i in sorted(trace.usage)] == [
        {"input_tokens": u["prompt_tokens"], "cached_tokens": u["cache_read_tokens"],
         "cache_write_tokens": u["cache_write_tokens"], "output_tokens": u["completion_tokens"]} for u in agent]
    assert trace.usage[2]["cache_write_tokens"] > 0 and trace.usage[4]["cached_tokens"] > 0
    assert trace.recorded_input_tokens == sum(u["prompt_tokens"] for u in agent)


@pytest.mark.parametrize("sdk", PATHS)
def test_a_rejected_action_is_the_tool_result_the_llm_saw(sdk):
    """Rule (observation.py UserRejectObservation.to_llm_message): `Action rejected: <reason>`."""
    trace = read_conversation(REJECT, sdk=sdk)
    assert roles(trace) == ["system", "user", "assistant", "tool", "assistant"]
    assert trace.messages[3] == {"role": "tool", "content": "Action rejected: not now", "tool_call_id": "toolu_r1",
                                 "name": "lookup"}


@needs_sdk
@pytest.mark.parametrize("conversation", [LOOKUP, REJECT], ids=["lookup", "reject"])
def test_the_sdk_path_and_the_plain_path_give_the_same_trace(conversation):
    """Ours: the plain reader reproduces the SDK's own reading, field for field, on SDK-written logs (whose
    tool types this process does not define: the SDK path's stand-ins are exercised too)."""
    from openhands.sdk.tool import Observation
    from openhands.sdk.utils.models import get_known_concrete_subclasses

    assert "LookupObservation" not in {cls.__name__ for cls in get_known_concrete_subclasses(Observation)}
    sdk, plain = (dataclasses.asdict(read_conversation(conversation, sdk=flag)) for flag in (True, False))
    assert sdk == plain


@needs_sdk
def test_after_the_last_reset_the_trace_is_the_sdks_own_view():
    """Rule (context/view/view.py View.from_events; agent/utils.py prepare_llm_messages): the messages after
    the last reset are the SDK's View of the whole conversation turned into messages."""
    from openhands.sdk.context.view import View
    from openhands.sdk.event import Event, LLMConvertibleEvent

    from harness.traces.openhands_sdk import SdkReader

    reader = SdkReader()
    events = []
    for path in sorted((LOOKUP / "events").glob("event-*.json")):
        event = openhands_events.Event(json.loads(path.read_text()), path)
        events.append(Event.model_validate(reader.loadable(event.raw)))
    view = View.from_events(events)
    expected = [reader.message(m) for m in LLMConvertibleEvent.events_to_messages(view.events)]
    trace = read_conversation(LOOKUP, sdk=True)
    assert trace.messages[max(trace.resets):] == expected


@needs_sdk
def test_the_plain_path_knows_every_event_kind_the_sdk_defines():
    """Rule (openhands/sdk/event/): the kinds the plain reader accepts, and which of them the LLM sees
    (LLMConvertibleEvent), are the SDK's."""
    from openhands.sdk.event import Event, LLMConvertibleEvent
    from openhands.sdk.utils.models import get_known_concrete_subclasses

    kinds = get_known_concrete_subclasses(Event)
    assert sorted(openhands_events.KNOWN) == sorted(cls.__name__ for cls in kinds)
    assert sorted(openhands_events.SEEN) == sorted(c.__name__ for c in kinds if issubclass(c, LLMConvertibleEvent))


# ----- condensations beyond the fixture

@pytest.mark.parametrize("sdk", PATHS)
def test_a_later_condensation_forgets_the_earlier_summary(tmp_path, sdk):
    """Rule (Condensation.apply): a second condensation forgets the first summary (id `<condensation>-summary`)
    and the tail it kept; each condensation is a reset before its own tail."""
    first = eid(6) + "-summary"
    conversation = write(tmp_path, [system(), user(1, "task"), action(2, "c1"), result(3, "c1", 2, "r1"),
                                    action(4, "c2"), result(5, "c2", 4, "r2"), condensation(6, [2, 3], "S1", 2),
                                    action(7, "c3"), result(8, "c3", 7, "r3"),
                                    condensation(9, [first, 4, 5], "S2", 2), reply(10, "done")])
    trace = read_conversation(conversation, sdk=sdk)
    assert trace.resets == {4: "condensation", 8: "condensation"}
    assert roles(trace) == ["system", "user", "assistant", "tool"] + ["system", "user", "assistant", "tool"] + [
        "system", "user", "assistant", "tool", "assistant"]
    assert [trace.messages[i]["content"] for i in (5, 9)] == ["task\nS1", "task\nS2"]
    assert [trace.messages[i]["content"] for i in (7, 11)] == ["r2", "r3"]


@pytest.mark.parametrize("sdk", PATHS)
def test_a_head_past_the_first_user_message_is_not_copied(tmp_path, sdk):
    """Ours (what is lost): keep_first=4 keeps the first action and its result in the agent's view; the
    reset copies only the head's system and user messages (a copied response would be replayed again)."""
    conversation = write(tmp_path, [system(), user(1, "task"), action(2, "c1"), result(3, "c1", 2, "r1"),
                                    action(4, "c2"), result(5, "c2", 4, "r2"), action(6, "c3"),
                                    result(7, "c3", 6, "r3"), condensation(8, [4, 5], "S", 4), reply(9, "done")])
    trace = read_conversation(conversation, sdk=sdk)
    assert trace.resets == {6: "condensation"}
    assert [m["content"] for m in trace.messages[6:]] == ["You are an agent.", "task\nS", None, "r3", "done"]


@pytest.mark.parametrize("sdk", PATHS)
def test_a_condensation_keeping_no_tail_resets_where_it_happened(tmp_path, sdk):
    """Rule (hard_context_reset forgets all but the system prompt): with nothing kept after the head, the reset
    is at the condensation, the copies dated by it."""
    conversation = write(tmp_path, [system(), user(1, "task"), action(2, "c1"), result(3, "c1", 2, "r1"),
                                    condensation(4, [1, 2, 3], "S", 1), action(5, "c2"), result(6, "c2", 5, "r2"),
                                    reply(7, "done")])
    trace = read_conversation(conversation, sdk=sdk)
    assert trace.resets == {4: "condensation"}
    assert [m["content"] for m in trace.messages[4:6]] == ["You are an agent.", "S"]
    assert trace.times[4] == trace.times[5] == 1767225604.0


@pytest.mark.parametrize("sdk", PATHS)
def test_times_are_event_timestamps_in_unix_seconds(tmp_path, sdk, tokyo):
    """Ours (state.py writes datetime.now().isoformat(), no zone): a naive timestamp is read as UTC, whatever
    the reading machine's zone, a zoned one by its zone."""
    answer = reply(2, "hi")
    answer["timestamp"] = "2026-01-01T02:00:05+02:00"
    trace = read_conversation(write(tmp_path, [system(), user(1, "hello"), answer]), sdk=sdk)
    assert trace.times == {0: 1767225600.0, 1: 1767225601.0, 2: 1767225605.0}


# ----- the active branch

@pytest.mark.parametrize("sdk", PATHS)
def test_the_active_branch_is_read_from_the_leaf(tmp_path, sdk):
    """Rule (state.py _resolve_active_leaf, event_store.py path_to_root): from leaf_event_id up the parent_id
    chain; without it, from the last event; no parent_id at all is the linear chain of older logs."""
    events = [system(), user(1, "task"), reply(2, "r1"), user(3, "again"), reply(4, "r2"), user(5, "other"),
              reply(6, "r3")]
    for child, parent in ((1, 0), (2, 1), (3, 2), (4, 3), (5, 2), (6, 5)):
        events[child]["parent_id"] = eid(parent)
    chosen = read_conversation(write(tmp_path, events, {"leaf_event_id": eid(4)}, "chosen"), sdk=sdk)
    assert [m["content"] for m in chosen.messages[1:]] == ["task", "r1", "again", "r2"]
    latest = read_conversation(write(tmp_path, events, name="latest"), sdk=sdk)
    assert [m["content"] for m in latest.messages[1:]] == ["task", "r1", "other", "r3"]
    linear = read_conversation(write(tmp_path, [system(), user(1, "a"), reply(2, "b")], name="linear"), sdk=sdk)
    assert [m["content"] for m in linear.messages[1:]] == ["a", "b"]


# ----- directories: a conversation is one trace

def test_a_persistence_dir_gives_each_conversation_once():
    """Ours: trace_files lists a conversation directory as one candidate and does not descend into it; auto
    detection and load_traces read each conversation as one trace."""
    assert trace_files(CONVERSATIONS) == [LOOKUP, REJECT]
    assert read_head(LOOKUP) is None
    traces = load_traces([CONVERSATIONS])
    assert [t.source_format for t in traces] == ["openhands", "openhands"]
    assert load_traces([LOOKUP / "events"], fmt="openhands")[0].messages == traces[0].messages


def test_other_formats_beside_a_conversation_still_load(tmp_path):
    """Ours: a directory holding a conversation and another format's file gives both traces."""
    shutil.copytree(REJECT, tmp_path / "reject")
    shutil.copy(FIXTURES / "openai" / "single.json", tmp_path / "single.json")
    assert sorted(t.source_format for t in load_traces([tmp_path])) == ["openai", "openhands"]


def test_no_other_format_claims_an_event_file_or_the_state():
    """Ours: the other formats' detectors leave OpenHands files alone; this one claims event files only by
    their name (to refuse them with a pointer)."""
    files = [LOOKUP / "base_state.json", *sorted((LOOKUP / "events").glob("event-*.json"))]
    for fmt in FORMAT_MODULES:
        module = format_module(fmt)
        claimed = [path.name for path in files if module.detect(path, read_head(path))]
        assert claimed == ([path.name for path in files[1:]] if fmt == "openhands" else []), fmt


def test_an_event_file_alone_is_refused_with_its_conversation():
    """Refusal: one event file is not a conversation; the error names the directory to give."""
    path = event_file(LOOKUP, 0)
    with pytest.raises(TraceError, match="give the conversation's directory .*lookup"):
        load_traces([path])


# ----- refusals (exit 2 from the CLI)

@pytest.mark.parametrize("sdk", PATHS)
def test_refuses_an_event_file_that_is_not_json(tmp_path, sdk):
    """Refusal: an event file that is not JSON, named."""
    conversation = write(tmp_path, [system(), user(1, "hi"), reply(2, "hello")])
    event_file(conversation, 1).write_text("{not json", encoding="utf-8")
    with pytest.raises(TraceError, match=r"event-00001-.*\.json: not readable as JSON"):
        read_conversation(conversation, sdk=sdk)


@pytest.mark.parametrize("sdk", PATHS)
def test_refuses_an_event_without_id_and_kind(tmp_path, sdk):
    """Refusal: an event is an object with a string id and kind."""
    conversation = write(tmp_path, [system(), user(1, "hi"), reply(2, "hello")])
    event_file(conversation, 2).write_text(json.dumps({"id": eid(2)}), encoding="utf-8")
    with pytest.raises(TraceError, match=r"event-00002-.*: an OpenHands event is a JSON object with a string `id`"):
        read_conversation(conversation, sdk=sdk)


@pytest.mark.parametrize("sdk", PATHS)
def test_refuses_an_unknown_event_kind(tmp_path, sdk):
    """Refusal: a kind the SDK does not define (the reader cannot tell whether the LLM saw it)."""
    conversation = write(tmp_path, [system(), ev(1, "TelepathyEvent", source="user"), reply(2, "hello")])
    with pytest.raises(TraceError, match=r"event-00001-.*: event '00000001-.*' \(TelepathyEvent\): unknown event kind"):
        read_conversation(conversation, sdk=sdk)


@pytest.mark.parametrize("sdk", PATHS)
def test_refuses_an_observation_answering_no_action(tmp_path, sdk):
    """Refusal: a tool result whose call no earlier ActionEvent made."""
    conversation = write(tmp_path, [system(), user(1, "hi"), result(2, "nobody", 1, "r"), reply(3, "hello")])
    with pytest.raises(TraceError, match=r"event-00002-.*\(ObservationEvent\): it answers tool call 'nobody'"):
        read_conversation(conversation, sdk=sdk)


@pytest.mark.parametrize("sdk", PATHS)
def test_refuses_a_conversation_without_an_assistant_response(tmp_path, sdk):
    """Refusal: nothing to replay without an ActionEvent or agent MessageEvent (NoTrace: named alone it is
    refused; in a directory it is skipped, as a conversation created but never run)."""
    conversation = write(tmp_path, [system(), user(1, "hi")])
    with pytest.raises(NoTrace, match=r"conv: the conversation holds no assistant response"):
        read_conversation(conversation, sdk=sdk)
    shutil.copytree(REJECT, tmp_path / "reject")
    assert [t.source_format for t in load_traces([tmp_path])] == ["openhands"]


@pytest.mark.parametrize("sdk", PATHS)
def test_refuses_a_gap_in_the_event_indices(tmp_path, sdk):
    """Refusal (ours; the SDK stops reading at a gap): a missing index is a partial copy."""
    conversation = write(tmp_path, [system(), user(1, "hi"), reply(2, "hello")])
    event_file(conversation, 1).unlink()
    with pytest.raises(TraceError, match="event index 00001 is missing"):
        read_conversation(conversation, sdk=sdk)


@pytest.mark.parametrize("sdk", PATHS)
def test_refuses_a_timestamp_that_is_no_time(tmp_path, sdk):
    """Refusal: times come from timestamps; one that is not ISO 8601 is named."""
    answer = reply(2, "hello")
    answer["timestamp"] = "yesterday"
    with pytest.raises(TraceError, match=r"event-00002-.*: timestamp 'yesterday' is not an ISO 8601 time"):
        read_conversation(write(tmp_path, [system(), user(1, "hi"), answer]), sdk=sdk)


@pytest.mark.parametrize("sdk", PATHS)
def test_refuses_a_broken_parent_chain(tmp_path, sdk):
    """Refusal: a parent_id naming no event, and a parent_id chain that runs in a circle."""
    events = [system(), user(1, "hi"), reply(2, "hello")]
    events[2]["parent_id"] = eid(9)
    with pytest.raises(TraceError, match="event '00000009-.*' of the active branch is not in the log"):
        read_conversation(write(tmp_path, events, name="missing"), sdk=sdk)
    events[1]["parent_id"], events[2]["parent_id"] = eid(2), eid(1)
    with pytest.raises(TraceError, match="the parent_id chain runs in a circle"):
        read_conversation(write(tmp_path, events, name="circle"), sdk=sdk)


def test_refuses_a_malformed_event_on_the_plain_path(tmp_path):
    """Refusal (plain path): a field a message needs, missing or of another type, named."""
    broken = action(2, "c1")
    del broken["tool_call"]["id"]
    with pytest.raises(TraceError, match=r"event-00002-.*\(ActionEvent\): `tool_call.id` must be a str, got NoneType"):
        read_conversation(write(tmp_path, [system(), user(1, "hi"), broken]), sdk=False)


@needs_sdk
def test_refuses_what_the_sdk_refuses_on_the_sdk_path(tmp_path):
    """Refusal (SDK path): an event the SDK's Event model does not validate, with its message."""
    broken = action(2, "c1")
    del broken["tool_call"]["id"]
    with pytest.raises(TraceError, match=r"event-00002-.*\(ActionEvent\): openhands-sdk .* refuses it: .*tool_call"):
        read_conversation(write(tmp_path, [system(), user(1, "hi"), broken]), sdk=True)


@pytest.mark.parametrize("sdk", PATHS)
def test_refuses_a_state_that_is_not_json_or_malformed_usage(tmp_path, sdk):
    """Refusal: base_state.json not JSON; token usages that are not counts."""
    conversation = write(tmp_path, [system(), user(1, "hi"), reply(2, "hello")], name="notjson")
    (conversation / "base_state.json").write_text("{", encoding="utf-8")
    with pytest.raises(TraceError, match="base_state.json: not readable as JSON"):
        read_conversation(conversation, sdk=sdk)
    stats = {"usage_to_metrics": {"agent": {"token_usages": [{"response_id": "resp-2", "prompt_tokens": "many"}]}}}
    conversation = write(tmp_path, [system(), user(1, "hi"), reply(2, "hello")], {"stats": stats}, name="usage")
    with pytest.raises(TraceError, match="base_state.json: .*(token_usages|stats)"):
        read_conversation(conversation, sdk=sdk)


def test_the_cli_exits_2_naming_the_event(tmp_path, capsys):
    """Refusal through `ctxbench traces`: exit 2, the file and event named, nothing written."""
    conversation = write(tmp_path, [system(), user(1, "hi"), result(2, "nobody", 1, "r"), reply(3, "hello")])
    out = tmp_path / "out"
    assert cli(["traces", str(conversation), "--out", str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "event-00002-" in err and "answers tool call 'nobody'" in err and "Traceback" not in err
    assert not out.exists()
