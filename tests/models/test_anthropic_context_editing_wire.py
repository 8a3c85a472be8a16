"""Anthropic's server-side context editing (`clear_tool_uses_20250919`) in the simulated provider and on the wire.

Sources: Anthropic's "Context editing" docs (https://platform.claude.com/docs/en/build-with-claude/context-editing:
"Configuration options for tool result clearing", "Context editing response", "Token counting", the prompt-caching
note); the anthropic SDK 2.17's types (beta_clear_tool_uses_20250919_edit_param.py and its trigger, keep and
clear_at_least params, beta_clear_tool_uses_20250919_edit_response.py, beta_count_tokens_context_management_response.py);
litellm 1.110.2: anthropic/chat/transformation.py (the beta header `_ensure_context_management_beta_header`, the response
field in `provider_specific_fields`) and its polyfill of the edit where the docs are silent
(llms/anthropic/messages/context_management/constants.py, placeholders.py, editors/clear_tool_uses.py)."""
from __future__ import annotations

import json
from pathlib import Path

import httpx
import litellm
import pytest

from harness.cli import main
from harness.models.cache_marks import Breakpoint, CacheMarks
from harness.models.llm import LLMClient, LLMProfile
from harness.models.mock import provider as mock_provider
from harness.models.mock.compaction import CompactionRequestError
from harness.models.mock.context_editing import PLACEHOLDER, ClearEdit, clear, input_tokens, read_clear
from harness.models.mock.provider import MockConfig, MockProvider
from harness.models.provider_compaction import ANTHROPIC_CONTEXT_BETA, applied_edits, FIELDS
from strategies import StrategySpec, build_strategy
from tests.conftest import matches_golden

GOLDEN = Path(__file__).parents[1] / "goldens" / "anthropic_context_editing" / "requests.json"
EDIT = "clear_tool_uses_20250919"
SYSTEM = {"role": "system", "content": "You are a careful agent."}
TASK = {"role": "user", "content": "Read the rows, then submit the total."}
TOOLS = [{"type": "function", "function": {"name": "read", "description": "Read a row.",
                                           "parameters": {"type": "object", "properties": {}}}}]


def spec(**edit) -> dict:
    return {"context_management": {"edits": [{"type": EDIT, **edit}]}}


def tokens(value: int) -> dict:
    return {"type": "input_tokens", "value": value}


def uses(value: int) -> dict:
    return {"type": "tool_uses", "value": value}


