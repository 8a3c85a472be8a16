"""The anthropic SDK's compaction request (`compaction: {"type": "summarize"}`) in the simulated provider, on serve-mock's
Messages API, and Anthropic's token counting.

Sources: the anthropic SDK 2.17 types: beta/beta_compaction_config_param.py (a compaction request summarizes the whole
conversation and returns a signed `compaction` block alone, no trigger, no pause flag, nothing sampled after it;
`instructions` replace the server's prompt, empty or only whitespace counts as absent), beta/message_create_params.py
`compaction` (stop reason "compaction"; later requests send the block first in `messages` in place of what it
summarizes; `count_tokens` accepts and ignores it; it cannot be combined with `context_management`),
beta/beta_compaction_block.py (`signature` sent back verbatim); lib/tools/_beta_runner.py (`compact_before_next_turn`
needs the `compact-2026-09-04` beta; no compaction of a conversation whose last turn has unanswered tool calls;
`thread=False`).
"""
from __future__ import annotations

import json

import litellm
import pytest

from harness.models.mock.compaction import CompactionRequestError, read_summarize, signature
from harness.models.mock.provider import MockConfig, MockProvider
from harness.models.mock.summarizer import HEADER
from harness.models.provider_compaction import ANTHROPIC_SUMMARIZE_BETA, compaction_blocks, paused
from harness.models.serve_mock import anthropic_wire
from tests.models.test_anthropic_compaction_wire import SYSTEM, TASK, long_conversation

SUMMARIZE = {"compaction": {"type": "summarize"}}


def serve(messages, options=None, provider=None):
    provider = provider or MockProvider()
    return provider.serve("mock/summarizer", messages, [], MockConfig(window=1_000_000), seed=0, options=options)


def test_the_compaction_config_is_read_as_the_sdk_types_say():
    assert read_summarize(None, None) is None
    asked = read_summarize({"type": "summarize"}, None)
    assert asked.pause_after_compaction and asked.signed and asked.trigger == 0 and asked.instructions is None
    assert read_summarize({"type": "summarize", "instructions": "  "}, None).instructions is None  # blank: absent
    assert read_summarize({"type": "summarize", "instructions": "Keep codes."}, None).instructions == "Keep codes."
    with pytest.raises(CompactionRequestError, match="cannot be combined with context_management"):
        read_summarize({"type": "summarize"}, {"edits": []})
    with pytest.raises(CompactionRequestError, match="compaction.trigger: Extra inputs"):
        read_summarize({"type": "summarize", "trigger": 5}, None)
    with pytest.raises(CompactionRequestError, match="expected 'summarize'"):
        read_summarize({"type": "compact_20260112"}, None)


def test_a_compaction_request_answers_with_the_signed_block_alone_whatever_the_size():
    """No trigger: even a short conversation is compacted; nothing is sampled after the block; billed as one
    `compaction` iteration whose tokens are not in the top-level fields (beta_usage.py)."""
    reply, usage = serve([SYSTEM, TASK], SUMMARIZE)
    assert paused(reply)
    [block] = compaction_blocks(reply)
    assert block["content"].startswith(HEADER) and block["signature"] == signature(block["content"])
    assert [step["type"] for step in usage["iterations"]] == ["compaction"]
    wire = anthropic_wire.response(reply, usage, "claude-sonnet-4-6", "msg_1")
    assert wire["stop_reason"] == "compaction" and wire["content"] == [block]
    assert wire["usage"]["input_tokens"] == 0 and wire["usage"]["iterations"][0]["input_tokens"] > 0


def test_instructions_replace_the_summarizing_prompt():
    """The mock summarizer reads the instruction it is given: a longer one makes a longer compaction input."""
    _, plain = serve([SYSTEM, TASK], SUMMARIZE)
    _, told = serve([SYSTEM, TASK], {"compaction": {"type": "summarize", "instructions": "Keep every code. " * 50}})
    assert told["iterations"][0]["input_tokens"] > plain["iterations"][0]["input_tokens"]


