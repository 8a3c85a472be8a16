"""serve-mock's Anthropic Messages API route (harness.models.serve_mock.anthropic_wire): litellm's real Anthropic client end to
end, cache markers read back as the marks placed, usage in Anthropic's fields, errors in Anthropic's shape."""
import json
import urllib.error
import urllib.request

import litellm
import pytest

from harness.models.cache_marks import Breakpoint, CacheMarks
from harness.cli import main
from harness.models.llm import REQUEST_HEADER, SESSION_HEADER, is_context_window_error
from harness.models.mock.provider import register_mock_provider
from harness.results.layout import read_runs

CLOCK_FIELDS = {"wall_s", "cpu_s", "model"}
MODEL = "anthropic/claude-sonnet-4-6"
SEARCH = {"type": "function", "function": {"name": "search", "description": "search the records",
                                           "parameters": {"type": "object",
                                                          "properties": {"text": {"type": "string"}}}}}
SYSTEM_TEXT = "You are a careful agent. " * 300
TASK = "Start at record AB-1234 and follow the successor chain through 2 records; submit the sum of their weights."


@pytest.fixture
def server(mock_server, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "unused-by-serve-mock")
    return mock_server()


def base(server):
    return server.url.removesuffix("/v1")  # litellm's Anthropic client adds /v1/messages


def comparable(rows):
    return {row["run_id"]: {k: v for k, v in row.items() if k not in CLOCK_FIELDS} for row in rows}


def record_serve(provider, monkeypatch):
    """What provider.serve receives: (model, messages, tools, marks) per request."""
    received = []
    serve = provider.serve

    def recording(model, messages, tools, config, seed, **kwargs):
        received.append((model, messages, tools, kwargs.get("marks")))
        return serve(model, messages, tools, config, seed, **kwargs)

    monkeypatch.setattr(provider, "serve", recording)
    return received


@pytest.mark.slow
def test_every_native_strategy_through_anthropic_gives_the_in_process_rows(server, tmp_path, monkeypatch):
    """`run --model anthropic/claude-sonnet-4-6 --api-base` through litellm's Anthropic transformation = the
    in-process mock, strategy by strategy (summaries from `anthropic/claude-summarizer`), under the default cache
    policy (`auto`: automatic caching plus the system prompt and the last tool) and a seed other than 0 (it travels
    in a header: the Messages API has no seed field)."""
    received = record_serve(server.provider, monkeypatch)
    common = ["run", "--suite", "smoke", "--strategies", "all", "--workers", "1", "--no-progress", "--seeds", "3",
              "--strategy-config", '{"llm_summarizing": {"max_size": 8, "keep_first": 2}}']  # so that it summarizes
    assert main([*common, "--out", str(tmp_path / "local")]) == 0
    summary = {"summary": {"model": "anthropic/claude-summarizer", "api_base": base(server),
                           "price_model": "claude-sonnet-4-6"}}
    assert main([*common, "--out", str(tmp_path / "http"), "--model", MODEL, "--api-base", base(server),
                 "--price-model", "claude-sonnet-4-6", "--window", "200000", "--profiles", json.dumps(summary)]) == 0
    local, remote = read_runs(tmp_path / "local"), read_runs(tmp_path / "http")
    assert len(remote) == len(local) and {r["model"] for r in remote} == {MODEL}
    assert comparable(remote) == comparable(local)
    assert sum(r["summarizer_requests"] for r in remote) > 0
    assert sum(r["cache_write_tokens"] for r in remote) > 0 and sum(r["cached_tokens"] for r in remote) > 0
    assert server.requests == len(received) == sum(r["requests"] + r["summarizer_requests"] for r in remote)
    assert all(marks.automatic == "5m" and Breakpoint("message", 0) in marks.breakpoints for *_, marks in received)
    assert {model for model, *_ in received} == {"agent", "summarizer"}


