"""The simulated provider caches where a request's cache marks ask (harness.models.cache_marks), in process and as
markers read back from the wire (harness.models.mock.wire_marks); docs/mock.md gives each rule's source."""
import pytest

from harness.models.cache_marks import NO_MARKS, Breakpoint, CacheMarks
from harness.models.mock.provider import MockConfig, MockProvider, content_blocks
from harness.models.mock.wire_marks import MarkerError, read_marks
from harness.core.tokens import count_tools

SYSTEM = {"role": "system", "content": "You are a careful agent. " * 300}  # ~1,500 tokens
USER = {"role": "user", "content": "Start at record AB-1234 and follow the successor chain through 2 records."}


def serve(provider, messages, tools=(), marks=None, session="s", now_s=0.0):
    config = MockConfig(session=session)
    return provider.serve("agent", messages, list(tools), config, seed=0, now_s=now_s, marks=marks)[1]


def exchange(number, calls):
    """An assistant message with `calls` tool calls and their results."""
    ids = [f"call_{number}_{k}" for k in range(calls)]
    assistant = {"role": "assistant", "content": "",
                 "tool_calls": [{"id": i, "type": "function", "function": {"name": "search", "arguments": "{}"}}
                                for i in ids]}
    return [assistant, *({"role": "tool", "tool_call_id": i, "name": "search", "content": f"result {i}"}
                         for i in ids)]


def test_a_request_that_asks_for_nothing_is_not_cached_as_anthropic_caches_nothing_without_a_marker():
    """Anthropic's prompt-caching docs: caching happens at `cache_control` breakpoints only (docs/mock.md)."""
    provider = MockProvider()
    serve(provider, [SYSTEM, USER])
    second = serve(provider, [SYSTEM, USER, *exchange(1, 1)], now_s=1.0)
    assert (second["cache_read_input_tokens"], second["cache_creation_input_tokens"]) == (0, 0)


AUTOMATIC = CacheMarks(automatic="5m")  # Anthropic's automatic caching: a breakpoint on the last block


def test_a_request_with_no_breakpoint_is_not_cached():
    provider = MockProvider()
    serve(provider, [SYSTEM, USER], marks=NO_MARKS)
    usage = serve(provider, [SYSTEM, USER], marks=NO_MARKS, now_s=1.0)
    assert (usage["cache_read_input_tokens"], usage["cache_creation_input_tokens"]) == (0, 0)


def test_usage_reports_writes_by_ttl_in_litellms_anthropic_fields():
    provider = MockProvider()
    marks = CacheMarks(breakpoints=(Breakpoint("message", 0, "1h"), Breakpoint("message", 1, "5m")))
    usage = serve(provider, [SYSTEM, USER], marks=marks)
    details = usage["prompt_tokens_details"]
    assert details["cache_creation_tokens"] == usage["cache_creation_input_tokens"] == usage["prompt_tokens"]
    split = details["cache_creation_token_details"]
    assert split["ephemeral_1h_input_tokens"] > 1024 and split["ephemeral_5m_input_tokens"] > 0
    assert split["ephemeral_1h_input_tokens"] + split["ephemeral_5m_input_tokens"] == usage["prompt_tokens"]


def test_an_assistant_message_with_k_tool_calls_and_its_results_are_2k_blocks_of_the_lookback():
    assert content_blocks(exchange(0, 3)[0]) == 3
    assert content_blocks({"role": "assistant", "content": "why", "tool_calls": exchange(0, 3)[0]["tool_calls"]}) == 4
    assert content_blocks(exchange(0, 1)[1]) == 1
    for calls, read in ((9, True), (10, False)):  # 2 x 9 = 18 blocks back; 20 is past the 20 checked
        provider = MockProvider()
        first = serve(provider, [SYSTEM, USER], marks=AUTOMATIC)
        usage = serve(provider, [SYSTEM, USER, *exchange(1, calls)], marks=AUTOMATIC, now_s=1.0)
        assert usage["cache_read_input_tokens"] == (first["prompt_tokens"] if read else 0), calls


