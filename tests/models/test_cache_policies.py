"""Cache policies on the wire: the request bodies each policy makes litellm send per provider family (goldens in
tests/goldens/cache_policies, captured at the HTTP boundary), the anchors' rules with their sources, the
four-breakpoint limit, the seed only where the provider takes it, and billing by the TTL of cache writes.

Regenerate the goldens after a deliberate change with CTXBENCH_UPDATE_GOLDENS=1."""
from __future__ import annotations

import copy
import json
import os
import re
from pathlib import Path

import httpx
import pytest

from harness.models.cache_marks import NO_MARKS, Breakpoint, CacheMarks
from harness.models.cache_policy import (ANTHROPIC, BEDROCK, COMPATIBLE, OPENAI, OPENAI_BREAKPOINTS, POLICY_NAMES, VERTEX,
                                  CachePlanner, mark_request, parse_policy, uncached_note)
from harness.core.errors import ConfigError
from harness.models.llm import LLMClient, LLMProfile
from harness.models.usage import Pricing, Usage, normalize_usage

GOLDENS = Path(__file__).parents[1] / "goldens" / "cache_policies"
README = Path(__file__).parents[2] / "README.md"

SYSTEM = {"role": "system", "content": "You are a careful agent."}
CONVERSATION = [
    SYSTEM,
    {"role": "user", "content": "Find the value behind key A."},
    {"role": "assistant", "content": "Reading A first.",
     "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "read", "arguments": "{\"key\": \"A\"}"}}]},
    {"role": "tool", "tool_call_id": "call_1", "name": "read", "content": "A points to B"},
    {"role": "assistant", "content": "",
     "tool_calls": [{"id": "call_2", "type": "function", "function": {"name": "read", "arguments": "{\"key\": \"B\"}"}}]},
    {"role": "tool", "tool_call_id": "call_2", "name": "read", "content": "B holds 42"},
]
TOOLS = [
    {"type": "function", "function": {"name": "read", "description": "Read a key.",
                                      "parameters": {"type": "object", "properties": {"key": {"type": "string"}}}}},
    {"type": "function", "function": {"name": "submit", "description": "Submit the answer.",
                                      "parameters": {"type": "object", "properties": {"answer": {"type": "string"}}}}},
]
GOLDEN_POLICIES = [name for name in POLICY_NAMES if name != "custom"]

ANTHROPIC_REPLY = {
    "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-6",
    "content": [{"type": "text", "text": "42"}], "stop_reason": "end_turn", "stop_sequence": None,
    "usage": {"input_tokens": 10, "output_tokens": 2, "cache_creation_input_tokens": 5, "cache_read_input_tokens": 3,
              "cache_creation": {"ephemeral_5m_input_tokens": 1, "ephemeral_1h_input_tokens": 4}}}
OPENAI_REPLY = {
    "id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": "gpt-5",
    "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "42"}}],
    "usage": {"prompt_tokens": 18, "completion_tokens": 2, "total_tokens": 20,
              "prompt_tokens_details": {"cached_tokens": 3, "cache_write_tokens": 5}}}
RESPONSES_REPLY = {  # the Responses API's answer, to the requests litellm bridges there (gpt-5.4+ with tools)
    "id": "resp_1", "object": "response", "created_at": 0, "model": "gpt-5.6", "status": "completed",
    "output": [{"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
                "content": [{"type": "output_text", "text": "42", "annotations": []}]}],
    "usage": {"input_tokens": 18, "output_tokens": 2, "total_tokens": 20,
              "input_tokens_details": {"cached_tokens": 3, "cache_write_tokens": 5},
              "output_tokens_details": {"reasoning_tokens": 0}}}
CONVERSE_REPLY = {
    "output": {"message": {"role": "assistant", "content": [{"text": "42"}]}}, "stopReason": "end_turn",
    "usage": {"inputTokens": 10, "outputTokens": 2, "totalTokens": 12, "cacheReadInputTokens": 3,
              "cacheWriteInputTokens": 5}}


