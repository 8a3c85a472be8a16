"""OpenAI's prompt caching from the GPT-5.6 family on, rule by rule with its source: which models (by name, as
litellm reads them), where each cache policy puts `prompt_cache_breakpoint` and `prompt_cache_options`, how the
simulated provider caches such requests (in process and behind serve-mock, with the same usage), and how writes
are billed. The request bodies litellm sends are goldens in tests/models/test_cache_policies.py.

Sources: openai SDK 3.63 `openai/types/chat/completion_create_params.py` (PromptCacheOptions, lines 272-284 and
530-551), `openai/types/chat/chat_completion_content_part_text_param.py` (PromptCacheBreakpoint, lines 10-21),
`openai/types/completion_usage.py` (PromptTokensDetails.cache_write_tokens, line 43); litellm 1.110.2
`integrations/anthropic_cache_control_hook.py`; OpenAI's prompt-caching guide (REFERENCES.md, "Newer provider
facts")."""
from __future__ import annotations

import copy

import litellm
import pytest

from harness.core.errors import ConfigError
from harness.core.tokens import count_message
from harness.models import openai_breakpoints
from harness.models.cache_marks import NO_MARKS, Breakpoint, CacheMarks
from harness.models.cache_policy import (COMPATIBLE, OPENAI, OPENAI_BREAKPOINTS, CachePlanner, mark_request,
                                         parse_policy, provider_family, uncached_note)
from harness.models.llm import LLMClient, LLMProfile
from harness.models.mock.provider import MockConfig, MockProvider
from harness.models.mock.wire_marks import MarkerError, read_marks
from harness.models.usage import Pricing, Usage
from tests.models.test_cache_policies import CONVERSATION, TOOLS
from tests.models.test_server_attack import VALID, _with, exchange

STYLE = openai_breakpoints.STYLE
SYSTEM = {"role": "system", "content": "You are a careful agent. " * 300}  # 1,805 tokens: cacheable alone
SYSTEM_TEXT = CONVERSATION[0]["content"]


def user(text: str) -> dict:
    return {"role": "user", "content": f"{text}: follow the successor chain and submit the sum of the weights."}


def exchange_of(number: int) -> list[dict]:
    call = {"id": f"call_{number}", "type": "function", "function": {"name": "read", "arguments": "{}"}}
    return [{"role": "assistant", "content": "", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"call_{number}", "content": f"record {number} weighs {number}"}]


def tokens(messages: list[dict]) -> int:
    """A request's prompt tokens without tools: the sum of its messages' (the mock's block chain)."""
    return sum(count_message(message) for message in messages)


def explicit(*indexes: int) -> CacheMarks:
    return CacheMarks(breakpoints=tuple(Breakpoint("message", i, "30m") for i in indexes), prompt_cache_mode="explicit")


def implicit(*indexes: int) -> CacheMarks:
    return CacheMarks(breakpoints=tuple(Breakpoint("message", i, "30m") for i in indexes), prompt_cache_mode="implicit")


def cache_use(provider: MockProvider, messages: list[dict], marks: CacheMarks | None = None, now_s: float = 0.0,
              style: str = STYLE) -> tuple[int, int | None]:
    """(cached tokens, written tokens) of one request to the mock of `style`."""
    config = MockConfig(cache=style, session="s")
    usage = provider.serve("agent", messages, [], config, seed=0, now_s=now_s, marks=marks)[1]
    details = usage["prompt_tokens_details"]
    return details["cached_tokens"], details.get("cache_write_tokens", usage.get("cache_creation_input_tokens"))