def test_a_later_request_reads_from_the_block_on():
    """The block sent back first stands for what it summarized: the request costs the block, not the history."""
    messages = long_conversation(30)
    reply, _ = serve(messages, SUMMARIZE)
    _, before = serve([*messages, {"role": "user", "content": "go on"}])
    _, after = serve([SYSTEM, reply, {"role": "user", "content": "go on"}])
    assert after["prompt_tokens"] < before["prompt_tokens"] // 10


def test_a_block_whose_signature_does_not_match_is_refused():
    reply, _ = serve([SYSTEM, TASK], SUMMARIZE)
    block = dict(compaction_blocks(reply)[0], content="A summary the client rewrote.")
    tampered = {"role": "assistant", "content": "", "provider_specific_fields": {"compaction_blocks": [block]}}
    with pytest.raises(litellm.BadRequestError, match="signature: does not match"):
        serve([SYSTEM, tampered, TASK])


def test_a_conversation_ending_on_unanswered_tool_calls_is_not_compacted():
    calls = long_conversation(1)[2]  # an assistant turn with a tool call, its result missing
    with pytest.raises(litellm.BadRequestError, match="tool calls without results"):
        serve([SYSTEM, TASK, calls], SUMMARIZE)


def test_count_tokens_ignores_the_compaction_parameter_and_reads_from_a_block_on():
    provider = MockProvider()
    messages = long_conversation(5)
    _, usage = serve(messages, provider=provider)
    assert provider.count_tokens(messages, [], SUMMARIZE)[0] == usage["prompt_tokens"]
    reply, _ = serve(messages, SUMMARIZE)
    assert provider.count_tokens([SYSTEM, reply, TASK], [], None)[0] < 1_000


# ----- on serve-mock's Messages API, through the real SDK

def _sdk(server):
    anthropic = pytest.importorskip("anthropic")
    return anthropic.Anthropic(api_key="unused", base_url=server.url.removesuffix("/v1"), max_retries=0)


def test_the_sdks_compaction_request_over_the_route_equals_the_mock_in_process(mock_server):
    server = mock_server()
    client = _sdk(server)
    turns = [{"role": "user", "content": TASK["content"]}]
    message = client.beta.messages.create(model="claude-sonnet-4-6", max_tokens=1000, system=SYSTEM["content"],
                                          messages=turns, compaction={"type": "summarize"},
                                          betas=[ANTHROPIC_SUMMARIZE_BETA])
    local, _ = serve([SYSTEM, TASK], SUMMARIZE)
    assert message.stop_reason == "compaction"
    assert [block.to_dict() for block in message.content] == compaction_blocks(local)
    counted = client.beta.messages.count_tokens(model="claude-sonnet-4-6", system=SYSTEM["content"], messages=turns,
                                                betas=[ANTHROPIC_SUMMARIZE_BETA])
    assert counted.input_tokens == MockProvider().count_tokens([SYSTEM, TASK], [], None)[0]


@pytest.mark.parametrize("body, headers, refusal", [
    ({"compaction": {"type": "summarize"}}, {}, ANTHROPIC_SUMMARIZE_BETA),
    ({"compaction": {"type": "summarize"}, "context_management": {"edits": []}},
     {"anthropic-beta": f"{ANTHROPIC_SUMMARIZE_BETA},compact-2026-01-12"}, "cannot be combined"),
    ({"thread": {"type": "create"}}, {}, "thread=False"),
])
def test_the_route_refuses_what_the_api_would(mock_server, body, headers, refusal):
    import httpx

    server = mock_server()
    payload = {"model": "claude-sonnet-4-6", "max_tokens": 100, "messages": [{"role": "user", "content": "hi"}],
               **body}
    refused = httpx.post(server.url.removesuffix("/v1") + "/v1/messages?beta=true", json=payload, headers=headers)
    assert refused.status_code == 400 and refusal in refused.json()["error"]["message"]
    assert json.loads(refused.text)["type"] == "error"

