"""Anthropic's server-side compaction (`compact_20260112`) on the wire and in the simulated provider.

Sources: Anthropic's "Compaction" docs and the anthropic SDK's types (beta_compact_20260112_edit_param.py: trigger
default 150,000, `instructions`, `pause_after_compaction`; beta_compaction_block.py: a null content is a failed
compaction the server treats as a no-op; beta_usage.py: a compaction step's tokens only in `usage.iterations`);
litellm's Anthropic transformation (anthropic/chat/transformation.py: the beta header for the edit, compaction blocks
in `provider_specific_fields`, usage summed over iterations; prompt_templates/factory.py: the blocks sent back first
in their assistant message)."""
from __future__ import annotations

import json
from pathlib import Path

import litellm
import pytest

from harness.cli import main
from harness.models.cache_marks import Breakpoint, CacheMarks
from harness.models.llm import LLMClient, LLMProfile
from harness.models.mock.compaction import CompactionRequestError, read_edit, visible_context
from harness.models.mock.provider import MockConfig, MockProvider
from harness.models.mock.summarizer import HEADER
from harness.models.provider_compaction import ANTHROPIC_BETA, compaction_blocks, paused, summary_of
from tests.conftest import matches_golden

GOLDEN = Path(__file__).parents[1] / "goldens" / "anthropic_compaction" / "requests.json"
SYSTEM = {"role": "system", "content": "You are a careful agent."}
TASK = {"role": "user", "content": "Find the value behind key A, then submit it."}
SUMMARY = "The user wants the value behind key A. A points to B; B holds 42."
TOOLS = [{"type": "function", "function": {"name": "read", "description": "Read the next row.",
                                           "parameters": {"type": "object", "properties": {}}}}]


def edit(value: int = 50_000, **more) -> dict:
    return {"context_management": {"edits": [{"type": "compact_20260112",
                                              "trigger": {"type": "input_tokens", "value": value}, **more}]}}


def long_conversation(turns: int = 60) -> list[dict]:
    """A conversation past 50,000 tokens: tool results of ~1,000 tokens each."""
    messages = [SYSTEM, TASK]
    for index in range(turns):
        call = {"id": f"call_{index}", "type": "function", "function": {"name": "read", "arguments": "{}"}}
        messages.append({"role": "assistant", "content": "", "tool_calls": [call]})
        messages.append({"role": "tool", "tool_call_id": f"call_{index}", "name": "read",
                         "content": f"row {index}: " + "lorem ipsum dolor " * 330})
    return messages


def serve(messages, options=None, marks=None, reply=None):
    provider = MockProvider()
    return provider.serve("mock/agent", messages, [], MockConfig(window=1_000_000), seed=0, marks=marks,
                          options=options, reply=reply)


def test_edit_is_read_with_the_apis_defaults_and_limits():
    assert read_edit({"edits": [{"type": "compact_20260112"}]}).trigger == 150_000
    assert read_edit(None) is None
    with pytest.raises(CompactionRequestError, match=r"trigger.value: must be at least 50000"):
        read_edit(edit(49_999)["context_management"])
    with pytest.raises(CompactionRequestError, match="pause_after_compaction"):
        read_edit(edit(pause_after_compaction="yes")["context_management"])
    with pytest.raises(CompactionRequestError, match="unknown context edit"):
        read_edit({"edits": [{"type": "compact_2099"}]})


def test_below_the_trigger_nothing_is_compacted():
    reply, usage = serve(long_conversation(5), edit())
    assert not compaction_blocks(reply) and "iterations" not in usage


def test_past_the_trigger_the_reply_starts_with_the_summary_and_the_step_is_billed():
    """The compaction step reads the whole request; the answer is made from the system prompt and the summary."""
    messages = long_conversation()
    _, plain = serve(messages)
    reply, usage = serve(messages, edit())
    summary = summary_of(reply)
    assert summary and summary.startswith(HEADER)  # the mock summarizer's, from what the request showed
    compaction, answer = usage["iterations"]
    assert compaction["type"] == "compaction" and answer["type"] == "message"
    assert compaction["input_tokens"] > plain["prompt_tokens"]  # the request, and the summarizing instruction
    assert answer["input_tokens"] < 1_000  # the system prompt and the summary alone
    assert usage["prompt_tokens"] == compaction["input_tokens"] + answer["input_tokens"]  # litellm's sum
    assert usage["completion_tokens"] == compaction["output_tokens"] + answer["output_tokens"]