# --- which models ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("model, takes", [
    ("gpt-5.6", True), ("gpt-5.6-2026-07-09", True), ("gpt-5.6-sol-2026-07-09", True), ("openai/gpt-5.6", True),
    ("azure/gpt-5.6", True), ("openai/gpt-5.6-terra", True), ("gpt-5.10", True), ("gpt-6", True),
    ("gpt-6.1-terra", True), ("GPT-6-SOL", True), ("ft:gpt-5.6:acme::abc123", True), ("gpt-sol-latest", True),
    ("gpt-5.5", False), ("gpt-5.5-2026-04-23", False), ("gpt-5", False), ("gpt-5-mini", False),
    ("gpt-5-2025-08-07", False), ("gpt-4o", False), ("gpt-4.1", False), ("azure/gpt-35-turbo", False), ("o3", False),
    ("claude-sonnet-4-6", False),
])
def test_the_family_is_gpt_5_6_and_later_by_name_dated_snapshots_and_prefixes_included(model, takes):
    """The SDK: `prompt_cache_options` is "Supported for `gpt-5.6` and later models" (completion_create_params.py
    line 272-276); litellm: OPENAI_PROMPT_CACHE_BREAKPOINT_MIN_GPT_VERSION = (5, 6) (anthropic_cache_control_hook.py
    line 80), an alias by its cost-map flag `supports_prompt_cache_breakpoint` (`gpt-sol-latest`)."""
    assert openai_breakpoints.takes_breakpoints(model) is takes


def test_the_family_agrees_with_litellms_own_rule_on_every_openai_and_azure_model_it_prices():
    """litellm 1.110.2 supports_openai_prompt_cache_breakpoint (anthropic_cache_control_hook.py lines 360-426: the
    cost map's flag, else `gpt-N.M` >= 5.6). One disagreement, on purpose: litellm reads Azure's `gpt-35-turbo`
    (GPT-3.5) as version 35."""
    from litellm.integrations.anthropic_cache_control_hook import supports_openai_prompt_cache_breakpoint

    differ = sorted(name for name, entry in litellm.model_cost.items()
                    if isinstance(entry, dict) and entry.get("litellm_provider") in ("openai", "azure")
                    and entry.get("mode") in ("chat", "responses")
                    and supports_openai_prompt_cache_breakpoint(name) != openai_breakpoints.takes_breakpoints(name))
    assert differ == ["azure/gpt-35-turbo"]


def test_provider_family_of_the_gpt_5_6_family_and_of_a_mock_imitating_it():
    assert provider_family("openai/gpt-5.6") == OPENAI_BREAKPOINTS
    assert provider_family("azure/gpt-6-sol") == OPENAI_BREAKPOINTS
    assert provider_family("openai/gpt-5.6", api_base="http://127.0.0.1:9/v1") == OPENAI_BREAKPOINTS
    assert provider_family("openai/gpt-5") == OPENAI  # earlier models: unchanged
    assert provider_family("openai/mock-agent", api_base="http://127.0.0.1:9/v1") == COMPATIBLE
    assert provider_family("mock/agent", STYLE) == OPENAI_BREAKPOINTS
    assert provider_family("mock/agent", "openai") == OPENAI


# --- where each policy puts its breakpoints ------------------------------------------------------------------------

def _marks(policy, messages=CONVERSATION, tools=TOOLS) -> CacheMarks:
    return CachePlanner(parse_policy(policy), OPENAI_BREAKPOINTS, "run-1").marks(messages, tools, 0.0)


def _at(marks: CacheMarks) -> list[int]:
    return [mark.index for mark in marks.breakpoints]


def test_auto_is_implicit_mode_with_the_system_prompt_and_the_newest_message_marked():
    """Ours (docs/caching.md): OpenAI's implicit breakpoint stays (mode implicit, the SDK's default), the system
    prompt is marked (the tool list and the instructions: every request's shared prefix) and the newest message,
    with the run's prompt_cache_key; 2 explicit + the implicit one: within the 4 a request writes."""
    marks = _marks("auto")
    assert marks == CacheMarks(breakpoints=(Breakpoint("message", 0, "30m"), Breakpoint("message", 5, "30m")),
                               prompt_cache_key="run-1", prompt_cache_mode="implicit")
    assert len(marks.breakpoints) + 1 <= openai_breakpoints.MAX_WRITTEN


def test_pydantic_ai_is_implicit_mode_and_a_breakpoint_after_the_instructions():
    """pydantic_ai 2.62 models/openai.py _translate_openai_cache (lines 1347-1373): the unified `cache` setting on a
    GPT-5.6+ model sends prompt_cache_options {mode: implicit, ttl: 30m} and openai_cache_instructions (a breakpoint
    after the last static instruction, lines 2383-2413)."""
    assert _marks("pydantic-ai") == CacheMarks(breakpoints=(Breakpoint("message", 0, "30m"),),
                                               prompt_cache_mode="implicit")


