"""The Responses API end to end: the client's transport (harness.models.responses_api, through litellm.responses and
litellm.compact_responses) and serve-mock's `/v1/responses` and `/v1/responses/compact` (harness.models.serve_mock.
responses_wire): what goes on the wire (a golden captured at the HTTP boundary), why litellm's chat->Responses bridge
is not the transport, answers equal to the in-process mock's, refusals in OpenAI's error shape naming `param`.

Regenerate the golden after a deliberate change with CTXBENCH_UPDATE_GOLDENS=1."""
from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from pathlib import Path

import httpx
import litellm
import pytest

from harness.models import responses_api
from harness.models.llm import LLMClient, LLMProfile, is_context_window_error
from harness.models.mock.sealing import seal
from harness.models.provider_compaction import ITEMS, compaction_items

GOLDEN = Path(__file__).parents[1] / "goldens" / "responses" / "requests.json"
MODEL = "openai/gpt-5.6"
ITEM = {"type": "compaction", "id": "cmp_1", "encrypted_content": "b3BhcXVl"}
CALL = {"id": "call_1", "type": "function", "function": {"name": "read", "arguments": "{\"key\": \"A\"}"}}
VIEW = [
    {"role": "system", "content": "You are a careful agent."},
    {"role": "user", "content": "Find the value behind key A."},
    {"role": "assistant", "content": "Reading A.", "tool_calls": [CALL], "provider_specific_fields": {ITEMS: [ITEM]}},
    {"role": "tool", "tool_call_id": "call_1", "name": "read", "content": "A points to B"},
]
TOOLS = [{"type": "function", "function": {"name": "read", "description": "Read a key.",
                                           "parameters": {"type": "object", "properties": {"key": {"type": "string"}}}}}]