@pytest.fixture
def litellm_http(monkeypatch):
    """litellm's own HTTP client (Anthropic, Bedrock, Vertex) answering without a network: each request's URL and
    JSON body recorded, the reply in the format the URL's provider speaks."""
    from litellm.llms.custom_httpx.http_handler import HTTPHandler
    from litellm.llms.vertex_ai.vertex_llm_base import VertexBase

    sent: list[dict] = []

    def post(self, url, data=None, json=None, **kwargs):
        body = json if json is not None else __import__("json").loads(data)
        sent.append({"url": str(url), "body": body})
        reply = CONVERSE_REPLY if "bedrock" in str(url) else ANTHROPIC_REPLY
        return httpx.Response(200, json=reply, request=httpx.Request("POST", str(url)))

    monkeypatch.setattr(HTTPHandler, "post", post)
    monkeypatch.setattr(VertexBase, "_ensure_access_token", lambda self, credentials, project_id, custom_llm_provider:
                        ("test-token", "test-project"))
    for name, value in {"ANTHROPIC_API_KEY": "test-key", "AWS_ACCESS_KEY_ID": "AKIATEST",
                        "AWS_SECRET_ACCESS_KEY": "test-secret", "AWS_REGION_NAME": "us-east-1"}.items():
        monkeypatch.setenv(name, value)
    return sent


@pytest.fixture
def openai_http(monkeypatch):
    """The OpenAI SDK's HTTP client (httpx) answering api.openai.com without a network, each body recorded."""
    sent: list[dict] = []

    def send(self, request, **kwargs):
        sent.append({"url": str(request.url), "body": json.loads(request.content)})
        reply = RESPONSES_REPLY if request.url.path.endswith("/responses") else OPENAI_REPLY
        return httpx.Response(200, json=reply, request=request)

    monkeypatch.setattr(httpx.Client, "send", send)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    return sent


def _send(model: str, policy: str | dict, api_base: str | None = None, session: str = "run-1") -> LLMClient:
    client = LLMClient(LLMProfile(model=model, api_base=api_base, cache_policy=policy), session=session, seed=0)
    client.complete(CONVERSATION, TOOLS, clock_s=0.0)
    return client