def test_last_and_custom_place_their_blocks_in_explicit_mode_custom_automatic_meaning_implicit():
    assert _marks("last") == explicit(5)
    assert _marks({"name": "custom", "system": True, "messages": 1}) == explicit(0, 5)
    assert _marks({"name": "custom", "system": True, "automatic": True}) == implicit(0)
    assert _marks({"name": "custom", "tools": True}) == explicit(), "a tool has no breakpoint of its own"


def test_the_policy_ttl_options_are_anthropics_the_family_has_one_lifetime():
    """The SDK: prompt_cache_options.ttl "Defaults to `30m`, which is currently the only supported value"."""
    planner = CachePlanner(parse_policy({"name": "last", "ttl": "1h", "escalate_after_s": 1}), OPENAI_BREAKPOINTS, "r")
    assert [planner.marks(CONVERSATION, TOOLS, clock).breakpoints for clock in (0.0, 99.0)] == \
           [(Breakpoint("message", 5, "30m"),)] * 2


def test_an_assistant_message_never_carries_a_breakpoint():
    """litellm 1.110.2 anthropic_cache_control_hook.py line 701 (_may_carry_prompt_cache_breakpoint: role is not
    assistant); nor does an empty text part (Inspect AI _openai.py count_cache_breakpoints: the API rejects it)."""
    assert _marks({"name": "custom", "messages": 2}) == explicit(5), "messages 4 (assistant) and 5: only 5"
    ends_on_assistant = CONVERSATION[:5]
    assert _marks("last", ends_on_assistant) == explicit()
    assert _at(_marks("auto", ends_on_assistant)) == [0, 3], "the newest message that can carry one"
    empty_result = [*CONVERSATION[:5], {**CONVERSATION[5], "content": ""}]
    assert _at(_marks("auto", empty_result)) == [0, 3]


@pytest.mark.parametrize("policy", ["none", "inspect", "openhands", "mini-swe-agent"])
def test_none_and_the_anchors_whose_libraries_mark_nothing_for_openai_send_nothing(policy):
    """Inspect AI 0.3.285 _openai.py resolve_explicit_prompt_cache (lines 250-277): breakpoints only where the caller
    marked content (ContentText.cache_breakpoint), so none in an agent loop; OpenHands model_features.py
    PROMPT_CACHE_MODELS and mini-swe-agent's default (models/__init__.py lines 55-60): Claude models only."""
    assert _marks(policy) == NO_MARKS


def test_a_policy_asking_for_explicit_breakpoints_and_placing_none_is_said_to_cache_nothing():
    """The SDK: with mode explicit, "If there are no explicit breakpoints, the request does not use prompt caching"."""
    note = uncached_note({"model": "openai/gpt-5.6", "cache_policy": {"name": "custom"}})
    assert "explicit breakpoints only" in note and "nothing is read from the cache" in note
    assert uncached_note({"model": "openai/gpt-5.6", "cache_policy": "none"}) is None  # OpenAI's implicit default


# --- on the wire -------------------------------------------------------------------------------------------------

