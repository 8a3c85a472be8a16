"""The LLM layer (issue 2.3) and the mock provider's window (issue 2.4)."""
import litellm
import pytest

from harness.llm import DEFAULT_PRICE_MODEL, LLMClient, LLMProfile, Pricing, Usage, is_context_window_error, normalize_usage
from harness.mock.provider import register_mock_provider
from harness.tokens import count_message, count_tools


def test_openai_usage_maps_cached_tokens_and_leaves_writes_unknown():
    usage = normalize_usage({"prompt_tokens": 2000, "completion_tokens": 50,
                             "prompt_tokens_details": {"cached_tokens": 1536}})
    assert usage == Usage(input_tokens=2000, cached_tokens=1536, cache_write_tokens=None, output_tokens=50)


def test_usage_without_cache_details_is_unknown_not_zero():
    usage = normalize_usage({"prompt_tokens": 10, "completion_tokens": 2})
    assert usage.cached_tokens is None and usage.cache_write_tokens is None


def test_anthropic_usage_as_litellm_exposes_it():
    usage = normalize_usage(litellm.Usage(prompt_tokens=3000, completion_tokens=10, cache_read_input_tokens=2000,
                                          cache_creation_input_tokens=500))
    assert (usage.input_tokens, usage.cached_tokens, usage.cache_write_tokens) == (3000, 2000, 500)


def test_default_mock_bills_as_a_current_claude_sonnet_with_cache_prices():
    pricing = Pricing.for_model(DEFAULT_PRICE_MODEL)
    assert DEFAULT_PRICE_MODEL.startswith("claude-sonnet")
    assert pricing.cache_write == pytest.approx(1.25 * pricing.input)
    assert pricing.cache_read == pytest.approx(0.1 * pricing.input)
    cost, uncached = pricing.cost(Usage(input_tokens=10_000, cached_tokens=8_000, cache_write_tokens=1_000,
                                        output_tokens=100))
    assert cost == pytest.approx(1_000 * pricing.input + 8_000 * pricing.cache_read + 1_000 * pricing.cache_write
                                 + 100 * pricing.output)
    assert uncached == pytest.approx(10_000 * pricing.input + 100 * pricing.output)
    assert cost < uncached


def test_mock_raises_litellms_context_window_error_over_its_window():
    client = LLMClient(LLMProfile(mock={"window": 50}), session="t-window")
    with pytest.raises(litellm.ContextWindowExceededError) as info:
        client.complete([{"role": "user", "content": "word " * 200}], None)
    assert is_context_window_error(info.value)


def test_overflow_reported_as_plain_bad_request_is_recognized_by_its_text():
    plain = litellm.BadRequestError(message="This model's maximum context length is 8192 tokens",
                                    model="x", llm_provider="openai")
    assert is_context_window_error(plain)
    other = litellm.BadRequestError(message="messages: tool_use ids without tool_result", model="x",
                                    llm_provider="anthropic")
    assert not is_context_window_error(other)
    assert not is_context_window_error(litellm.RateLimitError(message="slow down", model="x", llm_provider="openai"))
    assert not is_context_window_error(litellm.AuthenticationError(message="bad key", model="x",
                                                                   llm_provider="openai"))


def test_mock_usage_is_the_sum_of_cached_per_message_counts_through_litellm():
    register_mock_provider()
    messages = [{"role": "system", "content": "You are an agent."}, {"role": "user", "content": "hello " * 1500}]
    tools = [{"type": "function", "function": {"name": "f", "description": "d",
                                               "parameters": {"type": "object", "properties": {}}}}]
    client = LLMClient(LLMProfile(mock={"cache": "anthropic"}), session="t-usage")
    first = client.complete(messages, tools)
    expected = sum(count_message(m) for m in messages) + count_tools(tools)
    assert first.usage.input_tokens == expected
    assert first.usage.cached_tokens == 0 and first.usage.cache_write_tokens == expected
    second = client.complete(messages + [first.message, {"role": "user", "content": "go on"}], tools)
    assert second.usage.cached_tokens == expected
    assert second.cost_usd < second.cost_usd_uncached
    client.end_session()


def test_usage_as_dict_has_every_field():
    import dataclasses

    usage = Usage(input_tokens=10, cached_tokens=4, cache_write_tokens=3, output_tokens=2)
    assert usage.as_dict() == dataclasses.asdict(usage)