def _check_golden(family: str, captured: dict[str, dict]) -> None:
    path = GOLDENS / f"{family}.json"
    if os.environ.get("CTXBENCH_UPDATE_GOLDENS"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(captured, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    assert captured == json.loads(path.read_text(encoding="utf-8"))


def _markers(body, keys=("cache_control", "cachePoint", "prompt_cache_key")) -> list[str]:
    """Where `keys` (by default `cache_control` / `cachePoint` / `prompt_cache_key`) sit in a body, as JSON paths."""
    found = []

    def walk(node, path):
        if isinstance(node, dict):
            for key, value in node.items():
                if key in keys:
                    found.append(f"{path}.{key}")
                walk(value, f"{path}.{key}")
        elif isinstance(node, list):
            for index, value in enumerate(node):
                walk(value, f"{path}[{index}]")

    walk(body, "$")
    return found


def test_anthropic_request_bodies_per_policy_match_goldens(recording_server, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    base, bodies = recording_server(ANTHROPIC_REPLY)
    captured = {}
    for policy in GOLDEN_POLICIES:
        _send("anthropic/claude-sonnet-4-6", policy, api_base=base)
        captured[policy] = bodies[-1]["body"]
    assert "cache_control" in captured["auto"] and "cache_control" not in captured["none"]
    _check_golden(ANTHROPIC, captured)


def test_openai_request_bodies_per_policy_match_goldens(openai_http):
    """OpenAI's own API: a per-run prompt_cache_key; litellm strips any cache_control it is given for openai.com."""
    captured = {}
    for policy in GOLDEN_POLICIES:
        _send("openai/gpt-5", policy)
        assert openai_http[-1]["url"] == "https://api.openai.com/v1/chat/completions"
        captured[policy] = openai_http[-1]["body"]
    assert _markers(captured["auto"]) == ["$.prompt_cache_key"] and captured["auto"]["prompt_cache_key"] == "run-1"
    assert all(_markers(body) == [] for policy, body in captured.items() if policy != "auto")
    _check_golden(OPENAI, captured)


def test_openai_gpt_5_6_request_bodies_per_policy_match_goldens(openai_http):
    """OpenAI's GPT-5.6 family: `prompt_cache_breakpoint` on content parts and `prompt_cache_options`, as the SDK
    shapes them (chat_completion_content_part_text_param.py, completion_create_params.py); litellm 1.110.2 sends
    a request with function tools to gpt-5.4+ at api.openai.com through the Responses API (responses/bridge_check.py
    responses_api_bridge_check), the markers kept on the `input_text` parts (a tool result's in its output)."""
    captured = {}
    for policy in GOLDEN_POLICIES:
        _send("openai/gpt-5.6", policy)
        assert openai_http[-1]["url"] == "https://api.openai.com/v1/responses"
        captured[policy] = openai_http[-1]["body"]
    def breakpoints(body) -> list[str]:
        return [path.removesuffix(".prompt_cache_breakpoint") for path in _markers(body, ("prompt_cache_breakpoint",))]

    auto = captured["auto"]
    assert breakpoints(auto) == ["$.input[0].content[0]", "$.input[6].output[0]"]
    assert auto["prompt_cache_options"] == {"mode": "implicit", "ttl": "30m"} and auto["prompt_cache_key"] == "run-1"
    assert breakpoints(captured["pydantic-ai"]) == ["$.input[0].content[0]"]
    assert breakpoints(captured["last"]) == ["$.input[6].output[0]"]
    assert captured["last"]["prompt_cache_options"] == {"mode": "explicit", "ttl": "30m"}
    for policy in ("none", "inspect", "openhands", "mini-swe-agent"):
        assert not breakpoints(captured[policy]) and "prompt_cache_options" not in captured[policy]
    assert all("cache_control" not in json.dumps(body) for body in captured.values())
    _check_golden(OPENAI_BREAKPOINTS, captured)


def test_openai_compatible_endpoint_request_bodies_per_policy_match_goldens(recording_server, monkeypatch):
    """An OpenAI-compatible endpoint (a proxy in front of Claude, serve-mock): litellm passes markers and the
    top-level field on, and `auto` sends Anthropic's beside the prompt_cache_key, as the endpoint may cache as
    Anthropic does."""
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    base, bodies = recording_server(OPENAI_REPLY)
    captured = {}
    for policy in GOLDEN_POLICIES:
        _send("openai/gpt-5", policy, api_base=base + "/v1")
        captured[policy] = bodies[-1]["body"]
    assert set(_markers(captured["auto"])) == {"$.messages[0].content[0].cache_control", "$.tools[1].cache_control",
                                               "$.cache_control", "$.prompt_cache_key"}
    assert _markers(captured["none"]) == []
    _check_golden(COMPATIBLE, captured)


@pytest.mark.parametrize("family, model", [(BEDROCK, "bedrock/us.anthropic.claude-sonnet-4-6"),
                                           (VERTEX, "vertex_ai/claude-sonnet-4-6")])
def test_bedrock_and_vertex_request_bodies_per_policy_match_goldens(litellm_http, family, model):
    captured = {}
    for policy in GOLDEN_POLICIES:
        _send(model, policy)
        captured[policy] = litellm_http[-1]["body"]
    assert "cache_control" not in captured["auto"], "Bedrock and Vertex refuse the top-level field"
    assert _markers(captured["auto"]) and not _markers(captured["none"])
    _check_golden(family, captured)


def test_readme_walkthrough_model_sends_markers_by_default_without_api_base(litellm_http):
    """The README's paid walkthrough, as a user runs it (a key, no --api-base): the default policy marks."""
    model = re.search(r"ctxbench run --model (\S+) --suite default --dry-run", README.read_text()).group(1)
    client = LLMClient(LLMProfile(model=model), session="run-1", seed=0)
    client.complete(CONVERSATION, TOOLS, clock_s=0.0)
    request = litellm_http[-1]
    assert request["url"].startswith("https://api.anthropic.com/")
    body = request["body"]
    assert body["cache_control"] == {"type": "ephemeral"}
    assert body["system"][-1]["cache_control"] == {"type": "ephemeral"}
    assert body["tools"][-1]["cache_control"] == {"type": "ephemeral"}
    assert "seed" not in body


def test_anthropic_with_api_base_is_sent_no_seed(recording_server, monkeypatch):
    """litellm refuses `seed` for Anthropic (UnsupportedParamsError): it was sent whenever an api_base was given."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    base, bodies = recording_server(ANTHROPIC_REPLY)
    result = LLMClient(LLMProfile(model="anthropic/claude-sonnet-4-6", api_base=base), session="s", seed=7).complete(
        CONVERSATION, TOOLS)
    assert result.message["content"] == "42" and "seed" not in bodies[-1]["body"]


def test_openai_compatible_mock_over_http_still_gets_the_seed(recording_server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    base, bodies = recording_server(OPENAI_REPLY)
    LLMClient(LLMProfile(model="openai/mock-agent", api_base=base + "/v1"), session="s", seed=7).complete(
        CONVERSATION, TOOLS)
    assert bodies[-1]["body"]["seed"] == 7


def test_marking_copies_only_marked_messages_and_never_touches_the_log():
    messages, tools = copy.deepcopy(CONVERSATION), copy.deepcopy(TOOLS)
    before = copy.deepcopy(messages), copy.deepcopy(tools)
    marks = CacheMarks(breakpoints=(Breakpoint("message", 0), Breakpoint("message", 3, "1h"), Breakpoint("tool", 1)),
                       automatic="5m")
    sent, sent_tools, extra = mark_request(messages, tools, marks)
    assert (messages, tools) == before
    assert [a is b for a, b in zip(sent, messages)] == [False, True, True, False, True, True]
    assert sent[0]["content"] == [{"type": "text", "text": SYSTEM["content"], "cache_control": {"type": "ephemeral"}}]
    assert sent[3]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}  # a tool message: on the message
    assert sent_tools[1]["cache_control"] == {"type": "ephemeral"} and sent_tools[0] is tools[0]
    assert extra == {"cache_control": {"type": "ephemeral"}}
    assert mark_request(messages, tools, NO_MARKS) == (messages, tools, {})


def test_assistant_with_tool_calls_is_marked_on_its_last_tool_call():
    """litellm's Anthropic transformation reads a tool call's own `cache_control` onto its tool_use block
    (litellm_core_utils/prompt_templates/factory.py, convert_to_anthropic_tool_invoke)."""
    sent, _, _ = mark_request(CONVERSATION, TOOLS, CacheMarks(breakpoints=(Breakpoint("message", 2),)))
    assert sent[2]["tool_calls"][-1]["cache_control"] == {"type": "ephemeral"}
    assert sent[2]["content"] == CONVERSATION[2]["content"]


def _marks(policy, family=ANTHROPIC, messages=CONVERSATION, tools=TOOLS) -> CacheMarks:
    return CachePlanner(parse_policy(policy), family, "run-1").marks(messages, tools, None)


def _at(marks: CacheMarks) -> list[tuple[str, int]]:
    return [(mark.block, mark.index) for mark in marks.breakpoints]


def test_inspect_rule_lookback_marks_the_second_to_last_cacheable_block():
    """Inspect AI 0.3.285 inspect_ai/model/_providers/anthropic.py: resolve_chat_input (lines 2263-2277) marks the
    last system block and the last tool, add_lookback_cache_control (2967-3000) the second-to-last block;
    automatic caching on the direct API only (lines 880-887)."""
    marks = _marks("inspect")
    assert _at(marks) == [("message", 0), ("tool", 1), ("message", 4)] and marks.automatic == "5m"
    assert _marks("inspect", BEDROCK).automatic is None


def test_inspect_rule_lookback_never_marks_plain_user_text():
    """add_lookback_cache_control: a bare-string content counts as a block but cannot carry a marker."""
    messages = [SYSTEM, {"role": "user", "content": "first"}, {"role": "tool", "tool_call_id": "x", "content": "r"}]
    assert _at(_marks("inspect", messages=messages)) == [("message", 0), ("tool", 1)]


def test_inspect_rule_escalates_to_1h_for_the_rest_of_the_run_after_a_gap_over_300_s():
    """CACHE_TTL_ESCALATION_GAP = 300.0 (anthropic.py line 301); _cache_ttl_for_request (716-745) escalates for
    the rest of the sample once a gap exceeds it."""
    planner = CachePlanner(parse_policy("inspect"), ANTHROPIC, "run-1")
    ttls = [planner.marks(CONVERSATION, TOOLS, clock).automatic for clock in (0.0, 300.0, 601.0, 610.0)]
    assert ttls == ["5m", "5m", "1h", "1h"]
    assert CachePlanner(parse_policy("auto"), ANTHROPIC, "r").marks(CONVERSATION, TOOLS, 9999.0).automatic == "5m"


def test_pydantic_ai_rule_instructions_tools_and_automatic_or_last_block():
    """pydantic_ai 2.62 models/anthropic/__init__.py _translate_cache (lines 3201-3222): the unified `cache`
    setting marks instructions and tool definitions, and the conversation by automatic caching, else (no
    automatic caching) a breakpoint on the last block."""
    direct = _marks("pydantic-ai")
    assert _at(direct) == [("message", 0), ("tool", 1)] and direct.automatic == "5m"
    assert _at(_marks("pydantic-ai", BEDROCK)) == [("message", 0), ("tool", 1), ("message", 5)]


def test_openhands_rule_system_and_last_user_or_tool_message():
    """OpenHands software-agent-sdk openhands/sdk/llm/llm.py _apply_prompt_caching (lines 2682-2711); a tool
    message's marker moves to the message (openhands/sdk/llm/message.py lines 367-384)."""
    marks = _marks("openhands")
    assert _at(marks) == [("message", 0), ("message", 5)] and marks.automatic is None


def test_mini_swe_agent_rule_last_message_on_claude_only():
    """mini-swe-agent src/minisweagent/models/utils/cache_control.py set_cache_control ("default_end"), set by
    default for Claude model names (src/minisweagent/models/__init__.py lines 55-60)."""
    assert _at(_marks("mini-swe-agent")) == [("message", 5)]
    assert _marks("mini-swe-agent", OPENAI) == NO_MARKS


def test_auto_policy_per_family():
    assert _at(_marks("auto", BEDROCK)) == [("message", 0), ("tool", 1), ("message", 5)]
    assert _marks("auto", OPENAI) == CacheMarks(prompt_cache_key="run-1")
    assert _marks("auto", COMPATIBLE) == CacheMarks(breakpoints=_marks("auto").breakpoints, automatic="5m",
                                                    prompt_cache_key="run-1")


def test_a_policy_of_more_than_four_breakpoints_is_refused():
    with pytest.raises(ConfigError, match="places 5 cache breakpoints.*at most 4"):
        parse_policy({"name": "custom", "system": True, "tools": True, "automatic": True, "messages": 2})
    assert parse_policy({"name": "custom", "system": True, "tools": True, "messages": 2}).breakpoint_count() == 4


@pytest.mark.parametrize("spec, message", [
    ("inspekt", "did you mean 'inspect'"),
    ({"name": "auto", "ttl": "10m"}, "ttl must be one of 5m, 1h"),
    ({"name": "auto", "messages": 1}, "takes no option"),
    ({"name": "inspect", "escalate_after_s": -1}, "escalate_after_s must be a positive"),
    (["auto"], "expected a policy name or a mapping"),
])
def test_bad_policies_are_refused_with_what_is_wrong(spec, message):
    with pytest.raises(ConfigError, match=message):
        parse_policy(spec, "--cache-policy")


def test_usage_reads_the_ttl_split_and_bills_1h_writes_at_their_own_price():
    usage = normalize_usage({"prompt_tokens": 18, "completion_tokens": 2, "cache_read_input_tokens": 3,
                             "cache_creation_input_tokens": 5,
                             "cache_creation": {"ephemeral_5m_input_tokens": 1, "ephemeral_1h_input_tokens": 4}})
    assert usage == Usage(input_tokens=18, cached_tokens=3, cache_write_tokens=5, output_tokens=2,
                          cache_write_1h_tokens=4)
    price = Pricing.for_model("claude-sonnet-4-6")
    assert price.cache_write_1h == pytest.approx(2 * price.input) and price.cache_write == pytest.approx(1.25 * price.input)
    cost, _ = price.cost(usage)
    expected = 10 * price.input + 3 * price.cache_read + 1 * price.cache_write + 4 * price.cache_write_1h + 2 * price.output
    assert cost == pytest.approx(expected)


def test_usage_from_anthropic_over_http_keeps_the_1h_split(recording_server, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    base, _ = recording_server(ANTHROPIC_REPLY)
    client = LLMClient(LLMProfile(model="anthropic/claude-sonnet-4-6", api_base=base), session="s", seed=0)
    assert client.complete(CONVERSATION, TOOLS).usage.cache_write_1h_tokens == 4


def test_openai_usage_reads_cached_and_written_tokens():
    usage = normalize_usage(OPENAI_REPLY["usage"])
    assert (usage.cached_tokens, usage.cache_write_tokens) == (3, 5)


@pytest.mark.parametrize("via", ["direct", "litellm"])
def test_the_mock_in_process_is_handed_the_marks(monkeypatch, via):
    from harness.models.mock.provider import register_mock_provider

    seen = []
    provider = register_mock_provider()  # the provider the client is handed (patched on the instance: an earlier
    serve = provider.serve               # test may have left an instance attribute that a class patch would miss)
    monkeypatch.setattr(provider, "serve", lambda *args, **kwargs: (seen.append(kwargs.get("marks")),
                                                                   serve(*args, **kwargs))[1])
    client = LLMClient(LLMProfile(model="mock/agent", mock={"via": via}, cache_policy="inspect"), session="m", seed=0)
    client.complete(CONVERSATION[:2], TOOLS, clock_s=0.0)
    client.end_session()
    assert seen == [CacheMarks(breakpoints=(Breakpoint("message", 0), Breakpoint("tool", 1)), automatic="5m")]


def test_a_marker_needing_provider_under_a_policy_sending_none_is_said_in_words():
    assert "sends no cache marker" in uncached_note({"model": "anthropic/claude-sonnet-4-6", "cache_policy": "none"})
    assert uncached_note({"model": "anthropic/claude-sonnet-4-6"}) is None
    assert uncached_note({"model": "openai/gpt-5", "cache_policy": "none"}) is None


def test_policy_is_recorded_in_config_and_rows(tmp_path):
    from harness import api
    from harness.results.report import runs_frame

    out = api.run("smoke", strategies="none", profiles=api.mock_profiles(cache_policy={"name": "last", "ttl": "1h"}),
                  families=["chained_lookup"], limit=1, out=tmp_path / "r", executor="in_process")
    config = json.loads((out / "config.json").read_text())
    assert config["profiles"]["main"]["cache_policy"] == {"name": "last", "ttl": "1h"}
    assert list(runs_frame(out)["cache_policy"]) == ["last(ttl=1h)"]


def test_cache_policy_is_a_sweep_axis_whose_points_resume_apart(tmp_path):
    from harness import api
    from harness.run.invocation import load_matrix
    from harness.results.report import runs_frame

    grid = {"strategy": "none", "grid": {"cache_policy": ["none", "last"]}}
    out = api.sweep(grid, "smoke", families=["chained_lookup"], limit=1, out=tmp_path / "s", executor="in_process")
    assert sorted(runs_frame(out)["cache_policy"]) == ["last", "none"]
    matrix = load_matrix(out)  # points differing only in their policy are not taken for secret-only twins
    assert {label: fields["main"] for label, fields in matrix.strategy_profiles.items()} == {
        "none[cache_policy=last]": {"cache_policy": "last"}, "none[cache_policy=none]": {"cache_policy": "none"}}


def test_a_bad_policy_on_a_sweep_axis_is_refused_before_any_run():
    from harness.sweep import Grid, validate_grid

    with pytest.raises(ConfigError, match="grid key 'cache_policy' = inspekt: unknown cache policy"):
        validate_grid(Grid(strategy="none", axes={"cache_policy": ["auto", "inspekt"]}))


def test_dry_run_and_run_tables_say_when_nothing_is_marked_for_a_marker_provider(capsys, tmp_path):
    from harness.cli import main

    selection = ["--suite", "smoke", "--family", "chained_lookup", "--limit", "1", "--strategies", "none",
                 "--no-progress", "--cache-policy", "none"]
    assert main(["run", "--model", "anthropic/claude-sonnet-4-6", "--dry-run", *selection]) == 0
    estimate = capsys.readouterr().out
    assert "cache policy  none" in estimate and "sends no cache marker" in estimate
    assert main(["run", *selection, "--executor", "in_process", "--out", str(tmp_path / "r")]) == 0
    assert "NOTE: cache policy 'none' sends no cache marker" in capsys.readouterr().out
    assert main(["run", *selection[:-1], "auto", "--executor", "in_process", "--out", str(tmp_path / "a")]) == 0
    assert "NOTE" not in capsys.readouterr().out


def test_the_response_cache_tells_requests_apart_by_their_cache_marks(tmp_path):
    """The same messages marked otherwise are billed otherwise: a replay must not answer one for the other."""
    def ask(policy: str) -> bool:
        profile = LLMProfile(model="mock/agent", cache_policy=policy, response_cache=str(tmp_path / "cache"))
        client = LLMClient(profile, session="same", seed=0)
        result = client.complete(CONVERSATION[:2], TOOLS, clock_s=0.0)
        client.end_session()
        return result.from_cache

    assert [ask("auto"), ask("none"), ask("auto"), ask("none")] == [False, False, True, True]


@pytest.mark.parametrize("price_model, cache_style, said", [
    ("gpt-5.6", None, "cached by the 'anthropic' rules; that model's provider caches by the 'openai-breakpoints' ones"),
    ("gpt-4.1", "anthropic", "by the 'openai' ones (--cache-style openai)"),
    ("gpt-5.6", "openai-breakpoints", None),
    ("claude-haiku-4-5", None, None),
])
def test_a_mock_billed_as_another_providers_model_says_whose_cache_rules_it_ran(capsys, tmp_path, price_model,
                                                                               cache_style, said):
    """`--price-model` bills the mock as that model; its cache style is the user's (--cache-style, anthropic by
    default). When the two belong to different providers the run says so, naming the style that would match."""
    from harness.cli import main

    style = ["--cache-style", cache_style] if cache_style else []
    assert main(["run", "--suite", "smoke", "--family", "chained_lookup", "--limit", "1", "--strategies", "none",
                 "--no-progress", "--price-model", price_model, *style, "--out", str(tmp_path / "r")]) == 0
    out = capsys.readouterr().out
    if said is None:
        assert "NOTE: the mock billed as" not in out
    else:
        assert f"NOTE: the mock billed as {price_model}" in out and said in out