def test_a_breakpoint_on_an_earlier_tool_caches_the_tool_list_up_to_it():
    tools = [{"type": "function", "function": {"name": f"tool{k}", "description": "Looks things up. " * 200,
                                               "parameters": {"type": "object", "properties": {}}}}
             for k in range(3)]
    marks = CacheMarks(breakpoints=(Breakpoint("tool", 1),))
    provider = MockProvider()
    first = serve(provider, [USER], tools, marks=marks)
    assert first["cache_creation_input_tokens"] == count_tools(tools[:2])
    changed = [*tools[:2], {"type": "function", "function": {**tools[2]["function"], "description": "new"}}]
    second = serve(provider, [USER], changed, marks=marks, now_s=1.0)
    assert second["cache_read_input_tokens"] == count_tools(tools[:2])


def test_the_minimum_cacheable_length_is_the_billed_models():
    provider = MockProvider()
    config = MockConfig(session="haiku", price_model="claude-haiku-4-5-20251001")
    usage = provider.serve("agent", [SYSTEM, USER], [], config, seed=0)[1]
    assert 1024 < usage["prompt_tokens"] < 4096 and usage["cache_creation_input_tokens"] == 0


def test_a_breakpoint_outside_the_request_is_a_client_bug():
    with pytest.raises(ValueError, match="outside the request"):
        serve(MockProvider(), [USER], marks=CacheMarks(breakpoints=(Breakpoint("message", 3),)))


def test_read_marks_takes_every_marker_off_and_names_where_it_was():
    plain = [dict(SYSTEM), dict(USER), *exchange(1, 2), {"role": "user", "content": [{"type": "text", "text": "a"},
                                                                                    {"type": "text", "text": "b"}]}]
    tools = [{"type": "function", "function": {"name": "search", "parameters": {}}}]
    marked = [
        {**plain[0], "cache_control": {"type": "ephemeral", "ttl": "1h"}},
        {**plain[1], "content": [{"type": "text", "text": USER["content"], "cache_control": {"type": "ephemeral"}}]},
        {**plain[2], "tool_calls": [plain[2]["tool_calls"][0],
                                    {**plain[2]["tool_calls"][1], "cache_control": {"type": "ephemeral"}}]},
        plain[3], plain[4], plain[5],
    ]
    messages, clean_tools, marks = read_marks(marked, [{**tools[0], "cache_control": {"type": "ephemeral"}}],
                                              {"type": "ephemeral"}, "conversation-1")
    assert messages == plain and clean_tools == tools
    assert marks == CacheMarks(breakpoints=(Breakpoint("tool", 0), Breakpoint("message", 0, "1h"),
                                            Breakpoint("message", 1), Breakpoint("message", 2)),
                               automatic="5m", prompt_cache_key="conversation-1")
    assert messages[3] is plain[3]  # unmarked messages are passed on as they came
    parts = [plain[5]["content"][0], {**plain[5]["content"][1], "cache_control": {"type": "ephemeral", "ttl": "5m"}}]
    assert read_marks([{**plain[5], "content": parts}], []) == \
        ([plain[5]], [], CacheMarks(breakpoints=(Breakpoint("message", 0),)))  # several parts stay parts
    assert read_marks(plain, tools) == (plain, tools, None)  # no marker at all: the provider's default


@pytest.mark.parametrize("marker, error", [
    ({"type": "persistent"}, r"messages\[0\].cache_control: expected"),
    ({"type": "ephemeral", "ttl": "2h"}, r"messages\[0\].cache_control.ttl: must be one of 5m, 1h"),
    ("ephemeral", r"messages\[0\].cache_control: expected"),
])
def test_read_marks_names_a_malformed_marker(marker, error):
    with pytest.raises(MarkerError, match=error):
        read_marks([{**USER, "cache_control": marker}], [])


def test_read_marks_refuses_a_fifth_marker():
    with pytest.raises(MarkerError, match="a maximum of 4 blocks with cache_control"):
        read_marks([{**USER, "cache_control": {"type": "ephemeral"}}] * 5, [])
