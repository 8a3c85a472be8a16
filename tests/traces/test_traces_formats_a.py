"""Trace formats: OpenAI chat, Anthropic Messages, tau-bench results.

Each fixture under tests/fixtures/traces/<format>/ was written for these tests. The expected
traces follow the formats' real shapes: the OpenAI Chat Completions message schema, the Anthropic
Messages API content blocks, and what sierra-research/tau-bench's run() and agents write."""
from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest

from harness.traces import TraceError, check_trace
from harness.traces import anthropic_messages, openai_chat, tau_bench

FIXTURES = Path(__file__).parents[1] / "fixtures" / "traces"
MINE = {"openai": openai_chat, "anthropic": anthropic_messages, "tau-bench": tau_bench}
TAU_TOOLS = FIXTURES / "tau-bench" / "tool-calling-test-model-0.0_range_0-3_user-gpt-4o-llm_0101000000.json"
TAU_REACT = FIXTURES / "tau-bench" / "react-test-model-0.0_range_0-1_user-gpt-4o-llm_0101000000.json"


def _other_format_modules():
    """The other helpers' format modules, where this branch has them."""
    found = []
    for name in ("mini_swe_agent", "swe_agent", "inspect_log", "ctxbench_log"):
        try:
            found.append(importlib.import_module(f"harness.traces.{name}"))
        except ImportError:
            continue
    return [m for m in found if hasattr(m, "detect")]


def _head(path: Path):
    """What the registry hands detect(): the parsed JSON, the first JSONL record, or None."""
    try:
        text = path.read_text(encoding="utf-8")
        return json.loads(text.splitlines()[0] if path.suffix == ".jsonl" else text)
    except (ValueError, IndexError):
        return None


def _by_id(traces):
    return {t.trace_id: t for t in traces}


def _roles(trace):
    return [m["role"] for m in trace.messages]


GOOD = sorted(p for fmt in MINE for p in (FIXTURES / fmt).rglob("*.json*") if not p.name.startswith("bad_"))
BAD = sorted(p for fmt in MINE for p in (FIXTURES / fmt).rglob("bad_*"))