def marked_request():
    """An OpenAI-format request with a marker of each kind litellm maps to Anthropic's, its unmarked messages
    and tools, and the marks it places."""
    call = {"id": "call_1", "type": "function", "function": {"name": "search", "arguments": '{"text": "AB-1234"}'}}
    plain = [{"role": "system", "content": SYSTEM_TEXT}, {"role": "user", "content": TASK},
             {"role": "assistant", "content": "", "tool_calls": [call]},
             {"role": "tool", "tool_call_id": "call_1", "name": "search", "content": "AB-1234: weight 7"}]
    marked = [{**plain[0], "cache_control": {"type": "ephemeral", "ttl": "1h"}}, plain[1],
              {**plain[2], "tool_calls": [{**call, "cache_control": {"type": "ephemeral"}}]},
              {**plain[3], "cache_control": {"type": "ephemeral"}}]
    tools = [{**SEARCH, "cache_control": {"type": "ephemeral", "ttl": "1h"}}]
    marks = (Breakpoint("tool", 0, "1h"), Breakpoint("message", 0, "1h"), Breakpoint("message", 2),
             Breakpoint("message", 3))
    return marked, tools, plain, marks


def test_markers_placed_through_litellm_arrive_as_the_marks_placed_on_each_route_and_in_process(server,
                                                                                              monkeypatch):
    marked, tools, plain, breakpoints = marked_request()
    received = record_serve(server.provider, monkeypatch)
    headers = {SESSION_HEADER: "marks", REQUEST_HEADER: "0"}
    litellm.completion(model=MODEL, api_base=base(server), messages=marked, tools=tools, max_retries=0,
                       cache_control={"type": "ephemeral"}, extra_headers=headers)
    litellm.completion(model="openai/mock-agent", api_base=server.url, messages=marked, tools=tools, max_retries=0,
                       prompt_cache_key="conversation-1", extra_headers=headers)
    in_process = record_serve(register_mock_provider(), monkeypatch)
    litellm.completion(model="mock/agent", messages=marked, tools=tools, cache_control={"type": "ephemeral"},
                       mock_config={"session": "marks", "via": "litellm"})
    anthropic, openai = received
    assert anthropic[3] == in_process[0][3] == CacheMarks(breakpoints=breakpoints, automatic="5m")
    assert openai[3] == CacheMarks(breakpoints=breakpoints, prompt_cache_key="conversation-1")
    for _, messages, served_tools, _ in (anthropic, openai, in_process[0]):
        assert messages == plain and served_tools == [SEARCH]  # the agent reads what it would without markers


def post(server, body, headers=None, path="/v1/messages"):
    request = urllib.request.Request(base(server) + path, data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(request) as reply:
            return reply.status, json.load(reply)
    except urllib.error.HTTPError as exc:
        return exc.code, json.load(exc)


def anthropic_body(**fields):
    body = {"model": "claude-sonnet-4-6", "max_tokens": 1024,
            "system": [{"type": "text", "text": SYSTEM_TEXT, "cache_control": {"type": "ephemeral", "ttl": "1h"}}],
            "tools": [{"name": "search", "description": "search the records",
                       "input_schema": SEARCH["function"]["parameters"]}],
            "messages": [{"role": "user", "content": [{"type": "text", "text": TASK,
                                                       "cache_control": {"type": "ephemeral"}}]}]}
    return {**body, **fields}


def test_usage_in_anthropics_fields_split_by_ttl_and_a_tool_use_reply(server):
    status, first = post(server, anthropic_body(), {SESSION_HEADER: "usage", REQUEST_HEADER: "0"})
    assert status == 200 and first["type"] == "message" and first["stop_reason"] == "tool_use"
    assert [block["type"] for block in first["content"]][-1] == "tool_use"
    usage = first["usage"]
    assert usage["cache_read_input_tokens"] == usage["input_tokens"] == 0  # all of it written, at 2 breakpoints
    split = usage["cache_creation"]
    assert split["ephemeral_1h_input_tokens"] > 1024 and split["ephemeral_5m_input_tokens"] > 0
    assert usage["cache_creation_input_tokens"] == split["ephemeral_1h_input_tokens"] + split["ephemeral_5m_input_tokens"]
    call = first["content"][-1]
    follow = anthropic_body(messages=[
        anthropic_body()["messages"][0], {"role": "assistant", "content": first["content"]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call["id"], "content": "no such record"}]}])
    status, second = post(server, follow, {SESSION_HEADER: "usage", REQUEST_HEADER: "1"})
    assert status == 200
    assert second["usage"]["cache_read_input_tokens"] == usage["cache_creation_input_tokens"]
    assert second["usage"]["cache_creation_input_tokens"] == 0  # nothing marked after the read prefix
    assert second["usage"]["input_tokens"] > 0


