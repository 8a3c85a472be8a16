"""The LLM layer and the mock provider's window."""
import litellm
import pytest

from harness.models.llm import LLMClient, LLMProfile, is_context_window_error
from harness.models.usage import DEFAULT_PRICE_MODEL, Pricing, Usage, litellm_prices, normalize_usage
from harness.models.mock.provider import register_mock_provider
from harness.core.tokens import count_message, count_tools


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


# Real provider error texts (as providers return them; litellm's exception mapping lists the same wordings).
REAL_OVERFLOW_TEXTS = [
    ("openai", "Error code: 400 - {'error': {'message': \"This model's maximum context length is 128000 tokens. However, "
               "your messages resulted in 130412 tokens. Please reduce the length of the messages.\", 'type': "
               "'invalid_request_error', 'param': 'messages', 'code': 'context_length_exceeded'}}"),
    ("openai", "Your input exceeds the context window of this model. Please adjust your input and try again."),
    ("anthropic", '{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 208154 '
                  'tokens > 200000 maximum"}}'),
    ("bedrock", "Input is too long for requested model."),
    ("bedrock", "ValidationException: Too many input tokens. Max input tokens: 200000, request input tokens: 201334"),
    ("gemini", "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576)."),
    ("cerebras", "Please reduce the length of the messages or completion. Current length is 9120 while limit is 8192"),
    ("llama.cpp", "the request exceeds the available context size, try increasing it"),
    ("vllm", "This model's maximum context length is 32768 tokens. However, you requested 40000 tokens (39000 in the "
             "messages, 1000 in the completion)."),
    ("cohere", "too many tokens: total number of tokens in the prompt cannot exceed 4081 - received 5000."),
]
NOT_OVERFLOW_TEXTS = [
    ("openai", "Error code: 400 - {'error': {'message': \"Invalid 'messages[2].content': string too long. Expected a "
               "string with maximum length 10485760, but got a string with length 10485761 instead.\", 'type': "
               "'invalid_request_error', 'param': 'messages[2].content', 'code': 'string_above_max_length'}}"),
    ("openai", "Invalid 'messages[2].content': string too long. Expected a string with maximum length 10485760, but got "
               "a string with length 12000000 instead."),
    ("openai", "Invalid 'tools[0].function.description': string too long. Expected a string with maximum length 1024, "
               "but got a string with length 2000 instead."),
    ("openai", "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with "
               "'tool_calls'."),
    ("anthropic", "messages.3: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_01."),
]


@pytest.mark.parametrize("provider,text", REAL_OVERFLOW_TEXTS)
def test_recognizer_keeps_every_real_overflow_wording(provider, text):
    """Recognizing a context-window error (seed 000: "a recognized context-window error"; the wordings are the ones
    litellm's exception_mapping_utils maps to ContextWindowExceededError): a plain BadRequestError saying so counts."""
    assert is_context_window_error(litellm.BadRequestError(message=text, model="x", llm_provider=provider))
    assert is_context_window_error(litellm.ContextWindowExceededError(message=text, model="x", llm_provider=provider))


@pytest.mark.parametrize("provider,text", NOT_OVERFLOW_TEXTS)
def test_recognizer_refuses_per_field_limits_and_malformed_history(provider, text):
    """Seed 000: "malformed message history do[es] not select this path"; OpenAI's per-field "string too long.
    Expected a string with maximum length" (code string_above_max_length, which litellm's
    ExceptionCheckers.is_error_str_context_window_exceeded also excludes) is no context-window error: recognizing it
    bought a paid summary that cannot help. Failed on the old bare "too long" pattern."""
    assert not is_context_window_error(litellm.BadRequestError(message=text, model="x", llm_provider=provider))


def test_recognizer_refuses_a_per_field_limit_even_when_litellm_mapped_it_to_an_overflow():
    """litellm's checker lists "string too long. expected a string with maximum length" as an overflow unless the
    body's code is in the text; such a ContextWindowExceededError is still a per-field limit."""
    text = NOT_OVERFLOW_TEXTS[1][1]
    assert not is_context_window_error(litellm.ContextWindowExceededError(message=text, model="x",
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


def test_litellm_gets_the_profiles_prices_for_a_model_it_cannot_price_and_they_are_not_sent(monkeypatch):
    """A model missing from litellm's cost map gets the profile's per-token prices as litellm's custom pricing
    (so litellm skips guessing at the name on every request); they stay in litellm: the provider never sees them."""
    import json
    import threading
    from http.server import BaseHTTPRequestHandler, HTTPServer

    bodies = []

    class Provider(BaseHTTPRequestHandler):
        def do_POST(self):
            bodies.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            data = json.dumps({"id": "r1", "object": "chat.completion", "created": 0, "model": "m", "choices": [
                {"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            return

    pricing = Pricing.for_model(DEFAULT_PRICE_MODEL)
    assert litellm_prices("openai/not-in-the-cost-map", pricing) == {
        "input_cost_per_token": pricing.input, "output_cost_per_token": pricing.output}
    assert litellm_prices(DEFAULT_PRICE_MODEL, pricing) == {}  # litellm knows it: nothing changes
    assert litellm_prices("openai/not-in-the-cost-map", None) == {}
    server = HTTPServer(("127.0.0.1", 0), Provider)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        profile = LLMProfile(model="openai/not-in-the-cost-map", api_base=f"http://127.0.0.1:{server.server_port}/v1",
                             price_model=DEFAULT_PRICE_MODEL, params={"api_key": "unused"})
        result = LLMClient(profile, session="prices").complete([{"role": "user", "content": "hello"}], None)
    finally:
        server.shutdown()
    assert result.cost_usd == pytest.approx(3 * pricing.input + 1 * pricing.output)
    assert [sorted(key for key in body if "cost" in key) for body in bodies] == [[]]


@pytest.mark.parametrize("via", ["direct", "litellm"])
def test_request_arguments_made_once_per_tool_list_follow_a_new_list_and_keep_no_reply(via):
    """Ours: a client makes its request arguments once per tool list (LLMClient._kwargs). A new
    list (or none) is what the next request sends, not the memo's; a trace replay's reply is added to a copy, so
    the request after it is the agent's own."""
    register_mock_provider()
    messages = [{"role": "system", "content": "You are an agent."}, {"role": "user", "content": "hello " * 1500}]
    tools = [{"type": "function", "function": {"name": "f", "description": "d",
                                               "parameters": {"type": "object", "properties": {}}}}]
    client = LLMClient(LLMProfile(mock={"cache": "anthropic", "via": via}), session=f"t-kwargs-{via}")
    with_tools = client.complete(messages, tools)
    assert with_tools.usage.input_tokens == sum(count_message(m) for m in messages) + count_tools(tools)
    without = client.complete(messages, None)
    assert without.usage.input_tokens == sum(count_message(m) for m in messages)
    told = {"role": "assistant", "content": "the recorded reply"}
    assert client.complete(messages, tools, reply=told).message["content"] == "the recorded reply"
    assert client.complete(messages, tools).message["content"] != "the recorded reply"
    client.end_session()
