"""serve-mock under attack: malformed requests get a 4xx in OpenAI's error shape naming the field, never a 500 with
internals or a completion; concurrent clients sharing a session get correct answers; no traceback on stderr."""
import http.client
import json
import socket
import threading
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.models.serve_mock.http_bounds import MAX_BODY_BYTES, MAX_JSON_DEPTH, json_depth
from harness.models.mock.provider import MockConfig, MockProvider

VALID = {"model": "mock-agent", "messages": [
    {"role": "system", "content": "You are an agent."},
    {"role": "user", "content": "Start at record AB-1234 and follow the successor chain through 2 records; "
                                "submit the sum of their weights."}]}
CALL = {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "a.txt"}'}}


def _with(**fields):
    return json.dumps({**VALID, **fields}).encode()


def _messages(*extra):
    return _with(messages=[*VALID["messages"], *extra])


def exchange(server, body, headers=None, method="POST", path="/v1/chat/completions", connection=None):
    """(status, parsed JSON body, response headers) of one request; `body` bytes are sent as they are."""
    conn = connection or http.client.HTTPConnection("127.0.0.1", server.server_address[1], timeout=30)
    conn.putrequest(method, path, skip_accept_encoding=True)
    sent = {"Content-Type": "application/json", **({} if body is None else {"Content-Length": str(len(body))}),
            **(headers or {})}
    for name, value in sent.items():
        if value is not None:
            conn.putheader(name, value)
    conn.endheaders(body)
    reply = conn.getresponse()
    data = reply.read()
    assert reply.getheader("Content-Type") == "application/json"
    assert int(reply.getheader("Content-Length")) == len(data)
    return reply.status, json.loads(data), reply