def test_without_any_marker_nothing_is_cached_and_top_level_cache_control_caches_the_last_block(server):
    """Anthropic caches nothing without a marker; a top-level `cache_control` is its automatic caching."""
    body = anthropic_body(system=SYSTEM_TEXT, messages=[{"role": "user", "content": TASK}])
    status, reply = post(server, body, {SESSION_HEADER: "plain", REQUEST_HEADER: "0"})
    assert status == 200 and reply["usage"]["cache_creation_input_tokens"] == 0
    status, reply = post(server, {**body, "cache_control": {"type": "ephemeral"}},
                         {SESSION_HEADER: "automatic", REQUEST_HEADER: "0"})
    assert status == 200 and reply["usage"]["cache_creation"]["ephemeral_5m_input_tokens"] > 1024


@pytest.mark.parametrize("fields, named", [
    ({"model": ""}, "model"),
    ({"max_tokens": 0}, "max_tokens"),
    ({"messages": []}, "messages"),
    ({"messages": [{"role": "system", "content": "x"}]}, "messages[0].role"),
    ({"messages": [{"role": "user", "content": [{"type": "image", "source": {}}]}]}, "messages[0].content[0].type"),
    ({"messages": [{"role": "user", "content": [{"type": "text", "text": 5}]}]}, "messages[0].content[0].text"),
    ({"messages": [{"role": "user", "content": [{"type": "tool_result"}]}]}, "messages[0].content[0].tool_use_id"),
    ({"messages": [{"role": "user", "content": "hi"},
                   {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "search",
                                                      "input": "[]"}]}]}, "messages[1].content[0].input"),
    ({"system": 5}, "system"),
    ({"system": [{"type": "text", "text": "x", "cache_control": {"type": "ephemeral", "ttl": "2h"}}]},
     "system[0].cache_control.ttl"),
    ({"tools": [{"name": "search"}]}, "tools[0].input_schema"),
    ({"tools": "search"}, "tools"),
    ({"cache_control": {"type": "forever"}}, "cache_control"),
    ({"stream": True}, "stream"),
    ({"metadata": {"user_id": 7}}, "metadata.user_id"),
    ({"messages": [{"role": "user", "content": [{"type": "text", "text": "x", "cache_control": {"type": "ephemeral"}}
                                                for _ in range(5)]}]}, "a maximum of 4 blocks"),
])
def test_a_malformed_body_is_an_anthropic_400_naming_the_field(server, fields, named):
    status, body = post(server, anthropic_body(**fields))
    assert status == 400 and body["type"] == "error" and body["error"]["type"] == "invalid_request_error"
    assert named in body["error"]["message"]


def test_a_body_that_is_no_json_object_is_an_anthropic_400(server):
    request = urllib.request.Request(base(server) + "/v1/messages", data=b"{not json", method="POST")
    with pytest.raises(urllib.error.HTTPError) as raised:
        urllib.request.urlopen(request)
    body = json.load(raised.value)
    assert raised.value.code == 400 and body["error"]["type"] == "invalid_request_error"
    assert post(server, [1, 2])[1]["error"]["message"].endswith("expected a JSON object, got list")