def test_paused_compaction_answers_with_the_block_alone():
    reply, usage = serve(long_conversation(), edit(pause_after_compaction=True))
    assert paused(reply) and [step["type"] for step in usage["iterations"]] == ["compaction"]


def test_a_later_request_sees_nothing_before_the_latest_compaction_block():
    """The API drops every block before the compaction block: the system prompt and the summary remain."""
    compacted = {"role": "assistant", "content": "Submitting.",
                 "provider_specific_fields": {"compaction_blocks": [{"type": "compaction", "content": SUMMARY}]}}
    messages = [*long_conversation(3), compacted, {"role": "user", "content": "go on"}]
    marks = CacheMarks(breakpoints=(Breakpoint("message", 0), Breakpoint("message", 3), Breakpoint("message", 8)))
    visible, moved = visible_context(messages, marks)
    assert visible == [SYSTEM, {"role": "user", "content": SUMMARY}, {"role": "assistant", "content": "Submitting."},
                       {"role": "user", "content": "go on"}]
    assert moved.breakpoints == (Breakpoint("message", 0), Breakpoint("message", 2))  # message 3 was dropped


def test_a_failed_compaction_block_is_a_no_op():
    failed = {"role": "assistant", "content": "x",
              "provider_specific_fields": {"compaction_blocks": [{"type": "compaction", "content": None}]}}
    messages = [SYSTEM, TASK, failed]
    assert visible_context(messages, None)[0] == messages


def test_a_trigger_below_the_minimum_is_refused_as_the_api_does():
    with pytest.raises(litellm.BadRequestError, match="trigger.value: must be at least 50000"):
        serve(long_conversation(2), edit(10_000))


# ----- on the wire: what leaves the process, captured at the HTTP boundary