def test_marks_become_prompt_cache_breakpoint_on_the_last_part_and_prompt_cache_options():
    """The SDK's shapes: PromptCacheBreakpoint {mode: explicit, ttl?} on a content part (inheriting the request's
    TTL, so none is written), PromptCacheOptions {mode, ttl}; the event log's messages are never touched."""
    messages, tools = copy.deepcopy(CONVERSATION), copy.deepcopy(TOOLS)
    before = copy.deepcopy(messages)
    sent, sent_tools, extra = mark_request(messages, tools, _marks("auto"))
    assert messages == before and sent_tools == tools
    assert [a is b for a, b in zip(sent, messages)] == [False, True, True, True, True, False]
    assert sent[0]["content"] == [{"type": "text", "text": SYSTEM_TEXT, "prompt_cache_breakpoint": {"mode": "explicit"}}]
    assert sent[5]["content"] == [{"type": "text", "text": "B holds 42", "prompt_cache_breakpoint": {"mode": "explicit"}}]
    assert extra == {"prompt_cache_key": "run-1", "prompt_cache_options": {"mode": "implicit", "ttl": "30m"}}
    parts = {**CONVERSATION[1], "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}
    marked, _, _ = mark_request([parts], None, explicit(0))
    assert marked[0]["content"] == [{"type": "text", "text": "a"},
                                    {"type": "text", "text": "b", "prompt_cache_breakpoint": {"mode": "explicit"}}]


def test_markers_read_back_from_the_wire_give_the_marks_and_the_unmarked_messages():
    marks = _marks("auto")
    sent, _, extra = mark_request(CONVERSATION, TOOLS, marks)
    messages, tools, read = read_marks(sent, TOOLS, prompt_cache_key=extra["prompt_cache_key"],
                                       prompt_cache_options=extra["prompt_cache_options"])
    assert (messages, tools, read) == (CONVERSATION, TOOLS, marks)
    assert read_marks(sent, TOOLS)[2].prompt_cache_mode == "implicit", "OpenAI's default mode"
    assert read_marks(CONVERSATION, TOOLS, prompt_cache_options={"mode": "explicit"})[2] == explicit()


@pytest.mark.parametrize("options, marker, param", [
    ({"mode": "sometimes"}, None, "prompt_cache_options.mode"),
    ({"ttl": "1h"}, None, "prompt_cache_options.ttl"),
    ({"mode": "implicit", "retention": "24h"}, None, "prompt_cache_options"),
    ("implicit", None, "prompt_cache_options"),
    (None, {"mode": "implicit"}, "messages[1].content[0].prompt_cache_breakpoint"),
    (None, {"mode": "explicit", "ttl": "12h"}, "messages[1].content[0].prompt_cache_breakpoint.ttl"),
])
def test_malformed_openai_markers_are_refused_naming_the_field(options, marker, param):
    messages = [CONVERSATION[0], {"role": "user", "content": [{"type": "text", "text": "hi",
                                                               **({"prompt_cache_breakpoint": marker} if marker else {})}]}]
    with pytest.raises(MarkerError) as refused:
        read_marks(messages, [], prompt_cache_options=options)
    assert refused.value.param == param


# --- the simulated provider --------------------------------------------------------------------------------------

def test_implicit_mode_caches_at_the_newest_message_without_any_marker():
    """The SDK's PromptCacheOptions.mode: "Defaults to `implicit`. With `implicit`, OpenAI creates one implicit
    breakpoint"; the guide: at the end of the newest eligible message."""
    provider = MockProvider()
    first, second = [SYSTEM, user("A")], [SYSTEM, user("A"), *exchange_of(1)]
    assert cache_use(provider, first) == (0, tokens(first))
    assert cache_use(provider, second, now_s=1.0) == (tokens(first), tokens(second) - tokens(first))


def test_the_implicit_breakpoint_skips_a_final_assistant_message():
    provider = MockProvider()
    assert cache_use(provider, [SYSTEM, user("A"), exchange_of(1)[0]]) == (0, tokens([SYSTEM, user("A")]))


def test_explicit_mode_without_breakpoints_caches_nothing():
    """The SDK's PromptCacheOptions.mode: "With `explicit`, OpenAI does not create an implicit breakpoint ... If there
    are no explicit breakpoints, the request does not use prompt caching"."""
    provider = MockProvider()
    assert cache_use(provider, [SYSTEM, user("A")], explicit()) == (0, 0)
    assert cache_use(provider, [SYSTEM, user("A")], explicit(), now_s=1.0) == (0, 0)


def test_a_prefix_matches_exactly_at_a_breakpoint_never_at_a_shorter_unmarked_prefix():
    """The SDK's PromptCacheBreakpoint: "Marks the exact end of a reusable prompt prefix ... the boundary is not
    rounded to a token block"; the guide: a cached prefix matches exactly at a breakpoint, not at a shorter
    unmarked one."""
    provider = MockProvider()
    assert cache_use(provider, [SYSTEM, user("A")], explicit(1)) == (0, tokens([SYSTEM, user("A")]))
    assert cache_use(provider, [SYSTEM, user("B")], explicit(0, 1), now_s=1.0)[0] == 0, "the system prompt was unmarked"
    assert cache_use(provider, [SYSTEM, user("C")], explicit(1), now_s=2.0)[0] == tokens([SYSTEM])


@pytest.mark.parametrize("marks, first_read", [(explicit(1, 2, 3, 4, 5, 6), 3), (implicit(1, 2, 3, 4, 5, 6), 4)])
def test_a_request_writes_at_most_four_breakpoints_the_latest(marks, first_read):
    """The SDK's PromptCacheOptions.mode: implicit "writes up to the latest three explicit breakpoints", explicit
    "writes up to the latest four"; "Each request can write up to four breakpoints"."""
    provider = MockProvider()
    asks = [SYSTEM, *(user(f"step {k}") for k in range(1, 7))]
    cache_use(provider, asks, marks)
    reads = [cache_use(provider, [*asks[:end + 1], user("new")], explicit(), now_s=1.0)[0] for end in range(1, 7)]
    assert reads == [0 if end < first_read else tokens(asks[:end + 1]) for end in range(1, 7)]


@pytest.mark.parametrize("later_requests, read", [(19, True), (20, False)])
def test_matching_considers_the_conversations_latest_80_breakpoints(later_requests, read):
    """The SDK: "For cache matching, OpenAI considers up to the latest 80 breakpoints in the conversation": the
    system prompt's breakpoint, then 4 more a request, is matched while it is among the latest 80."""
    provider = MockProvider()
    cache_use(provider, [SYSTEM, user("first")], explicit(0))
    for number in range(later_requests):
        cache_use(provider, [SYSTEM, *(user(f"{number}.{k}") for k in range(4))], explicit(1, 2, 3, 4), now_s=1.0)
    assert cache_use(provider, [SYSTEM, user("last")], explicit(), now_s=2.0)[0] == (tokens([SYSTEM]) if read else 0)


def test_no_lookback_limit_a_breakpoint_32_blocks_back_is_found():
    """The SDK: "without a content-block lookback limit" (Anthropic's lookback stops at 20 blocks: the same
    requests read nothing there)."""
    long_tail = [user("A"), *(message for number in range(15) for message in exchange_of(number)), user("B")]
    first, second = [SYSTEM, user("A")], [SYSTEM, *long_tail]
    provider = MockProvider()
    cache_use(provider, first, explicit(0))
    assert cache_use(provider, second, explicit(len(second) - 1), now_s=1.0)[0] == tokens([SYSTEM])
    anthropic = MockProvider()
    at = CacheMarks(breakpoints=(Breakpoint("message", 0),))
    cache_use(anthropic, first, at, style="anthropic")
    assert cache_use(anthropic, second, CacheMarks(breakpoints=(Breakpoint("message", len(second) - 1),)),
                     now_s=1.0, style="anthropic")[0] == 0


def test_entries_live_30_minutes_on_the_simulated_clock_and_a_read_refreshes_them():
    """The SDK's PromptCacheOptions.ttl: "The minimum lifetime applied to every implicit and explicit cache breakpoint
    written by the request. Defaults to `30m`"; pydantic_ai providers/openai.py lines 81-82: "at least 30 minutes
    after its last write or reuse"."""
    provider, asks = MockProvider(), [SYSTEM, user("A")]
    cache_use(provider, asks, explicit(1))
    assert cache_use(provider, asks, explicit(), now_s=1700.0)[0] == tokens(asks)
    assert cache_use(provider, asks, explicit(), now_s=3400.0)[0] == tokens(asks), "refreshed at 1700 s"
    assert cache_use(provider, asks, explicit(), now_s=3400.0 + 1801.0)[0] == 0


def test_a_breakpoint_under_1024_tokens_caches_nothing():
    """The guide: caching applies to prompts of 1,024 tokens or more; ours to apply it to each breakpoint."""
    provider, small = MockProvider(), [{"role": "system", "content": "Be brief."}, user("A")]
    assert cache_use(provider, small) == (0, 0)
    assert cache_use(provider, small, now_s=1.0) == (0, 0)


def test_usage_reports_cached_and_written_tokens_in_openais_fields_only():
    """The SDK's PromptTokensDetails: cached_tokens and cache_write_tokens (completion_usage.py lines 37-47); the
    earlier OpenAI style reports no write count, as before."""
    config = MockConfig(cache=STYLE, session="u")
    usage = MockProvider().serve("agent", [SYSTEM, user("A")], [], config, seed=0, now_s=0.0)[1]
    assert usage["prompt_tokens_details"] == {"cached_tokens": 0, "cache_write_tokens": tokens([SYSTEM, user("A")])}
    assert "cache_creation_input_tokens" not in usage
    earlier = MockProvider().serve("agent", [SYSTEM, user("A")], [], MockConfig(cache="openai", session="u"), seed=0)[1]
    assert earlier["prompt_tokens_details"] == {"cached_tokens": 0}


# --- serve-mock --------------------------------------------------------------------------------------------------

def _post(server, **fields):
    return exchange(server, _with(**fields))


def _marked_user(marker):
    return [VALID["messages"][0], {"role": "user", "content": [{"type": "text", "text": "hi",
                                                                "prompt_cache_breakpoint": marker}]}]


@pytest.mark.parametrize("fields, param", [
    ({"prompt_cache_options": {"mode": "later"}}, "prompt_cache_options.mode"),
    ({"prompt_cache_options": {"ttl": "24h"}}, "prompt_cache_options.ttl"),
    ({"prompt_cache_options": {"mode": "implicit", "extra": 1}}, "prompt_cache_options"),
    ({"prompt_cache_options": {"mode": "implicit"}, "prompt_cache_retention": "24h"}, "prompt_cache_options"),
    ({"prompt_cache_retention": "forever"}, "prompt_cache_retention"),
    ({"messages": _marked_user({"mode": "auto"})}, "messages[1].content[0].prompt_cache_breakpoint"),
    ({"messages": [*VALID["messages"], {"role": "assistant", "content": [
        {"type": "text", "text": "x", "prompt_cache_breakpoint": {"mode": "explicit"}}]}]},
     "messages[2].content[0].prompt_cache_breakpoint"),
    ({"messages": _marked_user({"mode": "explicit"}), "cache_control": {"type": "ephemeral"}}, "cache_control"),
])
def test_serve_mock_refuses_bad_cache_fields_with_a_400_naming_the_param(mock_server, fields, param):
    """Both prompt_cache_options and prompt_cache_retention: "Setting both on the same request is rejected by OpenAI"
    (the guide, REFERENCES.md); prompt_cache_retention takes in_memory or 24h (completion_create_params.py line 286)."""
    status, payload, _ = _post(mock_server(cache=STYLE), **fields)
    assert status == 400 and payload["error"]["param"] == param, payload


def test_serve_mock_takes_the_fields_and_caches_by_them(mock_server):
    server = mock_server(cache=STYLE)
    long_system = {"role": "system", "content": SYSTEM["content"]}
    body = {"messages": [long_system, {"role": "user", "content": [
        {"type": "text", "text": "hi", "prompt_cache_breakpoint": {"mode": "explicit", "ttl": "30m"}}]}],
        "prompt_cache_options": {"mode": "explicit", "ttl": "30m"}, "user": "wire"}
    first, second = _post(server, **body), _post(server, **body)
    assert first[0] == second[0] == 200
    assert first[1]["usage"]["prompt_tokens_details"]["cache_write_tokens"] == first[1]["usage"]["prompt_tokens"]
    assert second[1]["usage"]["prompt_tokens_details"]["cached_tokens"] == first[1]["usage"]["prompt_tokens"]


POLICIES = ["auto", "last", "none", "pydantic-ai", {"name": "custom", "system": True}]


@pytest.mark.parametrize("policy", POLICIES, ids=str)
def test_serve_mock_gives_the_in_process_usage_request_by_request(mock_server, policy):
    """A client of `openai/gpt-5.6` at serve-mock (litellm's real HTTP client, chat completions: litellm bridges to
    the Responses API only at api.openai.com) and the mock in process give equal usage, cached and written."""
    server = mock_server(cache=STYLE)
    over_http = LLMClient(LLMProfile(model="openai/gpt-5.6", api_base=server.url, cache_policy=policy),
                          session="parity", seed=0)
    in_process = LLMClient(LLMProfile(model="mock/agent", mock={"cache": STYLE}, price_model="gpt-5.6",
                                      cache_policy=policy), session="parity", seed=0)
    requests = [[SYSTEM, user("A")], [SYSTEM, user("A"), *exchange_of(1)],
                [SYSTEM, user("A"), *exchange_of(1), *exchange_of(2)], [SYSTEM, user("B"), *exchange_of(3)]]
    usages = []
    for number, messages in enumerate(requests):
        remote = over_http.complete(messages, TOOLS, clock_s=60.0 * number)
        local = in_process.complete(messages, TOOLS, clock_s=60.0 * number)
        assert remote.usage == local.usage and remote.cost_usd == pytest.approx(local.cost_usd)
        usages.append(local.usage)
    in_process.end_session()
    assert any(usage.cached_tokens for usage in usages)
    assert all(usage.cache_write_tokens is not None for usage in usages)


# --- billing -----------------------------------------------------------------------------------------------------

def test_writes_cost_the_cost_maps_write_price_1_25x_input_for_the_family():
    """The guide: "For GPT-5.6 models and later model families, cache writes cost 1.25x the uncached input token
    rate"; litellm's cost map (model_prices_and_context_window_backup.json line 38009, gpt-5.6:
    cache_creation_input_token_cost 5e-06 against input 4e-06)."""
    price = Pricing.for_model("gpt-5.6")
    assert litellm.model_cost["gpt-5.6"]["cache_creation_input_token_cost"] == price.cache_write
    assert price.cache_write == pytest.approx(openai_breakpoints.WRITE_PRICE_RATIO * price.input)


def test_a_family_model_without_a_write_price_in_the_cost_map_gets_the_documented_1_25x():
    assert "cache_creation_input_token_cost" not in litellm.model_cost["gpt-6-astra-law"]
    price = Pricing.for_model("gpt-6-astra-law")
    assert price.cache_write == pytest.approx(1.25 * price.input)


def test_earlier_openai_models_bill_writes_as_plain_input_as_before():
    """The guide: "Cache writes have no additional fee on models before the GPT-5.6 family"."""
    price = Pricing.for_model("gpt-5")
    assert price.cache_write == price.input


def test_a_requests_cost_bills_reads_writes_and_the_rest_apart():
    """The guide: input tokens use the uncached, cached or cache-write rate, no fee on top."""
    price = Pricing.for_model("gpt-5.6")
    cost, uncached = price.cost(Usage(input_tokens=100, cached_tokens=30, cache_write_tokens=50, output_tokens=4))
    assert cost == pytest.approx(20 * price.input + 30 * price.cache_read + 50 * price.cache_write + 4 * price.output)
    assert uncached == pytest.approx(100 * price.input + 4 * price.output)


def test_a_runs_row_carries_the_writes_and_their_cost(tmp_path):
    from harness import api
    from harness.results.layout import read_runs

    out = api.run("smoke", strategies="none", families=["work_queue"], limit=1, out=tmp_path / "r",
                  profiles=api.mock_profiles(cache=STYLE, price_model="gpt-5.6"), executor="in_process")
    [row] = read_runs(out)
    assert row["cache_write_tokens"] > 0 and row["cached_tokens"] > 0
    totals = Usage(**{key: row[key] for key in ("input_tokens", "cached_tokens", "cache_write_tokens",
                                                 "output_tokens")})
    assert row["cost_usd"] == pytest.approx(Pricing.for_model("gpt-5.6").cost(totals)[0])


def test_the_mock_refuses_an_unknown_cache_style_naming_the_styles():
    with pytest.raises(ConfigError, match="openai-breakpoints"):
        LLMClient(LLMProfile(model="mock/agent", mock={"cache": "openai-5.6"}), session="x")


def test_marks_of_the_other_families_keep_the_text_the_response_cache_keys_them_by():
    """The response cache keys a request by its marks' text (harness.models.llm): the mode, when unset, adds none."""
    marks = CacheMarks(breakpoints=(Breakpoint("message", 0),), automatic="5m", prompt_cache_key="k")
    assert repr(marks) == ("CacheMarks(breakpoints=(Breakpoint(block='message', index=0, ttl='5m'),), "
                           "automatic='5m', prompt_cache_key='k')")
    assert repr(implicit()).endswith("prompt_cache_mode='implicit')")