def test_a_context_overflow_is_worded_as_anthropic_words_it_and_litellm_maps_it(mock_server, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "unused-by-serve-mock")
    server = mock_server(window=50)
    status, body = post(server, anthropic_body(system="word " * 200))
    assert status == 400 and body["error"]["type"] == "invalid_request_error"
    assert body["error"]["message"].startswith("prompt is too long: ") and body["error"]["message"].endswith(
        " tokens > 50 maximum")
    with pytest.raises(litellm.ContextWindowExceededError) as raised:
        litellm.completion(model=MODEL, api_base=base(server), max_retries=0,
                           messages=[{"role": "user", "content": "word " * 200}])
    assert is_context_window_error(raised.value)


@pytest.mark.parametrize("fault, status, kind, error", [
    ("rate_limit", 429, "rate_limit_error", litellm.RateLimitError),
    ("server_error", 500, "api_error", litellm.InternalServerError),
    ("timeout", 504, "timeout_error", litellm.Timeout),
])
def test_faults_are_anthropic_statuses_litellm_maps_back(mock_server, monkeypatch, fault, status, kind, error):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "unused-by-serve-mock")
    server = mock_server(faults={fault: 1.0})
    assert post(server, anthropic_body()) == (status, {"type": "error", "error": {
        "type": kind, "message": post(server, anthropic_body())[1]["error"]["message"]}})
    with pytest.raises(error):
        litellm.completion(model=MODEL, api_base=base(server), max_retries=0, messages=[{"role": "user",
                                                                                        "content": TASK}])


def test_a_failure_of_the_mock_is_a_500_api_error_that_shows_no_internals(server, monkeypatch):
    def broken(*args, **kwargs):
        raise KeyError("internal detail /work/secret")

    monkeypatch.setattr(server.provider, "serve", broken)
    status, body = post(server, anthropic_body())
    assert status == 500 and body["error"]["type"] == "api_error" and "secret" not in body["error"]["message"]


def test_a_malformed_marker_on_the_openai_route_is_a_400_naming_it(server):
    body = {"model": "mock-agent", "messages": [{"role": "user", "content": TASK,
                                                 "cache_control": {"type": "ephemeral", "ttl": "10m"}}]}
    status, reply = post(server, body, path="/v1/chat/completions")
    assert status == 400 and "messages[0].cache_control.ttl" in reply["error"]["message"]


def test_no_seed_is_sent_to_a_provider_litellm_says_refuses_it(monkeypatch):
    """litellm refuses `seed` for Anthropic (UnsupportedParamsError before any request), api base or not."""
    from harness.models.llm import LLMClient, LLMProfile

    monkeypatch.setenv("ANTHROPIC_API_KEY", "unused")
    monkeypatch.setenv("OPENAI_API_KEY", "unused")
    anthropic = LLMClient(LLMProfile(model=MODEL, api_base="http://127.0.0.1:1"), seed=3)
    openai = LLMClient(LLMProfile(model="openai/mock-agent", api_base="http://127.0.0.1:1/v1"), seed=3)
    assert "seed" not in anthropic._make_kwargs(None) and openai._make_kwargs(None)["seed"] == 3


@pytest.mark.parametrize("data, headers, status, kind", [
    (b"[" * 200_000 + b"]" * 200_000, {}, 400, "invalid_request_error"),
    (b"{}", {"Content-Length": "99999999999999999999"}, 413, "request_too_large"),
    (b"{}", {"X-Ctxbench-Attempt": "-1.5"}, 400, "invalid_request_error"),
])
def test_the_anthropic_route_bounds_a_body_before_reading_it_and_refuses_in_anthropics_shape(server, data, headers,
                                                                                            status, kind):
    """The bounds of every route (harness.models.serve_mock.http_bounds: size, nesting, headers) hold on the Messages route too,
    and its refusals keep Anthropic's error shape."""
    request = urllib.request.Request(base(server) + "/v1/messages", data=data, method="POST", headers=headers)
    with pytest.raises(urllib.error.HTTPError) as raised:
        urllib.request.urlopen(request)
    body = json.loads(raised.value.read())
    assert (raised.value.code, body["type"], body["error"]["type"]) == (status, "error", kind)
