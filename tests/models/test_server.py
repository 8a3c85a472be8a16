"""serve-mock: the mock agent over HTTP through litellm's real OpenAI client gives the in-process results."""
import json
import urllib.request

import litellm

from harness.cli import main
from harness.models.llm import REQUEST_HEADER, SESSION_HEADER, is_context_window_error
from harness.models.mock.provider import MockConfig, MockProvider
from harness.results.layout import read_runs

CLOCK_FIELDS = {"wall_s", "cpu_s", "model"}


def comparable(rows):
    return {row["run_id"]: {k: v for k, v in row.items() if k not in CLOCK_FIELDS} for row in rows}


def http_run_args(server, out, *extra):
    return ["run", "--suite", "smoke", "--strategies", "none", "--workers", "1", "--no-progress", "--out", str(out),
            "--model", "openai/mock-agent", "--api-base", server.url, "--price-model", "claude-sonnet-4-6",
            "--window", "200000", *extra]


def test_http_run_matches_in_process_mock(mock_server, tmp_path):
    """`run --model openai/<name> --api-base` through litellm's HTTP client = the in-process mock."""
    server = mock_server()
    assert main(["run", "--suite", "smoke", "--strategies", "none", "--workers", "1", "--no-progress",
                 "--out", str(tmp_path / "local")]) == 0
    assert main(http_run_args(server, tmp_path / "http", "--max-concurrency", "2")) == 0
    local, remote = read_runs(tmp_path / "local"), read_runs(tmp_path / "http")
    assert {r["model"] for r in remote} == {"openai/mock-agent"}
    assert comparable(remote) == comparable(local)
    assert all(r["termination"] == "submitted" and r["cache_write_tokens"] is not None for r in remote)
    assert server.requests == sum(r["requests"] for r in remote)


def test_models_endpoint_and_cached_tokens_in_usage(mock_server):
    """/v1/models lists the mock; usage reports prompt_tokens_details.cached_tokens (OpenAI-style cache)."""
    server = mock_server(cache="openai")
    with urllib.request.urlopen(server.url + "/models") as reply:
        assert [m["id"] for m in json.load(reply)["data"]] == ["mock-agent", "mock-summarizer"]
    messages = [{"role": "system", "content": "word " * 3000},
                {"role": "user", "content": "Start at record AB-1234 and follow the successor chain through 2 "
                                            "records; submit the sum of their weights."}]
    tools = [{"type": "function", "function": {"name": "search", "description": "search",
                                               "parameters": {"type": "object",
                                                              "properties": {"text": {"type": "string"}}}}}]
    kwargs = dict(model="openai/mock-agent", api_base=server.url, messages=messages, tools=tools, user="session-a")
    first = litellm.completion(**kwargs)
    second = litellm.completion(**kwargs)
    assert first.choices[0].message.tool_calls[0].function.name == "search"
    assert first.usage.prompt_tokens_details.cached_tokens == 0
    assert second.usage.prompt_tokens_details.cached_tokens >= 1024  # per-session cache keyed by `user`


def test_context_window_error_over_http(mock_server):
    """The server's window overflow reaches the client as an error ctxbench recognizes as a context-window
    error (litellm 1.110 maps it to ContextWindowExceededError; 1.105 to a BadRequestError that says so)."""
    server = mock_server(window=50)
    try:
        litellm.completion(model="openai/mock-agent", api_base=server.url, max_retries=0,
                           messages=[{"role": "user", "content": "word " * 200}])
    except litellm.BadRequestError as exc:
        assert is_context_window_error(exc), exc
        return
    raise AssertionError("no context-window error")


def test_summarizing_strategy_over_http_matches_in_process(mock_server, tmp_path):
    """The mock summarizer is served too (`openai/mock-summarizer`): a summarizing run gives the same rows."""
    server = mock_server()
    config = '{"llm_summarizing": {"max_size": 8, "keep_first": 2}}'
    base = ["run", "--suite", "smoke", "--strategies", "llm_summarizing", "--strategy-config", config,
            "--workers", "1", "--no-progress"]
    assert main([*base, "--out", str(tmp_path / "local"),
                 "--profiles", '{"summary": {"model": "mock/summarizer"}}']) == 0
    remote_summary = f'{{"summary": {{"model": "openai/mock-summarizer", "api_base": "{server.url}", ' \
                     '"price_model": "claude-sonnet-4-6"}}'
    assert main([*base, "--out", str(tmp_path / "http"), "--model", "openai/mock-agent", "--api-base", server.url,
                 "--price-model", "claude-sonnet-4-6", "--window", "200000", "--profiles", remote_summary]) == 0
    local, remote = read_runs(tmp_path / "local"), read_runs(tmp_path / "http")
    assert sum(r["summarizer_requests"] for r in remote) > 0
    assert comparable(remote) == comparable(local)