@pytest.mark.parametrize("path", GOOD + BAD, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_detection_picks_the_fixtures_own_format_and_no_other(path):
    """Exactly one of the three formats claims each of
    its fixtures, malformed ones included (so --format auto names the format that refuses it);
    the other helpers' modules, where present, claim none of them."""
    head = _head(path)
    claimed = [fmt for fmt, module in MINE.items() if module.detect(path, head)]
    expected = [] if path.name == "bad_line.jsonl" and head is None else [path.parent.name]
    assert claimed == expected
    for module in _other_format_modules():
        assert not module.detect(path, head), module.FORMAT


def test_detection_rejects_what_none_of_the_formats_holds():
    """Ours: no format claims an unparseable file, an empty list or a plain object."""
    for head in (None, [], {}, {"foo": 1}, [1, 2], "text"):
        assert not any(module.detect(Path("x.json"), head) for module in MINE.values())


def test_a_plain_text_conversation_is_openai_and_anthropic_only_with_its_markers():
    """Anthropic detection must not take OpenAI chat: user/assistant strings with
    no `system` field and no Anthropic block are OpenAI; a separate `system` makes it Anthropic."""
    plain = {"messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]}
    assert openai_chat.detect(Path("x.jsonl"), plain) and not anthropic_messages.detect(Path("x.jsonl"), plain)
    with_system = {"system": "s", **plain}
    assert anthropic_messages.detect(Path("x.jsonl"), with_system) and not openai_chat.detect(Path("x.jsonl"), with_system)


@pytest.mark.parametrize("path", GOOD, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_trace_of_a_good_fixture_passes_check_trace_with_string_content(path):
    """harness.traces contract: every format yields plain OpenAI messages with string content."""
    for trace in MINE[path.parent.name].read(path):
        assert check_trace(trace) is trace and trace.source_format == path.parent.name
        assert all(isinstance(m["content"], str) or m["role"] == "assistant" for m in trace.messages)


# --- OpenAI chat -------------------------------------------------------------------------------

def test_openai_jsonl_calls_split_over_messages_pair_by_id_and_keep_tools_model_and_usage():
    """OpenAI Chat Completions: tool_calls answered by `tool` messages with tool_call_id; a tool
    message without `name` is named after its call; `usage` (prompt_tokens, prompt_tokens_details.
    cached_tokens, completion_tokens) is that assistant message's recorded usage."""
    trace = _by_id(openai_chat.read(FIXTURES / "openai" / "conversations.jsonl"))["split-calls"]
    assert _roles(trace) == ["system", "user", "assistant", "assistant", "tool", "assistant", "tool", "assistant"]
    assert trace.messages[3]["tool_calls"][0]["id"] == trace.messages[4]["tool_call_id"] == "call_a"
    assert trace.messages[4]["name"] == "read_file"
    assert json.loads(trace.messages[5]["tool_calls"][0]["function"]["arguments"]) == {"path": "b.cfg"}
    assert trace.usage == {5: {"input_tokens": 120, "cached_tokens": 64, "cache_write_tokens": None, "output_tokens": 9}}
    assert trace.model == "gpt-test" and trace.tools[0]["function"]["name"] == "read_file"


def test_openai_parallel_calls_and_a_line_without_an_id_named_after_file_and_line():
    """A JSONL line's id/task_id/conversation_id names its trace, else file stem +
    line number; parallel calls answered out of order keep their ids."""
    traces = openai_chat.read(FIXTURES / "openai" / "conversations.jsonl")
    assert [t.trace_id for t in traces] == ["split-calls", "parallel", "conversations-3"]
    parallel = traces[1]
    assert [c["id"] for c in parallel.messages[1]["tool_calls"]] == ["w1", "w2"]
    assert [m["tool_call_id"] for m in parallel.messages[2:4]] == ["w2", "w1"]
    assert [m["name"] for m in parallel.messages[2:4]] == ["weather", "weather"]
    assert traces[2].tools == [] and traces[2].messages[1]["content"] == "「こんにちは」です — Ünïcödé ✓"


def test_openai_legacy_function_call_developer_role_and_content_parts():
    """OpenAI legacy forms: function_call / role function become a tool call and its result,
    developer becomes system, text parts join, an image part becomes a placeholder naming it;
    Responses-style usage (input_tokens / output_tokens) is read too."""
    (trace,) = openai_chat.read(FIXTURES / "openai" / "single.json")
    assert trace.trace_id == "single"
    assert _roles(trace) == ["system", "user", "assistant", "tool", "assistant"]
    assert trace.messages[1]["content"] == "What is in this picture?\n[image_url part]"
    call = trace.messages[2]["tool_calls"][0]
    assert call == {"id": "function_call_2", "type": "function",
                    "function": {"name": "describe_image", "arguments": '{"detail": "low"}'}}
    assert trace.messages[3] == {"role": "tool", "tool_call_id": "function_call_2", "name": "describe_image",
                                 "content": "a red bicycle"}
    assert trace.messages[4]["content"] == "A red bicycle."
    assert trace.usage[4]["input_tokens"] == 50 and trace.usage[4]["output_tokens"] == 5


def test_openai_list_of_conversations_mixes_objects_and_message_lists_with_a_long_tool_output():
    """A JSON list of conversations (objects with `messages`, or message lists);
    the long tool output is kept whole (the replay's window, not the reader, cuts it)."""
    traces = openai_chat.read(FIXTURES / "openai" / "long_output.json")
    assert [t.trace_id for t in traces] == ["long-log", "long_output-2"]
    assert len(traces[0].messages[2]["content"]) > 12_000
    assert _roles(traces[1]) == ["user", "assistant"]


def test_openai_refuses_an_anthropic_conversation_forced_on_it():
    """Ours: --format openai on Anthropic Messages says which format it is instead of misreading it."""
    with pytest.raises(TraceError, match="use --format anthropic"):
        openai_chat.read(FIXTURES / "anthropic" / "conversation.json")


# --- Anthropic Messages ------------------------------------------------------------------------

def test_anthropic_system_blocks_tool_use_results_thinking_and_mixed_user_message():
    """Anthropic Messages API: system separate (text blocks), tool_use -> tool call with JSON
    arguments, tool_result -> tool message named after its tool_use, a user message mixing results
    and text gives the tool messages first then the text, thinking blocks dropped (the API strips
    earlier turns' thinking from the context window), tools' input_schema become parameters and
    server tools without a schema are skipped."""
    (trace,) = anthropic_messages.read(FIXTURES / "anthropic" / "conversation.json")
    assert trace.trace_id == "conversation" and trace.model == "claude-test"
    assert _roles(trace) == ["system", "user", "assistant", "tool", "assistant", "tool", "user", "assistant"]
    assert trace.messages[0]["content"] == "You manage a small inventory."
    assert trace.messages[2]["content"] == "Checking SKU-17."
    assert trace.messages[2]["tool_calls"] == [{"id": "toolu_1", "type": "function",
                                                "function": {"name": "count", "arguments": '{"sku": "SKU-17"}'}}]
    assert trace.messages[3] == {"role": "tool", "tool_call_id": "toolu_1", "name": "count", "content": "17 units"}
    assert trace.messages[4]["content"] is None
    assert trace.messages[5]["content"] == "unknown SKU" and trace.messages[6]["content"] == "It might be SKU-24."
    assert [t["function"]["name"] for t in trace.tools] == ["count"]
    assert trace.tools[0]["function"]["parameters"]["properties"] == {"sku": {"type": "string"}}


def test_anthropic_usage_counts_cache_reads_and_writes_in_the_input():
    """Anthropic usage: input_tokens excludes cache_read_input_tokens and
    cache_creation_input_tokens, so the recorded input is their sum; it is keyed by the assistant
    message's index in the trace (after the system message)."""
    (trace,) = anthropic_messages.read(FIXTURES / "anthropic" / "conversation.json")
    assert trace.usage == {2: {"input_tokens": 240, "cached_tokens": 200, "cache_write_tokens": 10, "output_tokens": 12}}


def test_anthropic_jsonl_parallel_tool_use_unicode_image_and_long_output():
    """Anthropic: several tool_use blocks in one message are parallel calls; an image block becomes
    a placeholder; a record without id is named file stem + line."""
    traces = _by_id(anthropic_messages.read(FIXTURES / "anthropic" / "batch.jsonl"))
    assert list(traces) == ["parallel", "batch-2", "long-output"]
    parallel = traces["parallel"]
    assert _roles(parallel) == ["system", "user", "assistant", "tool", "tool", "assistant"]
    assert [c["id"] for c in parallel.messages[2]["tool_calls"]] == ["toolu_k", "toolu_q"]
    assert [m["tool_call_id"] for m in parallel.messages[3:5]] == ["toolu_q", "toolu_k"]
    unicode = traces["batch-2"]
    assert unicode.messages[0]["content"] == "Schreib »Grüße« auf Griechisch\n[image block]"
    assert unicode.messages[1]["content"] == "«Χαιρετισμοί» — ✓ 🚲" and unicode.tools == []
    assert len(traces["long-output"].messages[3]["content"]) > 12_000


# --- tau-bench ---------------------------------------------------------------------------------

def test_tau_bench_tool_calling_results_keep_reward_as_outcome_and_skip_errored_tasks():
    """tau-bench run.py: EnvRunResult {task_id, reward, info, traj, trial}; trace id task + trial;
    success is reward == 1 within 1e-6 (display_metrics); a task whose agent raised (traj [] and
    info.error) is skipped; the model comes from run()'s file name."""
    traces = tau_bench.read(TAU_TOOLS)
    assert [t.trace_id for t in traces] == ["0-trial0", "1-trial0", "0-trial1"]
    assert [t.outcome for t in traces] == [{"reward": 1.0, "success": True}, {"reward": 0.0, "success": False},
                                           {"reward": 0.9999999, "success": True}]
    assert {t.model for t in traces} == {"test-model"}
    first = traces[0]
    assert _roles(first) == ["system", "user", "assistant", "tool", "assistant", "tool", "assistant", "user"]
    assert first.messages[2]["tool_calls"][0]["id"] == first.messages[3]["tool_call_id"] == "call_u"
    assert "function_call" not in first.messages[2] and len(first.messages[5]["content"]) > 12_000
    assert traces[1].messages[1]["content"] == "Можно ли оплатить в иенах ¥? 🙂"


def test_tau_bench_react_text_actions_become_tool_calls_and_api_output_tool_results():
    """tau-bench chat_react_agent.py: the action is the JSON after the last `Action:`; a non-respond
    action's observation is a user message `API output: ...`: the pair becomes a tool call and a
    tool message; a `respond` action stays the assistant's text, its user reply stays a user message."""
    (trace,) = tau_bench.read(TAU_REACT)
    assert _roles(trace) == ["system", "user", "assistant", "tool", "assistant", "tool", "assistant", "user"]
    call = trace.messages[2]["tool_calls"][0]
    assert call["id"] == trace.messages[3]["tool_call_id"] == "react-2"
    assert call["function"]["name"] == "find_user" and json.loads(call["function"]["arguments"]) == {"zip": "02139"}
    assert trace.messages[2]["content"] == "Thought:\nI need the user id."
    assert trace.messages[3]["content"] == "ana_7" and trace.messages[3]["name"] == "find_user"
    assert trace.messages[5]["content"] == '{"ok": true}'
    assert "tool_calls" not in trace.messages[6] and '"respond"' in trace.messages[6]["content"]


def test_tau_bench_file_whose_every_task_errored_is_refused(tmp_path):
    """Ours: a result file with nothing to replay says so instead of yielding no traces silently."""
    path = tmp_path / "results.json"
    path.write_text(json.dumps([{"task_id": 0, "reward": 0.0, "info": {"error": "x"}, "traj": [], "trial": 0}]))
    with pytest.raises(TraceError, match="nothing to replay"):
        tau_bench.read(path)


# --- malformed files ---------------------------------------------------------------------------

@pytest.mark.parametrize("path, where", [
    ("openai/bad_content.json", "bad_content.json, trace 'bad_content', message 2: content must be"),
    ("openai/bad_orphan_tool.jsonl", "bad_orphan_tool.jsonl, trace 'orphan', message 3: tool result 'x9'"),
    ("openai/bad_line.jsonl", "bad_line.jsonl, trace 'bad_line-2': line 2 is not JSON"),
    ("openai/bad_call.json", "bad_call.json, trace 'no-call-id', message 1: a tool call needs an id"),
    ("anthropic/bad_role.json", "bad_role.json, trace 'bad_role', message 1: role must be one of user, assistant"),
    ("anthropic/bad_tool_result.json", "bad_tool_result.json, trace 'stray', message 4: tool_result 'toolu_9'"),
    ("anthropic/bad_block.jsonl", "bad_block.jsonl, trace 'bad_block-2', message 1: a tool_use block needs"),
    ("tau-bench/bad_traj.json", "bad_traj.json, trace '3-trial2', message 3: tool result 'call_2'"),
    ("tau-bench/bad_react.json", "bad_react.json, trace '4-trial0', message 2: an `API output:` observation"),
])
def test_a_malformed_file_is_refused_naming_file_trace_and_message_index(path, where):
    """A malformed trace is refused with file, trace and message index (the index
    in the file's own message list)."""
    with pytest.raises(TraceError) as refused:
        MINE[Path(path).parent.name].read(FIXTURES / path)
    assert where in str(refused.value)


def test_tau_bench_reads_a_results_file_of_the_real_shape_written_by_run(tmp_path):
    """tau-bench's litellm message.model_dump() carries extra keys (function_call: None,
    provider_specific_fields): they are dropped, the message keeps role, content, tool_calls."""
    call = {"id": "c1", "type": "function", "function": {"name": "think", "arguments": "{}"}}
    traj = [{"role": "system", "content": "p"}, {"role": "user", "content": "q"},
            {"role": "assistant", "content": None, "tool_calls": [call], "function_call": None,
             "provider_specific_fields": {"refusal": None}},
            {"role": "tool", "tool_call_id": "c1", "name": "think", "content": ""}]
    path = tmp_path / "r.json"
    path.write_text(json.dumps([{"task_id": 9, "reward": 0.0, "info": {}, "traj": traj, "trial": 0}]))
    (trace,) = tau_bench.read(path)
    assert trace.messages[2] == {"role": "assistant", "content": None, "tool_calls": [call]}
    assert trace.model is None