def conversation(turns: int = 8, words: int = 300, tool: str = "read", start: int = 0) -> list[dict]:
    """`turns` tool uses of `tool`, each result about `words` tokens, ids `<tool>_<n>`."""
    messages = []
    for index in range(start, start + turns):
        call = {"id": f"{tool}_{index}", "type": "function",
                "function": {"name": tool, "arguments": json.dumps({"row": index})}}
        messages.append({"role": "assistant", "content": "", "tool_calls": [call]})
        messages.append({"role": "tool", "tool_call_id": f"{tool}_{index}", "name": tool,
                         "content": f"row {index}: " + "lorem ipsum " * (words // 2)})
    return messages


def seen_by_the_model(monkeypatch, messages, options, **config) -> tuple[list[dict], dict, dict]:
    """What the mock agent was handed for this request, its reply and the usage."""
    seen: list[list[dict]] = []

    def respond(visible, tools, **kwargs):
        seen.append(list(visible))
        return {"role": "assistant", "content": "done"}

    monkeypatch.setattr(mock_provider, "respond", respond)
    reply, usage = MockProvider().serve("mock/agent", messages, TOOLS, MockConfig(**{"window": 1_000_000, **config}),
                                        seed=0, options=options)
    return seen[0], reply, usage


def cleared_ids(visible: list[dict]) -> list[str]:
    return [m["tool_call_id"] for m in visible if m["role"] == "tool" and m["content"] == PLACEHOLDER]


# ----- the edit as the API reads it

def test_the_edit_defaults_are_anthropics():
    """Docs, "Configuration options": trigger 100,000 input tokens, keep 3 tool uses, clear_at_least none,
    exclude_tools none, clear_tool_inputs false."""
    assert read_clear(spec()["context_management"]) == ClearEdit(trigger=100_000, trigger_unit="input_tokens", keep=3,
                                                                 clear_at_least=0, exclude_tools=frozenset(),
                                                                 clear_inputs=False)
    assert read_clear(None) is None and read_clear({"edits": [{"type": "compact_20260112"}]}) is None


@pytest.mark.parametrize("edit, field", [
    ({"keep": tokens(3)}, "keep"),  # keep counts tool uses only (BetaToolUsesKeepParam)
    ({"trigger": {"type": "messages", "value": 3}}, "trigger"),  # input_tokens or tool_uses (the edit param's Trigger)
    ({"clear_at_least": uses(2)}, "clear_at_least"),  # input tokens only (BetaInputTokensClearAtLeastParam)
    ({"trigger": tokens(-1)}, "trigger.value"),
    ({"exclude_tools": "read"}, "exclude_tools"),
    ({"clear_tool_inputs": "yes"}, "clear_tool_inputs"),
    ({"placeholder": "x"}, "placeholder"),
])
def test_a_malformed_edit_is_refused_naming_the_field(edit, field):
    """The SDK's types say what each field takes; the API answers a malformed one with a 400 naming it."""
    with pytest.raises(CompactionRequestError, match=f"edits\\[0\\]\\.{field}"):
        read_clear(spec(**edit)["context_management"])
    with pytest.raises(litellm.BadRequestError, match=field):
        MockProvider().serve("mock/agent", [SYSTEM, TASK], [], MockConfig(), seed=0, options=spec(**edit))


def test_the_edit_twice_is_refused():
    twice = {"edits": [{"type": EDIT}, {"type": EDIT}]}
    with pytest.raises(CompactionRequestError, match="given twice"):
        read_clear(twice)


# ----- what the provider does to the request

def test_below_the_trigger_the_model_sees_the_request_whole_and_no_edit_is_reported(monkeypatch):
    """Docs: "Once the prompt exceeds this threshold, clearing will begin"."""
    messages = [SYSTEM, TASK, *conversation()]
    visible, reply, _ = seen_by_the_model(monkeypatch, messages, spec(trigger=tokens(100_000)))
    assert visible == messages and applied_edits(reply.get(FIELDS)) is None


def test_past_the_trigger_the_oldest_results_become_the_placeholder_and_the_last_3_uses_stay(monkeypatch):
    """Docs: the oldest tool results are cleared first, in chronological order, replaced with placeholder text; keep
    3 tool uses by default; only results, not the calls, by default. The text is litellm's (constants.py:10): the
    docs do not publish the API's. Context-faithful: the model never sees a cleared result's content."""
    messages = [SYSTEM, TASK, *conversation(8)]
    visible, reply, usage = seen_by_the_model(monkeypatch, messages, spec(trigger=tokens(1_000)))
    assert cleared_ids(visible) == [f"read_{n}" for n in range(5)]
    assert not any("row 2:" in str(m.get("content")) for m in visible)
    assert [m.get("tool_calls") for m in visible] == [m.get("tool_calls") for m in messages]  # inputs kept
    applied = applied_edits(reply[FIELDS])["applied_edits"]
    assert applied == [{"type": EDIT, "cleared_tool_uses": 5, "cleared_input_tokens":
                        input_tokens(messages, TOOLS) - usage["prompt_tokens"]}]
    assert applied[0]["cleared_input_tokens"] > 1_000


def test_the_window_is_checked_on_the_edited_request():
    """Docs: the edit is applied before the prompt reaches the model, "helping you ... stay within context window
    limits": a history over the window passes once the edit leaves it under."""
    messages = [SYSTEM, TASK, *conversation(20)]
    window = input_tokens(messages, []) - 1_000
    with pytest.raises(litellm.ContextWindowExceededError):
        MockProvider().serve("mock/agent", messages, [], MockConfig(window=window), seed=0, reply={"role": "assistant",
                                                                                                "content": "x"})
    _, usage = MockProvider().serve("mock/agent", messages, [], MockConfig(window=window), seed=0,
                                    reply={"role": "assistant", "content": "x"}, options=spec(trigger=tokens(5_000)))
    assert usage["prompt_tokens"] < window


def test_clear_at_least_clears_nothing_when_it_cannot_be_reached(monkeypatch):
    """Docs: "If the API can't clear at least the specified amount, the strategy will not be applied"."""
    messages = [SYSTEM, TASK, *conversation(5)]
    visible, reply, _ = seen_by_the_model(monkeypatch, messages, spec(trigger=tokens(1_000),
                                                                      clear_at_least=tokens(100_000)))
    assert visible == messages and applied_edits(reply.get(FIELDS)) is None


def test_clear_at_least_clears_in_whole_batches_oldest_first(monkeypatch):
    """litellm clear_tool_uses.py:210-220 (the API's selection, its docstring says): batches each freeing
    `clear_at_least`, the incomplete last one left, so the cleared prefix only grows from request to request."""
    messages = [SYSTEM, TASK, *conversation(10)]
    visible, _, _ = seen_by_the_model(monkeypatch, messages, spec(trigger=tokens(1_000), clear_at_least=tokens(550)))
    assert cleared_ids(visible) == [f"read_{n}" for n in range(6)]  # ~300 tokens each: batches of two, of 7 eligible


def test_excluded_tools_are_never_cleared_nor_counted_toward_keep(monkeypatch):
    """Docs: exclude_tools' "tool uses and results should never be cleared"; litellm clear_tool_uses.py:386-391:
    `keep` counts the clearable uses only."""
    messages = [SYSTEM, TASK, *conversation(4, tool="read"), *conversation(4, tool="note", start=4)]
    visible, _, _ = seen_by_the_model(monkeypatch, messages, spec(trigger=tokens(1_000), exclude_tools=["note"]))
    assert cleared_ids(visible) == ["read_0"]  # the last 3 reads kept; no note cleared


@pytest.mark.parametrize("inputs, blanked", [(True, ["read_0", "read_1", "note_4"]), (["note"], ["note_4"])])
def test_clear_tool_inputs_clears_the_cleared_uses_parameters(monkeypatch, inputs, blanked):
    """Docs: clear_tool_inputs clears the tool call parameters too (default false); SDK: a bool or a list of tool
    names. litellm clear_tool_uses.py:338-352: a cleared input becomes {}."""
    messages = [SYSTEM, TASK, *conversation(2), *conversation(4, tool="note", start=4)]
    visible, _, _ = seen_by_the_model(monkeypatch, messages, spec(trigger=tokens(1_000), clear_tool_inputs=inputs))
    calls = [call for m in visible if m["role"] == "assistant" for call in m["tool_calls"]]
    assert [call["id"] for call in calls if call["function"]["arguments"] == "{}"] == blanked
    assert cleared_ids(visible) == ["read_0", "read_1", "note_4"]


def test_a_tool_uses_trigger_counts_clearable_uses(monkeypatch):
    """SDK: the trigger may be {"type": "tool_uses"}; litellm clear_tool_uses.py:264-267: more uses than its value."""
    messages = [SYSTEM, TASK, *conversation(5)]
    visible, _, _ = seen_by_the_model(monkeypatch, messages, spec(trigger=uses(5)))
    assert cleared_ids(visible) == []
    visible, _, _ = seen_by_the_model(monkeypatch, messages, spec(trigger=uses(4)))
    assert cleared_ids(visible) == ["read_0", "read_1"]


def test_tiny_results_and_the_latest_result_are_never_cleared(monkeypatch):
    """litellm clear_tool_uses.py:40-41, 180-187 (results of 1 to 46 bytes are neither counted nor cleared, as the
    API measured) and :290-303, 399-404 (the latest completed result is never cleared), even at keep 0."""
    tiny = [{"role": "assistant", "content": "", "tool_calls": [{"id": "ok_9", "type": "function",
                                                                "function": {"name": "read", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "ok_9", "name": "read", "content": "ok"}]
    messages = [SYSTEM, TASK, *conversation(3), *tiny, *conversation(1, start=5)]
    visible, _, _ = seen_by_the_model(monkeypatch, messages, spec(trigger=tokens(1), keep=uses(0)))
    assert cleared_ids(visible) == ["read_0", "read_1", "read_2"]


def test_the_selection_is_litellms_on_the_same_history():
    """Checked against the real code: litellm's polyfill (editors/clear_tool_uses.py
    `apply_clear_tool_uses_20250919`) clears the same tool uses of the same history."""
    from litellm.llms.anthropic.messages.context_management.editors.clear_tool_uses import (
        apply_clear_tool_uses_20250919)
    from strategies.adapters.litellm_context_management import to_anthropic

    messages = [TASK, *conversation(3), *conversation(3, tool="note", start=3), *conversation(3, start=6)]
    for edit in ({"trigger": uses(2), "keep": uses(2)}, {"trigger": tokens(1), "exclude_tools": ["note"]},
                 {"trigger": tokens(1), "keep": uses(0), "clear_tool_inputs": ["note"]}):
        ours = clear(messages, read_clear(spec(**edit)["context_management"]), input_tokens(messages, None))
        theirs, _ = apply_clear_tool_uses_20250919(
            model="claude-sonnet-4-6", messages=[to_anthropic(m, n) for n, m in enumerate(messages)], tools=None,
            system=None, edit_spec={"type": EDIT, **edit})
        cleared = [block["tool_use_id"] for m in theirs for block in m["content"] if isinstance(block, dict)
                   and block.get("type") == "tool_result" and block["content"] == PLACEHOLDER]
        assert [messages[at]["tool_call_id"] for at in sorted(ours.edited) if messages[at]["role"] == "tool"] == cleared


def test_the_cache_reads_only_up_to_the_first_cleared_result_then_reuses_the_new_prefix():
    """Docs (context editing and prompt caching): clearing invalidates the cached prefix from where content is
    cleared, each clearing writes anew, "but subsequent requests can reuse the newly cached prefix"."""
    system = {"role": "system", "content": "Rules. " + "be careful " * 700}  # over the 1,024-token minimum
    provider, config = MockProvider(), MockConfig(window=1_000_000, session="cache")
    reply = {"role": "assistant", "content": "ok"}

    def send(messages, edit):
        marks = CacheMarks(breakpoints=(Breakpoint("message", 0), Breakpoint("message", len(messages) - 1)))
        return provider.serve("mock/agent", messages, [], config, seed=0, marks=marks, reply=reply, options=edit)[1]

    history = [system, TASK, *conversation(8)]
    edit = spec(trigger=tokens(3_000), clear_at_least=tokens(1_000))
    send(history[:-2], spec(trigger=tokens(1_000_000)))  # nothing cleared: the whole prefix is written
    first = send(history, edit)  # the edit clears the oldest results: only the system prompt is read
    assert first["prompt_tokens_details"]["cached_tokens"] == input_tokens([system], [])
    assert first["cache_creation_input_tokens"] == first["prompt_tokens"] - input_tokens([system], [])
    more = history + conversation(1, start=8)
    second = send(more, edit)  # the same results cleared: the prefix written last time is read
    assert second["prompt_tokens_details"]["cached_tokens"] == first["prompt_tokens"]


def test_token_counting_reports_the_count_after_the_edit_and_the_original():
    """Docs, "Token counting": `input_tokens` after the edit, `context_management.original_input_tokens` before."""
    messages = [SYSTEM, TASK, *conversation(8)]
    after, original = MockProvider().count_tokens(messages, TOOLS, spec(trigger=tokens(1_000)))
    assert original == input_tokens(messages, TOOLS) and 0 < after < original - 1_000
    assert MockProvider().count_tokens(messages, TOOLS, None) == (original, None)


# ----- on the wire

ANTHROPIC_REPLY = {
    "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-6",
    "content": [{"type": "text", "text": "42"}], "stop_reason": "end_turn", "stop_sequence": None,
    "usage": {"input_tokens": 30, "output_tokens": 2, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0},
    "context_management": {"applied_edits": [{"type": EDIT, "cleared_tool_uses": 8, "cleared_input_tokens": 50000}]}}


def test_the_request_carries_the_edit_and_its_beta_header_and_the_applied_edits_come_back(recording_server,
                                                                                         monkeypatch):
    """What leaves the process: `context_management` in the body, `anthropic-beta: context-management-2025-06-27`
    (litellm adds it); the response's `context_management` reaches the result (litellm keeps it in the message's
    `provider_specific_fields`), and never goes back into the history."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    url, sent = recording_server(ANTHROPIC_REPLY)
    client = LLMClient(LLMProfile(model="anthropic/claude-sonnet-4-6", api_base=url), session="s", seed=0)
    result = client.complete([SYSTEM, TASK], TOOLS, clock_s=0.0, options=spec(trigger=tokens(30_000)))
    assert sent[0]["headers"]["anthropic-beta"] == ANTHROPIC_CONTEXT_BETA
    assert sent[0]["body"]["context_management"] == spec(trigger=tokens(30_000))["context_management"]
    assert result.context_management == ANTHROPIC_REPLY["context_management"]
    assert FIELDS not in result.message


def served(server) -> LLMClient:
    return LLMClient(LLMProfile(model="anthropic/mock-agent", api_base=server.url.removesuffix("/v1")),
                     session="s", seed=0)


def test_the_anthropic_route_applies_the_edit_as_the_mock_does_in_process(mock_server, monkeypatch):
    """serve-mock's Messages API reads the edit off the wire, clears before the agent reads, and answers with
    `context_management.applied_edits`: the same reply, usage and applied edits as in process."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    messages, options = [SYSTEM, TASK, *conversation(8)], spec(trigger=tokens(1_000))
    remote = served(mock_server()).complete(messages, TOOLS, clock_s=0.0, options=options)
    local = LLMClient(LLMProfile(model="mock/agent"), session="s", seed=0).complete(messages, TOOLS, clock_s=0.0,
                                                                                   options=options)
    assert remote.context_management == local.context_management
    assert remote.context_management["applied_edits"][0]["cleared_tool_uses"] == 5
    assert remote.usage == local.usage and remote.message == local.message


def test_the_route_answers_with_the_field_and_counts_tokens_with_the_original(mock_server):
    server = mock_server()
    base = server.url.removesuffix("/v1")
    body = {"model": "claude-sonnet-4-6", "max_tokens": 100, "messages": [{"role": "user", "content": "hi"}],
            **spec(trigger=tokens(1))}
    refused = httpx.post(base + "/v1/messages", json=body)
    assert refused.status_code == 400 and ANTHROPIC_CONTEXT_BETA in refused.json()["error"]["message"]
    headers = {"anthropic-beta": ANTHROPIC_CONTEXT_BETA}
    assert "context_management" not in httpx.post(base + "/v1/messages", json=body, headers=headers).json()
    counted = httpx.post(base + "/v1/messages/count_tokens", json={k: v for k, v in body.items() if k != "max_tokens"},
                         headers=headers).json()
    assert counted["input_tokens"] == counted["context_management"]["original_input_tokens"]




def test_request_bodies_and_headers_match_the_golden(recording_server, monkeypatch):
    """What leaves the process under anthropic.context_editing (its defaults at a 200k window, and every option set)
    with the `auto` cache policy (regenerate with CTXBENCH_UPDATE_GOLDENS=1 after a deliberate change)."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    url, sent = recording_server(ANTHROPIC_REPLY)
    client = LLMClient(LLMProfile(model="anthropic/claude-sonnet-4-6", api_base=url), session="run-1", seed=3)
    for config in ({}, {"trigger": 30_000, "keep": 5, "clear_at_least": 5_000, "exclude_tools": ["note"],
                        "clear_tool_inputs": ["read"]}):
        strategy = build_strategy(StrategySpec("anthropic.context_editing", config))
        client.complete([SYSTEM, TASK, *conversation(1)], TOOLS, clock_s=0.0, options=strategy.request_options(None))
    captured = matches_golden(GOLDEN, sent, ("defaults", "configured"))
    assert captured["defaults"]["body"]["context_management"]["edits"] == [
        {"type": EDIT, "trigger": tokens(100_000), "keep": uses(3)}]


def test_a_task_gives_the_same_rows_over_the_anthropic_route(mock_server, tmp_path, monkeypatch):
    """Rows over serve-mock's Messages API equal the in-process ones, the provider's clearings included."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    server = mock_server(window=32_000)
    base = ["run", "--strategies", "anthropic.context_editing", "--no-progress", "--suite", "default",
            "--task-ids", "work_queue-3", "--window", "32000"]
    assert main([*base, "--out", str(tmp_path / "local")]) == 0
    assert main([*base, "--model", "anthropic/claude-sonnet-4-6", "--api-base", server.url.removesuffix("/v1"),
                 "--out", str(tmp_path / "http")]) == 0
    [local], [remote] = ([json.loads(line) for line in (tmp_path / name / "runs.jsonl").read_text().splitlines()]
                         for name in ("local", "http"))
    skip = {"wall_s", "cpu_s", "library_cpu_s", "model"}
    assert {k: v for k, v in remote.items() if k not in skip} == {k: v for k, v in local.items() if k not in skip}
    assert local["compactions_by_step"].get("clear_tool_uses", 0) >= 1