def test_faults_over_http_match_in_process_faults(mock_server, tmp_path):
    """Faults become HTTP 429/500/408 and garbled arguments; litellm maps them back, retries and recovery match."""
    faults = {"rate_limit": 0.1, "server_error": 0.1, "timeout": 0.05, "malformed_tool_args": 0.2}
    retry = '{"initial_delay_s": 0.001, "max_delay_s": 0.002, "max_retries": 8}'
    server = mock_server(faults=faults)
    base = ["run", "--suite", "smoke", "--strategies", "none", "--seeds", "0,1", "--workers", "1", "--no-progress",
            "--retry", retry]
    assert main([*base, "--out", str(tmp_path / "local"), "--mock-faults", json.dumps(faults)]) == 0
    assert main([*base, "--out", str(tmp_path / "http"), "--model", "openai/mock-agent", "--api-base", server.url,
                 "--price-model", "claude-sonnet-4-6", "--window", "200000"]) == 0
    local, remote = read_runs(tmp_path / "local"), read_runs(tmp_path / "http")
    assert sum(r["retries"] for r in remote) > 0
    assert comparable(remote) == comparable(local)
    assert server.requests == sum(r["requests"] + r["retries"] for r in remote)


def test_latency_counts_from_the_request_and_includes_the_mocks_work(mock_server, monkeypatch):
    """--latency-ms: the answer leaves that long after the request arrived, however long the mock took."""
    import time

    server = mock_server(latency_s=0.3)
    serve = server.provider.serve

    def slow_serve(*args, **kwargs):
        time.sleep(0.25)
        return serve(*args, **kwargs)

    monkeypatch.setattr(server.provider, "serve", slow_serve)
    started = time.monotonic()
    litellm.completion(model="openai/mock-agent", api_base=server.url, max_retries=0,
                       messages=[{"role": "user", "content": "hello"}])
    assert 0.3 <= time.monotonic() - started < 0.5  # not 0.3 + 0.25


def _post(server, body, session, index):
    request = urllib.request.Request(server.url + "/chat/completions", data=json.dumps(body).encode(), headers={
        "Content-Type": "application/json", SESSION_HEADER: session, REQUEST_HEADER: str(index)})
    with urllib.request.urlopen(request) as reply:
        return json.load(reply)["choices"][0]["message"]


def test_equal_messages_reach_the_mock_as_the_sessions_earlier_objects_and_changed_ones_do_not(mock_server,
                                                                                             monkeypatch):
    """Each HTTP request is parsed afresh, but the mock's prefix cache and agent memory reuse readings by object
    identity: a message equal to the one at its position in the session's last request is served as that object,
    a changed one as itself, and the replies are the in-process mock's."""
    server = mock_server()
    received = []
    serve = server.provider.serve

    def recording_serve(model, messages, tools, config, seed, **kwargs):
        received.append((messages, tools))
        return serve(model, messages, tools, config, seed, **kwargs)

    monkeypatch.setattr(server.provider, "serve", recording_serve)
    tools = [{"type": "function", "function": {"name": "read_file", "description": "read a file", "parameters": {
        "type": "object", "properties": {"path": {"type": "string"}}}}}]
    call = {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "a.txt"}'}}
    first = [{"role": "system", "content": "You are an agent."},
             {"role": "user", "content": "Start at record AB-1234 and follow the successor chain through 2 records; "
                                         "submit the sum of their weights."},
             {"role": "assistant", "content": "", "tool_calls": [call]},
             {"role": "tool", "tool_call_id": "c1", "content": "AB-1234 weight 7 successor CD-5678"}]
    second = [*first[:3], {**first[3], "content": "[result cleared: call the tool again]"},
              {"role": "user", "content": "Go on."}]
    replies = [_post(server, {"model": "mock-agent", "messages": messages, "tools": tools}, "reuse", index)
               for index, messages in enumerate((first, second))]

    (sent_first, tools_first), (sent_second, tools_second) = received
    assert tools_second is tools_first
    assert all(new is old for new, old in zip(sent_second[:3], sent_first[:3]))
    assert sent_second[3] is not sent_first[3] and sent_second[3] == second[3]
    assert sent_second == second
    local = MockProvider()
    config = MockConfig(session="reuse")
    assert replies == [local.serve("agent", messages, tools, config, seed=None)[0] for messages in (first, second)]
