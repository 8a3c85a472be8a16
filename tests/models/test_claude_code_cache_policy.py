"""The `claude-code` cache policy: where Claude Code's own requests carry `cache_control`, read from its npm package
(@anthropic-ai/claude-code; docs/caching.md cites the versions and the code), and what that placement bills when
the simulated provider serves a growing conversation, set against the usage Claude Code's session logs record.

The request bodies it makes litellm send are among the goldens of tests/models/test_cache_policies.py."""
import json
from pathlib import Path

import pytest

from harness.core.errors import ConfigError
from harness.core.tokens import count_message, count_tools
from harness.models.cache_policy import (ANTHROPIC, BEDROCK, COMPATIBLE, OPENAI, OPENAI_BREAKPOINTS, VERTEX,
                                         CachePlanner, parse_policy, uncached_note)
from harness.models.mock.provider import MockConfig, MockProvider

GOLDENS = Path(__file__).parents[1] / "goldens" / "cache_policies"
SYSTEM = {"role": "system", "content": "You are a careful coding agent. " * 250}  # ~1,500 tokens
USER = {"role": "user", "content": "Find where the retry limit is set and raise it to five."}
TOOLS = [{"type": "function", "function": {"name": name, "description": f"{name} a file of the workspace.",
                                           "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}}
         for name in ("read", "edit")]


def exchange(number: int, calls: int = 1) -> list[dict]:
    """An assistant turn with `calls` tool calls and a result of ~300 tokens for each."""
    ids = [f"call_{number}_{k}" for k in range(calls)]
    assistant = {"role": "assistant", "content": f"Step {number}.",
                 "tool_calls": [{"id": i, "type": "function", "function": {"name": "read", "arguments": "{}"}}
                                for i in ids]}
    return [assistant, *({"role": "tool", "tool_call_id": i, "name": "read", "content": f"line {i} of config\n" * 60}
                         for i in ids)]


CONVERSATION = [SYSTEM, USER, *exchange(1), *exchange(2)]  # system, user, assistant, tool, assistant, tool


def marks(policy, family=ANTHROPIC, messages=CONVERSATION, tools=TOOLS):
    return CachePlanner(parse_policy(policy), family, "run-1").marks(messages, tools, None)


def at(cache_marks) -> list[tuple[str, int, str]]:
    return [(mark.block, mark.index, mark.ttl) for mark in cache_marks.breakpoints]


def test_claude_code_rule_the_system_prompt_and_the_last_message_from_2_1_59():
    """claude-code 2.1.112 cli.js: the function logging `tengu_api_cache_breakpoints` marks one message, at
    `messages.length - 1` (2.1.59 on); the system prompt's blocks are marked by the function that maps the split
    system prompt to text blocks (every block but the billing header)."""
    assert at(marks("claude-code")) == [("message", 0, "5m"), ("message", 5, "5m")]


def test_claude_code_rule_no_tool_and_no_automatic_caching():
    """claude-code 2.1.112 and 2.1.332: the main loop builds tool schemas without `cache_control` and sends no
    top-level `cache_control` (2.1.332 sends one, with `evict_on_complete`, only on side requests)."""
    placed = marks("claude-code")
    assert all(mark.block == "message" for mark in placed.breakpoints)
    assert placed.automatic is None and placed.prompt_cache_key is None


def test_claude_code_rule_the_last_two_messages_before_2_1_59():
    """claude-code 1.0.128 cli.js (`index > messages.length - 3`) through 2.1.58 (the same test beside
    `tengu_api_cache_breakpoints`): the last two messages are marked; `messages: 2` replays such a session."""
    assert at(marks({"name": "claude-code", "messages": 2})) == [("message", 0, "5m"), ("message", 4, "5m"),
                                                                 ("message", 5, "5m")]


def test_claude_code_rule_one_ttl_on_every_marker_5m_unless_1h():
    """claude-code 2.1.112: one helper builds every marker, `{"type": "ephemeral"}` plus `ttl: "1h"` for a
    claude.ai subscriber's main thread (remote allowlist, default `repl_main_thread*`, `sdk`, `auto_mode`) or
    ENABLE_PROMPT_CACHING_1H; API-key users write 5m (1.0.128 sends no ttl at all)."""
    assert {mark.ttl for mark in marks({"name": "claude-code", "ttl": "1h"}).breakpoints} == {"1h"}


def test_claude_code_rule_a_conversation_without_a_system_prompt_marks_its_last_message():
    assert at(marks("claude-code", messages=CONVERSATION[1:])) == [("message", 4, "5m")]


@pytest.mark.parametrize("family", [BEDROCK, VERTEX])
def test_claude_code_rule_bedrock_and_vertex_get_the_same_markers(family):
    """claude-code 2.1.112: the message and system markers do not depend on the provider (only the `global`
    scope of the system block is first-party, and a scope changes no billing)."""
    assert marks("claude-code", family) == marks("claude-code")


@pytest.mark.parametrize("family", [OPENAI, OPENAI_BREAKPOINTS, COMPATIBLE])
def test_claude_code_rule_sends_nothing_but_to_claude(family):
    """Claude Code speaks Anthropic's Messages API only (first party, Bedrock, Vertex): there is no OpenAI request
    of its own to imitate, so other providers are sent nothing, as under the other anchors marking Claude only."""
    assert marks("claude-code", family).breakpoints == () and marks("claude-code", family).prompt_cache_key is None


def test_claude_code_rule_caches_on_claude():
    assert uncached_note({"model": "anthropic/claude-sonnet-4-6", "cache_policy": "claude-code"}) is None


@pytest.mark.parametrize("spec, message", [
    ({"name": "claude-code", "messages": 3}, "must be 1 .Claude Code 2.1.59 and later. or 2"),
    ({"name": "claude-code", "messages": 0}, "must be 1 .Claude Code 2.1.59 and later. or 2"),
    ({"name": "claude-code", "system": True}, "takes no option"),
])
def test_claude_code_refuses_options_claude_code_never_sends(spec, message):
    with pytest.raises(ConfigError, match=message):
        parse_policy(spec, "--cache-policy")


def test_claude_code_policy_round_trips_as_plain_data():
    assert parse_policy("claude-code").as_data() == "claude-code"
    assert parse_policy({"name": "claude-code", "messages": 2}).as_data() == {"name": "claude-code", "messages": 2}


# --- what the placement bills, against Claude Code's recorded usage ------------------------------------------

class Session:
    """One conversation served by the simulated provider under a policy, the clock in seconds."""

    def __init__(self, policy="claude-code"):
        self.provider, self.planner = MockProvider(), CachePlanner(parse_policy(policy), ANTHROPIC, "s")

    def send(self, messages: list[dict], now_s: float) -> dict:
        placed = self.planner.marks(messages, TOOLS, now_s)
        return self.provider.serve("agent", messages, list(TOOLS), MockConfig(session="s"), seed=0, now_s=now_s,
                                   marks=placed)[1]


def grow(session: Session, turns: int, start_s: float = 0.0, step_s: float = 10.0) -> tuple[list[dict], list[dict]]:
    messages, usages = [SYSTEM, USER], []
    for turn in range(turns):
        usages.append(session.send(messages, start_s + turn * step_s))
        messages = messages + exchange(turn)
    return messages, usages


def test_each_request_reads_the_previous_prompt_and_writes_only_its_new_tail_as_sessions_record():
    """Claude Code 2.1.38-2.1.39 session logs (marot/spotter test/fixtures/transcripts): in each main thread all but
    2-5 of 138-216 requests read exactly the previous request's read plus write, and write the rest of the prompt."""
    _, usages = grow(Session(), 6)
    for before, after in zip(usages, usages[1:]):
        assert after["cache_read_input_tokens"] == before["cache_read_input_tokens"] + before[
            "cache_creation_input_tokens"]
        assert after["cache_read_input_tokens"] + after["cache_creation_input_tokens"] == after["prompt_tokens"]


def test_a_gap_past_the_5m_ttl_rewrites_the_whole_prompt_as_sessions_record():
    """The same logs, a 5m session: after gaps of 1,153 s and 15,070 s a request reads nothing and writes it all."""
    session = Session()
    messages, _ = grow(session, 3)
    late = session.send(messages, 20.0 + 301.0)
    assert (late["cache_read_input_tokens"], late["cache_creation_input_tokens"]) == (0, late["prompt_tokens"])


def test_with_the_1h_ttl_a_gap_of_minutes_still_reads_everything_as_sessions_record():
    """The same logs, a 1h session (writes only `ephemeral_1h_input_tokens`): after gaps of 306-576 s a request
    reads the whole previous prompt."""
    session = Session({"name": "claude-code", "ttl": "1h"})
    messages, usages = grow(session, 3)
    late = session.send(messages, 20.0 + 576.0)
    last = usages[-1]
    assert late["cache_read_input_tokens"] == last["cache_read_input_tokens"] + last["cache_creation_input_tokens"]
    assert late["prompt_tokens_details"]["cache_creation_token_details"]["ephemeral_5m_input_tokens"] == 0


def test_a_rewritten_conversation_still_reads_the_tools_and_system_prompt_as_sessions_record():
    """The same logs: the request after a compaction reads ~21.4k tokens, the tools and system prompt cached at the
    system marker, and writes the new conversation; the system breakpoint is what keeps that prefix."""
    session = Session()
    grow(session, 3)
    summary = {"role": "user", "content": "Summary of the work so far: the retry limit lives in config.py. " * 20}
    after = session.send([SYSTEM, summary], 40.0)
    assert after["cache_read_input_tokens"] == count_tools(TOOLS) + count_message(SYSTEM)
    assert after["cache_creation_input_tokens"] == after["prompt_tokens"] - after["cache_read_input_tokens"]


def test_the_anthropic_body_carries_markers_on_the_system_prompt_and_the_last_tool_result_only():
    """The golden Anthropic body (captured at the HTTP boundary by tests/models/test_cache_policies.py): the system
    block and the last message's last block, no tool, no top-level field, each `{"type": "ephemeral"}`."""
    body = json.loads((GOLDENS / "anthropic.json").read_text(encoding="utf-8"))["claude-code"]
    assert "cache_control" not in body and all("cache_control" not in tool for tool in body["tools"])
    assert body["system"][-1]["cache_control"] == {"type": "ephemeral"}
    marked = [(index, block) for index, message in enumerate(body["messages"]) for block in message["content"]
              if "cache_control" in block]
    assert [(index, block["type"]) for index, block in marked] == [(len(body["messages"]) - 1, "tool_result")]


@pytest.mark.parametrize("command", ["run", "sweep", "traces"])
def test_the_cli_help_names_the_claude_code_policy(command, capsys):
    from harness.cli import main

    with pytest.raises(SystemExit):
        main([command, "--help"])
    assert "claude-code" in " ".join(capsys.readouterr().out.split())