MALFORMED = {  # name: (body, extra headers, status, param)
    "message_not_an_object": (_with(messages=[5, 6]), {}, 400, "messages[0]"),
    "content_an_object": (_messages({"role": "user", "content": {"a": 1}}), {}, 400, "messages[2].content"),
    "tools_a_string": (_with(tools="nope"), {}, 400, "tools"),
    "content_nan": (_messages().replace(b'"You are an agent."', b"NaN"), {}, 400, None),
    "temperature_infinity": (_with().replace(b"{", b'{"temperature": Infinity, ', 1), {}, 400, None),
    "seed_overflowing_a_float": (_with().replace(b"{", b'{"temperature": 1e999, ', 1), {}, 400, None),
    "role_alien": (_messages({"role": "alien", "content": "hi"}), {}, 400, "messages[2].role"),
    "role_missing": (_messages({"content": "hi"}), {}, 400, "messages[2].role"),
    "messages_empty": (_with(messages=[]), {}, 400, "messages"),
    "messages_missing": (json.dumps({"model": "mock-agent"}).encode(), {}, 400, "messages"),
    "model_missing": (json.dumps({"messages": VALID["messages"]}).encode(), {}, 400, "model"),
    "body_an_array": (b"[1, 2]", {}, 400, None),
    "body_not_json": (b"{'model': 1}", {}, 400, None),
    "body_not_utf8": (b'{"model": "\xff"}', {}, 400, None),
    "temperature_hot": (_with(temperature="hot"), {}, 400, "temperature"),
    "temperature_above_2": (_with(temperature=2.5), {}, 400, "temperature"),
    "top_p_above_1": (_with(top_p=1.5), {}, 400, "top_p"),
    "max_tokens_zero": (_with(max_tokens=0), {}, 400, "max_tokens"),
    "seed_a_float": (_with(seed=1.5), {}, 400, "seed"),
    "seed_past_int64": (_with(seed=2**63), {}, 400, "seed"),
    "seed_a_boolean": (_with(seed=True), {}, 400, "seed"),
    "n_two": (_with(n=2), {}, 400, "n"),
    "stream_true": (_with(stream=True), {}, 400, "stream"),
    "unknown_argument": (_with(foo=1), {}, 400, "foo"),
    "tool_message_without_call_id": (_messages({"role": "assistant", "content": None, "tool_calls": [CALL]},
                                               {"role": "tool", "content": "x"}), {}, 400,
                                     "messages[3].tool_call_id"),
    "tool_call_without_arguments": (_messages({"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "read_file"}}]}), {}, 400,
        "messages[2].tool_calls[0].function.arguments"),
    "tool_calls_on_a_user_message": (_messages({"role": "user", "content": "x", "tool_calls": [CALL]}), {}, 400,
                                     "messages[2].tool_calls"),
    "assistant_content_null_without_calls": (_messages({"role": "assistant", "content": None}), {}, 400,
                                             "messages[2].content"),
    "content_part_of_unknown_type": (_messages({"role": "user", "content": [{"type": "video", "video": {}}]}), {},
                                     400, "messages[2].content[0].type"),
    "content_part_text_a_number": (_messages({"role": "user", "content": [{"type": "text", "text": 5}]}), {}, 400,
                                   "messages[2].content[0].text"),
    "tool_without_function_name": (_with(tools=[{"type": "function", "function": {}}]), {}, 400,
                                   "tools[0].function.name"),
    "tool_of_unknown_type": (_with(tools=[{"type": "magic"}]), {}, 400, "tools[0].type"),
    "tool_parameters_an_array": (_with(tools=[{"type": "function", "function": {"name": "f", "parameters": []}}]),
                                 {}, 400, "tools[0].function.parameters"),
    "nesting_too_deep": (b"[" * 200_000 + b"]" * 200_000, {}, 400, None),
    "attempt_a_fraction": (_with(), {"X-Ctxbench-Request": "1", "X-Ctxbench-Attempt": "-1.5"}, 400,
                           "X-Ctxbench-Attempt"),
    "attempt_alone_a_word": (_with(), {"X-Ctxbench-Attempt": "two"}, 400, "X-Ctxbench-Attempt"),
    "request_index_past_int64": (_with(), {"X-Ctxbench-Request": str(2**63)}, 400, "X-Ctxbench-Request"),
    "clock_nan": (_with(), {"X-Ctxbench-Clock-S": "nan"}, 400, "X-Ctxbench-Clock-S"),
    "clock_negative": (_with(), {"X-Ctxbench-Clock-S": "-1"}, 400, "X-Ctxbench-Clock-S"),
    "content_length_overflowing": (_with(), {"Content-Length": "99999999999999999999"}, 413, "Content-Length"),
    "content_length_over_the_limit": (_with(), {"Content-Length": str(MAX_BODY_BYTES + 1)}, 413, "Content-Length"),
    "content_length_not_a_number": (_with(), {"Content-Length": "12abc"}, 400, "Content-Length"),
    "content_length_missing": (None, {}, 411, "Content-Length"),
    "chunked_body": (None, {"Transfer-Encoding": "chunked"}, 411, "Transfer-Encoding"),
}


@pytest.mark.parametrize("case", MALFORMED, ids=list(MALFORMED))
def test_a_malformed_request_gets_a_4xx_json_error_naming_the_field(mock_server, capfd, case):
    body, headers, status, param = MALFORMED[case]
    server = mock_server()
    got, payload, _ = exchange(server, body, headers)
    assert got == status, payload
    error = payload["error"]
    assert set(error) == {"message", "type", "param", "code"} and error["type"] == "invalid_request_error"
    assert error["param"] == param and error["message"]
    assert "Traceback" not in capfd.readouterr().err


def test_a_refused_body_read_whole_leaves_the_connection_usable(mock_server):
    server = mock_server()
    connection = http.client.HTTPConnection("127.0.0.1", server.server_address[1], timeout=30)
    assert exchange(server, _with(temperature="hot"), connection=connection)[0] == 400
    assert exchange(server, _with(), connection=connection)[0] == 200


def test_a_body_that_stalls_is_refused_with_408_after_the_read_timeout(mock_server, monkeypatch):
    from harness.models.serve_mock.server import _Handler

    monkeypatch.setattr(_Handler, "timeout", 0.3)
    server = mock_server()
    with socket.create_connection(("127.0.0.1", server.server_address[1]), timeout=30) as sock:
        sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nContent-Length: 100\r\n\r\n{\"model\"")
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    assert head.split()[1] == b"408" and json.loads(body)["error"]["param"] == "Content-Length"


@pytest.mark.parametrize("method, path, headers", [
    ("POST", "/v1/chat/completions", {"Content-Length": "99999999999999999999"}),
    ("POST", "/v1/nowhere", {}), ("GET", "/v1/models/", {}), ("PUT", "/v1/models", {})])
def test_an_answer_that_leaves_the_body_unread_closes_the_connection(mock_server, method, path, headers):
    """Left unread, the body's bytes would be read as the next request on the connection."""
    server = mock_server()
    _, _, reply = exchange(server, _with(), headers, method=method, path=path)
    assert reply.getheader("Connection") == "close"


def test_a_refusal_of_a_request_without_a_body_keeps_the_connection(mock_server):
    server = mock_server()
    connection = http.client.HTTPConnection("127.0.0.1", server.server_address[1], timeout=30)
    assert exchange(server, None, {"Content-Length": None}, method="GET", path="/v1/nowhere",
                    connection=connection)[0] == 404
    assert exchange(server, None, {"Content-Length": None}, method="GET", path="/v1/models",
                    connection=connection)[0] == 200


@pytest.mark.parametrize("method, path, status", [
    ("PUT", "/v1/chat/completions", 405), ("DELETE", "/v1/chat/completions", 405), ("PATCH", "/v1/models", 405),
    ("GET", "/v1/chat/completions", 405), ("POST", "/v1/models", 405), ("GET", "/v1/nowhere", 404),
    ("POST", "/v1/nowhere", 404), ("BREW", "/v1/chat/completions", 501)])
def test_a_wrong_method_or_path_gets_a_json_error(mock_server, capfd, method, path, status):
    server = mock_server()
    got, payload, reply = exchange(server, _with(), method=method, path=path)
    assert got == status and payload["error"]["message"]
    if status == 405:
        assert reply.getheader("Allow") == ("POST" if path.endswith("completions") else "GET")
    assert "Traceback" not in capfd.readouterr().err


@pytest.mark.parametrize("request_line", [b"GARBAGE\r\n\r\n", b"GET / HTTP/9.9\r\n\r\n", b"POST /\r\n\r\n",
                                          b"GET /v1/models HTTP/1.1 extra\r\n\r\n"])
def test_a_garbled_request_line_gets_a_json_error_and_a_closed_connection(mock_server, capfd, request_line):
    server = mock_server()
    with socket.create_connection(("127.0.0.1", server.server_address[1]), timeout=30) as sock:
        sock.sendall(request_line)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    status_line = head.split(b"\r\n")[0]
    assert status_line.startswith(b"HTTP/1.") and status_line.split()[1] in (b"400", b"505")
    assert b"Content-Type: application/json" in head
    assert json.loads(body)["error"]["message"]
    assert "Traceback" not in capfd.readouterr().err


def test_an_internal_error_is_a_500_without_internals_and_without_a_traceback(mock_server, capfd, monkeypatch):
    server = mock_server()

    def broken_serve(*args, **kwargs):
        raise RuntimeError("secret internals of the mock")

    monkeypatch.setattr(server.provider, "serve", broken_serve)
    status, payload, _ = exchange(server, _with())
    assert status == 500 and payload["error"]["type"] == "server_error"
    assert "secret internals" not in json.dumps(payload) and "RuntimeError" not in json.dumps(payload)
    err = capfd.readouterr().err
    assert "Traceback" not in err and err.count("\n") == 1 and "RuntimeError" in err


@pytest.mark.parametrize("fields", [
    {"stream": False, "stream_options": None, "user": "u", "seed": 3, "tool_choice": "auto",
     "parallel_tool_calls": True, "max_completion_tokens": 50, "temperature": 0, "top_p": 1, "n": 1,
     "stop": ["END"], "metadata": {"k": "v"}, "store": False, "reasoning_effort": "low", "logprobs": False,
     "response_format": {"type": "text"}, "prompt_cache_key": "k", "frequency_penalty": 0.5},
    {"tools": [{"type": "function", "function": {"name": "read_file", "description": "read",
                                                  "parameters": {"type": "object", "properties": {}}}}],
     "tool_choice": {"type": "function", "function": {"name": "read_file"}}},
    {"messages": [{"role": "developer", "content": [{"type": "text", "text": "Be brief."}]},
                  {"role": "user", "content": [{"type": "text", "text": "hi"},
                                               {"type": "image_url", "image_url": {"url": "data:,"}}]},
                  {"role": "assistant", "content": None, "tool_calls": [CALL]},
                  {"role": "tool", "tool_call_id": "c1", "content": "AB-1234 weight 7"}]},
])
def test_documented_arguments_clients_send_are_accepted(mock_server, fields):
    server = mock_server()
    status, payload, _ = exchange(server, _with(**fields))
    assert status == 200, payload
    assert payload["object"] == "chat.completion"


def test_json_depth_counts_brackets_outside_strings_only():
    assert json_depth(b'["[[[", {"a": "\\"]]", "b": [["\\\\"]]}]') == 4
    assert json_depth(b"[" * (MAX_JSON_DEPTH + 1) + b"]" * (MAX_JSON_DEPTH + 1)) == MAX_JSON_DEPTH + 1


def test_a_sessions_requests_are_served_one_at_a_time():
    """Clients without a session header share the session "": a request waits while another of its session is
    being served (unserialized, requests of differing lengths interleaved in the session's chain of blocks and
    answered `IndexError`), while another session's is served at once."""
    provider, shared = MockProvider(), MockConfig()
    state = provider.session("", shared.cache)
    served = []

    def client(config):
        served.append(provider.serve("agent", list(VALID["messages"]), [], config, seed=None)[0])

    with state.lock:  # a request of session "" is being served
        waiting = threading.Thread(target=client, args=(shared,))
        waiting.start()
        waiting.join(0.3)
        assert waiting.is_alive() and served == []
        client(MockConfig(session="other"))
        assert len(served) == 1
    waiting.join(10)
    assert len(served) == 2


def load(server, requests, concurrency, fresh_connections=False):
    """`requests` valid requests without a session header from `concurrency` threads: (statuses, connection
    errors, latencies in seconds, sorted)."""
    port, lock, counter = server.server_address[1], threading.Lock(), iter(range(requests))
    bodies = [_messages(*[{"role": "assistant", "content": "", "tool_calls": [CALL]},
                          {"role": "tool", "tool_call_id": "c1", "content": "AB-1234 weight 7 " * (k + 1)}] * k)
              for k in range(10)]
    statuses, errors, latencies = {}, [], []

    def client():
        connection = None
        while True:
            with lock:
                index = next(counter, None)
            if index is None:
                return
            started = time.perf_counter()
            try:
                connection = connection or http.client.HTTPConnection("127.0.0.1", port, timeout=30)
                connection.request("POST", "/v1/chat/completions", bodies[index % len(bodies)],
                                   {"Content-Type": "application/json"})
                reply = connection.getresponse()
                reply.read()
                with lock:
                    statuses[reply.status] = statuses.get(reply.status, 0) + 1
                if fresh_connections:
                    connection.close()
                    connection = None
            except (OSError, http.client.HTTPException) as exc:
                connection = None
                with lock:
                    errors.append(repr(exc))
            with lock:
                latencies.append(time.perf_counter() - started)

    threads = [threading.Thread(target=client) for _ in range(concurrency)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return statuses, errors, sorted(latencies)


def percentile(latencies, fraction):
    return latencies[min(len(latencies) - 1, int(fraction * len(latencies)))]


@pytest.mark.slow
@pytest.mark.parametrize("fresh_connections", [False, True], ids=["keep_alive", "connection_per_request"])
def test_2000_requests_at_concurrency_32_without_a_session_header_all_succeed(mock_server, capfd, fresh_connections):
    server = mock_server()
    started = time.monotonic()
    statuses, errors, _ = load(server, 2000, 32, fresh_connections)
    assert statuses == {200: 2000} and errors == []
    assert time.monotonic() - started < 120
    assert "Traceback" not in capfd.readouterr().err


@pytest.mark.benchmark
def test_latency_percentiles_under_concurrency(mock_server):
    """p50/p99 of serve-mock's answers to clients without a session header, at concurrency 1, 8 and 32."""
    server = mock_server()
    for concurrency in (1, 8, 32):
        statuses, errors, latencies = load(server, 1000, concurrency)
        assert statuses == {200: 1000} and errors == []
        print(f"\nconcurrency {concurrency}: p50 {percentile(latencies, 0.5) * 1000:.1f} ms, "
              f"p99 {percentile(latencies, 0.99) * 1000:.1f} ms")


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12)


def _paths(value, path=()):
    """Every (path, value) inside a JSON value."""
    yield path, value
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        yield from _paths(item, (*path, key))


def _replaced(value, path, new):
    if not path:
        return new
    copy = dict(value) if isinstance(value, dict) else list(value)
    copy[path[0]] = _replaced(value[path[0]], path[1:], new)
    return copy


_VALID_WITH_TOOLS = json.loads(_messages({"role": "assistant", "content": None, "tool_calls": [CALL]},
                                         {"role": "tool", "tool_call_id": "c1", "content": "AB-1234 weight 7"}))
_VALID_WITH_TOOLS["tools"] = [{"type": "function", "function": {"name": "read_file", "parameters": {
    "type": "object", "properties": {"path": {"type": "string"}}}}}]
_VALID_BYTES = json.dumps(_VALID_WITH_TOOLS).encode()
_bodies = _json_values | st.builds(
    lambda index, new: _replaced(_VALID_WITH_TOOLS, list(_paths(_VALID_WITH_TOOLS))[index][0], new),
    st.integers(0, len(list(_paths(_VALID_WITH_TOOLS))) - 1), _json_values) | st.builds(
    lambda at, cut, inserted: _VALID_BYTES[:at] + inserted + _VALID_BYTES[at + cut:],  # the bytes spliced
    st.integers(0, len(_VALID_BYTES)), st.integers(0, 8), st.binary(max_size=8) | st.sampled_from(
        [b"NaN", b"-Infinity", b"1e999", b"[" * 100, b'"\\', b"\x00", b"\xff\xfe", b"9" * 5000]))


def _check_answer(server, body):
    """A completion, or a 4xx JSON error with a message; `body` is a JSON value, or bytes sent as they are."""
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    status, payload, _ = exchange(server, data, {"X-Ctxbench-Session": "fuzz"})
    if status == 200:
        assert payload["object"] == "chat.completion"
    else:
        assert 400 <= status < 500, payload
        assert isinstance(payload["error"]["message"], str) and payload["error"]["message"]


@pytest.fixture(scope="module")
def fuzz_server():
    from harness.models.serve_mock.server import MockServer

    server = MockServer(0, MockConfig())
    server.start()
    yield server
    server.shutdown()
    server.server_close()


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=_bodies)
def test_fuzzed_bodies_get_a_completion_or_a_4xx_json_error(fuzz_server, capfd, body):
    _check_answer(fuzz_server, body)
    assert "Traceback" not in capfd.readouterr().err


@pytest.mark.slow
@settings(max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=_bodies)
def test_many_fuzzed_bodies_get_a_completion_or_a_4xx_json_error(fuzz_server, capfd, body):
    _check_answer(fuzz_server, body)
    assert "Traceback" not in capfd.readouterr().err


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(index=st.integers(0, 3), content=st.integers() | st.booleans() | st.dictionaries(st.text(), st.integers()))
def test_a_message_content_of_the_wrong_type_is_refused_by_its_path(fuzz_server, index, content):
    body = _replaced(_VALID_WITH_TOOLS, ("messages", index, "content"), content)
    status, payload, _ = exchange(fuzz_server, json.dumps(body).encode())
    assert status == 400 and payload["error"]["param"] == f"messages[{index}].content"