ANTHROPIC_REPLY = {
    "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-6",
    "content": [{"type": "compaction", "content": SUMMARY}, {"type": "text", "text": "42"}],
    "stop_reason": "end_turn", "stop_sequence": None,
    "usage": {"input_tokens": 30, "output_tokens": 2, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0,
              "iterations": [{"type": "compaction", "input_tokens": 900, "output_tokens": 40,
                              "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0},
                             {"type": "message", "input_tokens": 30, "output_tokens": 2,
                              "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}]}}


def test_a_compaction_request_carries_the_edit_and_the_beta_header_and_sends_the_block_back(recording_server,
                                                                                           monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    url, sent = recording_server(ANTHROPIC_REPLY)
    client = LLMClient(LLMProfile(model="anthropic/claude-sonnet-4-6", api_base=url), session="s", seed=0)
    first = client.complete([SYSTEM, TASK], None, clock_s=0.0, options=edit())
    assert sent[0]["headers"]["anthropic-beta"] == ANTHROPIC_BETA
    assert sent[0]["body"]["context_management"] == edit()["context_management"]
    # kept as litellm returns it, billed over both steps
    assert summary_of(first.message) == SUMMARY
    assert first.usage.input_tokens == 930 and first.usage.output_tokens == 42
    client.complete([SYSTEM, TASK, first.message, {"role": "user", "content": "go on"}], None, clock_s=1.0,
                    options=edit())
    assistant = sent[1]["body"]["messages"][1]
    assert assistant["role"] == "assistant"
    assert assistant["content"][0] == {"type": "compaction", "content": SUMMARY}


def test_usage_of_a_compacting_request_is_the_same_in_process_and_over_the_anthropic_route(mock_server, monkeypatch):
    """serve-mock's Messages API reports the steps in `iterations`; litellm sums them into what the mock reports
    in process."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    server = mock_server()
    messages = long_conversation()
    remote = LLMClient(LLMProfile(model="anthropic/mock-agent", api_base=server.url.removesuffix("/v1")),
                       session="s", seed=0).complete(messages, TOOLS, clock_s=0.0, options=edit())
    local = LLMClient(LLMProfile(model="mock/agent"), session="s", seed=0).complete(messages, TOOLS, clock_s=0.0,
                                                                                   options=edit())
    assert remote.usage == local.usage and remote.message == local.message
    assert summary_of(local.message)


def test_the_route_refuses_the_edit_without_its_beta_header(mock_server):
    import httpx

    server = mock_server()
    body = {"model": "claude-sonnet-4-6", "max_tokens": 100, "messages": [{"role": "user", "content": "hi"}],
            **edit()}
    refused = httpx.post(server.url.removesuffix("/v1") + "/v1/messages", json=body)
    assert refused.status_code == 400 and ANTHROPIC_BETA in refused.json()["error"]["message"]


def same_rows_over_the_anthropic_route(tmp_path, server, model: str, *selection: str) -> list[dict]:
    """`ctxbench run` of anthropic.compaction in process (one worker) and over serve-mock's Messages API (two):
    the rows equal field by field but for the host's clocks and the model's name."""
    base = ["run", "--strategies", "anthropic.compaction", "--no-progress", *selection]
    assert main([*base, "--out", str(tmp_path / "local")]) == 0
    assert main([*base, "--model", model, "--api-base", server.url.removesuffix("/v1"), "--workers", "2",
                 "--out", str(tmp_path / "http")]) == 0
    local = [json.loads(line) for line in (tmp_path / "local" / "runs.jsonl").read_text().splitlines()]
    remote = {row["run_id"]: row for row in map(json.loads, (tmp_path / "http" / "runs.jsonl").read_text().splitlines())}
    skip = {"wall_s", "cpu_s", "library_cpu_s", "model"}
    for row in local:
        assert {k: v for k, v in remote[row["run_id"]].items() if k not in skip} == \
               {k: v for k, v in row.items() if k not in skip}
    return local


def test_a_task_compacted_by_the_provider_gives_the_same_rows_over_the_anthropic_route(mock_server, tmp_path,
                                                                                       monkeypatch):
    """Rows over serve-mock's Messages API equal the in-process ones (the window given to both: a real model's
    name does not tell the client it talks to the mock)."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    local = same_rows_over_the_anthropic_route(tmp_path, mock_server(window=60_000), "anthropic/claude-sonnet-4-6",
                                               "--suite", "default", "--task-ids", "chained_lookup-3",
                                               "--window", "60000")
    assert all(row["summaries"] >= 1 for row in local)


@pytest.mark.slow
def test_the_default_suite_gives_the_same_rows_over_the_anthropic_route(mock_server, tmp_path, monkeypatch):
    """The whole default suite, the served mock named as such (`anthropic/mock-agent`: the window is the server's)."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    local = same_rows_over_the_anthropic_route(tmp_path, mock_server(), "anthropic/mock-agent", "--suite", "default")
    assert len(local) == 20 and sum(row["summaries"] for row in local) >= 7




def test_request_bodies_and_headers_match_the_golden(recording_server, monkeypatch):
    """What leaves the process under anthropic.compaction with the `auto` cache policy: the edit in
    `context_management`, the beta header, the cache markers the policy placed, and the compaction block sent back
    first in its assistant turn (regenerate with CTXBENCH_UPDATE_GOLDENS=1 after a deliberate change)."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    url, sent = recording_server(ANTHROPIC_REPLY)
    client = LLMClient(LLMProfile(model="anthropic/claude-sonnet-4-6", api_base=url), session="run-1", seed=3)
    first = client.complete([SYSTEM, TASK], TOOLS, clock_s=0.0, options=edit())
    client.complete([SYSTEM, TASK, first.message, {"role": "user", "content": "go on"}], TOOLS, clock_s=1.0,
                    options=edit())
    captured = matches_golden(GOLDEN, sent, ("compacting", "after"))
    assert captured["compacting"]["headers"]["anthropic-beta"] == ANTHROPIC_BETA
    assert captured["after"]["body"]["messages"][1]["content"][0]["type"] == "compaction"