COMPACTING = {"context_management": [{"type": "compaction", "compact_threshold": 150_000}]}
USAGE = {"input_tokens": 120, "input_tokens_details": {"cached_tokens": 64, "cache_write_tokens": 8},
         "output_tokens": 9, "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 129}
REPLY = {"id": "resp_1", "object": "response", "created_at": 0, "status": "completed", "model": "gpt-5.6",
         "parallel_tool_calls": True, "tool_choice": "auto", "tools": [], "usage": USAGE,
         "output": [{"type": "compaction", "id": "cmp_2", "encrypted_content": "c2Vjb25k"},
                    {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
                     "content": [{"type": "output_text", "text": "B next.", "annotations": []}]},
                    {"type": "function_call", "id": "fc_1", "call_id": "call_2", "name": "read",
                     "arguments": "{\"key\": \"B\"}", "status": "completed"}]}
COMPACTED = {"id": "resp_2", "object": "response.compaction", "created_at": 0, "usage": USAGE,
             "output": [{"type": "message", "role": "user", "content": [{"type": "input_text",
                                                                         "text": "Find the value behind key A."}]},
                        {"type": "compaction", "id": "cmp_3", "encrypted_content": "dGhpcmQ="}]}


@pytest.fixture
def recorder(monkeypatch):
    """httpx (litellm's client and the OpenAI SDK's) answering as OpenAI's Responses API without a network: each
    request's path, ctxbench, content-type and authorization headers, and body recorded."""
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    sent: list[dict] = []

    def send(self, request, **kwargs):
        headers = {key: value for key, value in request.headers.items()
                   if key.startswith("x-ctxbench") or key in ("content-type", "authorization")}
        sent.append({"path": request.url.path, "headers": headers, "body": json.loads(request.content)})
        reply = COMPACTED if request.url.path.endswith("/compact") else REPLY
        return httpx.Response(200, json=reply, request=request)

    monkeypatch.setattr(httpx.Client, "send", send)
    return "http://127.0.0.1:9/v1", sent


def test_request_bodies_and_headers_match_the_golden(recorder):
    """What the client sends: the view as items (the compaction item back in its place), function tools,
    `context_management` as the strategy asked, `store: false`, the cache key; the run's session, request, attempt,
    clock and seed in ctxbench's headers (Responses has no seed field); `/responses/compact` with no tools."""
    base, sent = recorder
    client = LLMClient(LLMProfile(model=MODEL, api_base=base), session="run-1", seed=3)
    client.complete(VIEW, TOOLS, clock_s=12.5, options=COMPACTING)
    client.complete(VIEW, None, clock_s=20.0, compact=True)
    captured = {"responses": sent[0], "compact": sent[1]}
    if os.environ.get("CTXBENCH_UPDATE_GOLDENS"):
        GOLDEN.parent.mkdir(parents=True, exist_ok=True)
        GOLDEN.write_text(json.dumps(captured, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    assert captured == json.loads(GOLDEN.read_text(encoding="utf-8"))


def test_a_reply_keeps_its_compaction_item_and_a_compact_call_its_window(recorder):
    base, _ = recorder
    client = LLMClient(LLMProfile(model=MODEL, api_base=base), session="run-1", seed=3)
    result = client.complete(VIEW, TOOLS, clock_s=0.0, options=COMPACTING)
    assert result.message["content"] == "B next." and result.message["tool_calls"][0]["id"] == "call_2"
    assert compaction_items(result.message) == [{"type": "compaction", "id": "cmp_2", "encrypted_content": "c2Vjb25k"}]
    assert (result.usage.input_tokens, result.usage.cached_tokens, result.usage.cache_write_tokens,
            result.usage.output_tokens) == (120, 64, 8, 9)  # litellm's mapping (responses/utils.py:1291)
    compacted = client.complete(VIEW, None, compact=True)
    assert compacted.window == [{"role": "user", "content": "Find the value behind key A."},
                                {"role": "assistant", "content": "", "provider_specific_fields": {ITEMS: [
                                    {"type": "compaction", "id": "cmp_3", "encrypted_content": "dGhpcmQ="}]}}]
    assert compacted.message == compacted.window[-1]


def test_a_request_needing_nothing_of_the_responses_api_stays_on_chat_completions(recorder):
    """Only a Responses-only parameter, a compaction item or a compact call selects the Responses API; Anthropic's
    `context_management` (an object with edits) goes to Anthropic's Messages API."""
    assert not responses_api.wanted({"context_management": {"edits": []}, "seed": 1}, VIEW[:2])
    assert responses_api.wanted({"truncation": "disabled"}, VIEW[:2]) and responses_api.wanted({}, VIEW)
    base, sent = recorder
    client = LLMClient(LLMProfile(model=MODEL, api_base=base, retry={"max_retries": 0}), session="run-1")
    with pytest.raises(Exception):  # the recorder answers in the Responses shape only
        client.complete(VIEW[:2], TOOLS)
    assert sent[0]["path"] == "/v1/chat/completions"


def test_litellms_chat_bridge_cannot_carry_compaction(recorder):
    """Why the transport calls litellm.responses itself: litellm's chat->Responses bridge (`openai/responses/<model>`)
    refuses `context_management`, and given it through extra_body drops the reply's compaction item
    (completion_extras/litellm_responses_transformation/transformation.py:1493-1509, :969-970)."""
    base, sent = recorder
    with pytest.raises(litellm.UnsupportedParamsError, match="context_management"):
        litellm.completion(model="openai/responses/gpt-5.6", api_base=base, messages=VIEW[:2], **COMPACTING)
    reply = litellm.completion(model="openai/responses/gpt-5.6", api_base=base, messages=VIEW[:2],
                               extra_body=COMPACTING)
    assert sent[-1]["body"]["context_management"] == COMPACTING["context_management"]
    assert not (reply.choices[0].message.provider_specific_fields or {}).get(ITEMS)
    assert "cmp_2" not in json.dumps(reply.model_dump())


@pytest.mark.parametrize("style", ["openai", "openai-breakpoints"])
def test_over_http_the_answers_equal_the_in_process_mocks(mock_server, style):
    """Server-side compaction, a later request carrying the item, and `/responses/compact`, through litellm's
    Responses client and serve-mock, answer as the mock in process does, under OpenAI's automatic caching and under
    GPT-5.6's breakpoints (carried on the input items' content parts)."""
    server = mock_server(cache=style)
    task = {"role": "user", "content": "Start at record AB-1234 and follow the successor chain; submit the sum. " * 60}
    messages = [VIEW[0], task]
    options = {"context_management": [{"type": "compaction", "compact_threshold": 1_000}]}
    results = {}
    for name, profile in (("local", LLMProfile(model="mock/agent", mock={"cache": style})),
                          ("http", LLMProfile(model=MODEL, api_base=server.url))):
        client = LLMClient(profile, session=f"s-{name}", seed=1)
        first = client.complete(messages, TOOLS, clock_s=0.0, options=options)
        later = client.complete([*messages, first.message, {"role": "user", "content": "Go on."}], TOOLS,
                                clock_s=5.0, options=options)
        window = client.complete([*messages, first.message, {"role": "user", "content": "Go on."}, later.message],
                                 None, clock_s=9.0, compact=True)
        results[name] = [(r.message, r.usage, r.duration_s, r.window) for r in (first, later, window)]
    assert results["http"] == results["local"]
    assert compaction_items(results["local"][0][0])  # the first request compacted
    # the server-side item stands for the task before it: the window keeps the user message after it
    assert [message["content"] for message in results["local"][2][3][:-1]] == ["Go on."]


def post(server, path, body, headers=None):
    request = urllib.request.Request(server.url.removesuffix("/v1") + path, data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(request) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


@pytest.mark.parametrize("path, body, param", [
    ("/v1/responses", {"model": "gpt-5.6", "input": "hi", "foo": 1}, "foo"),
    ("/v1/responses", {"model": "gpt-5.6", "input": "hi", "previous_response_id": "resp_1"}, "previous_response_id"),
    ("/v1/responses", {"model": "gpt-5.6", "input": "hi", "stream": True}, "stream"),
    ("/v1/responses", {"input": "hi"}, "model"),
    ("/v1/responses", {"model": "gpt-5.6", "input": "hi", "temperature": 3}, "temperature"),
    ("/v1/responses", {"model": "gpt-5.6", "input": "hi", "truncation": "auto"}, "truncation"),
    ("/v1/responses", {"model": "gpt-5.6", "input": "hi",
                       "context_management": [{"type": "compaction", "compact_threshold": 10}]},
     "context_management[0].compact_threshold"),
    ("/v1/responses", {"model": "gpt-5.6", "input": [{"type": "message", "role": "user", "content": "hi"},
                                                     {"type": "compaction", "encrypted_content": "Zm9yZ2Vk"}]},
     "input[1].encrypted_content"),
    ("/v1/responses", {"model": "gpt-5.6", "input": [{"type": "function_call", "call_id": 1}]}, "input[0].call_id"),
    ("/v1/responses", {"model": "gpt-5.6", "input": "hi", "tools": [{"type": "web_search"}]}, "tools[0].type"),
    ("/v1/responses/compact", {"model": "gpt-5.6", "input": "hi", "tools": []}, "tools"),
    ("/v1/responses", {"model": "gpt-5.6", "input": "hi", "prompt_cache_options": {"mode": "implicit"},
                       "prompt_cache_retention": "24h"}, "prompt_cache_options"),
    ("/v1/responses", {"model": "gpt-5.6", "input": "hi", "prompt_cache_options": {"mode": "always"}},
     "prompt_cache_options.mode"),
])
def test_refusals_are_openai_errors_naming_the_param(mock_server, path, body, param):
    server = mock_server()
    status, payload = post(server, path, body)
    assert status == 400 and payload["error"]["param"] == param and payload["error"]["type"] == "invalid_request_error"


def test_a_responses_request_is_served_with_the_chat_routes_headers(mock_server):
    """The session, request-index and seed headers and the answer's simulated latency, as on the chat route; a
    compaction item the provider made is read back."""
    server = mock_server(cache="openai")
    headers = {"X-Ctxbench-Session": "run-9", "X-Ctxbench-Request": "0", "X-Ctxbench-Seed": "4"}
    status, payload = post(server, "/v1/responses", {"model": "gpt-5.6", "input": [
        {"type": "message", "role": "user", "content": "Find record AB-1."},
        {**seal("earlier work", ()), "type": "compaction"}]}, headers)
    assert status == 200 and payload["object"] == "response" and payload["usage"]["input_tokens"] > 0
    status, payload = post(server, "/v1/responses/compact", {"model": "gpt-5.6", "input": "Find record AB-1."},
                           headers)
    assert status == 200 and payload["object"] == "response.compaction"
    assert [item["type"] for item in payload["output"]] == ["message", "compaction"]


def test_faults_and_overflow_reach_the_client_as_litellm_maps_them(mock_server):
    overflow = mock_server(cache="openai", window=1_500)
    client = LLMClient(LLMProfile(model=MODEL, api_base=overflow.url, retry={"max_retries": 0}), session="o")
    with pytest.raises(Exception) as raised:
        client.complete([VIEW[0], {"role": "user", "content": "word " * 3000}], TOOLS, options=COMPACTING)
    assert is_context_window_error(raised.value)
    limited = mock_server(cache="openai", faults={"rate_limit": 1.0})
    client = LLMClient(LLMProfile(model=MODEL, api_base=limited.url, retry={"max_retries": 0}), session="f")
    with pytest.raises(litellm.RateLimitError):
        client.complete(VIEW[:2], TOOLS, options=COMPACTING)
