"""litellm's context-management polyfill (strategies/adapters/litellm_context_management.py) against litellm itself.

Sources, litellm 1.110.2 under litellm/llms/anthropic/messages/: adapters/handler.py
`prepare_context_managed_request` (what `/v1/messages` runs before it forwards a request for a non-Anthropic
model), context_management/constants.py, editors/clear_tool_uses.py, editors/compact.py, caller_model_checks.py,
utils.py, and adapters/transformation.py (the compaction block at the head of the response's content).
"""
from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

import pytest

from harness.conversation.events import read_events
from harness.core.errors import ConfigError
from harness.conversation.replay import replay_file
from harness.models.mock.agents import respond
from harness.models.mock.summarizer import HEADER, summarize
from strategies import StrategySpec, build_strategy
from strategies.adapters import LITELLM, Library
from tests.adapter_helpers import requires
from tests.conftest import write_suite_file
from tests.reset_helpers import context, success, tool_call
from tests.tasks.test_suites import opening, small_env

pytestmark = requires(LITELLM)

NAME = "litellm.context_management"
PLACEHOLDER = "[Cleared by context management]"  # constants.py:21 CLEARED_TOOL_RESULT_PLACEHOLDER
SUMMARY_PREFIX = "Previous conversation summary: "  # constants.py:40 COMPACT_SUMMARY_SYSTEM_PREFIX


def _adapter(config: dict[str, Any] | None = None) -> Any:
    return build_strategy(StrategySpec(NAME, config or {}))


def _history(ctx: Any, results: int, words: int, tool: str = "read") -> list[int]:
    """`results` tool uses, each answered by a result of about `words` tokens; returns the logged ids."""
    ids = []
    for n in range(results):
        call = tool_call(f"{tool}{n}", tool, {"n": n})
        ids.append(ctx.add_message({"role": "assistant", "content": f"step {n}", "tool_calls": [call]},
                                   origin="agent")["id"])
        ids.append(ctx.add_message({"role": "tool", "tool_call_id": f"{tool}{n}", "name": tool,
                                    "content": f"result {n} " + "lorem " * words}, origin="tool")["id"])
    return ids


def _as_anthropic(messages: list[dict[str, Any]]) -> tuple[str, list[dict[str, Any]]]:
    """Chat messages as a client sends them to `/v1/messages` (written here apart from the adapter's):
    the system prompt apart, parallel tool results in one user turn."""
    system, out = messages[0]["content"], []
    for message in messages[1:]:
        if message["role"] == "tool":
            block = {"type": "tool_result", "tool_use_id": message["tool_call_id"], "content": message["content"]}
            if out and out[-1]["role"] == "user" and isinstance(out[-1]["content"], list):
                out[-1]["content"].append(block)
            else:
                out.append({"role": "user", "content": [block]})
        elif message["role"] == "assistant":
            blocks = [{"type": "text", "text": message["content"]}] if message.get("content") else []
            blocks += [{"type": "tool_use", "id": c["id"], "name": c["function"]["name"],
                        "input": json.loads(c["function"]["arguments"])} for c in message.get("tool_calls") or ()]
            out.append({"role": "assistant", "content": blocks})
        else:
            out.append({"role": "user", "content": message["content"]})
    return system, out


def _forwarded(messages: list[dict[str, Any]], spec: dict[str, Any]) -> list[tuple]:
    """What litellm forwards for these messages (no compaction here), in its own OpenAI translation."""
    from litellm.llms.anthropic.messages.adapters.handler import prepare_context_managed_request
    from litellm.llms.anthropic.messages.adapters.transformation import LiteLLMAnthropicMessagesAdapter

    system, anthropic = _as_anthropic(messages)
    result = asyncio.run(prepare_context_managed_request(
        model="mock/agent", messages=anthropic, tools=None, system=system, context_management_spec=spec,
        litellm_metadata=None, additional_drop_params=None, llm_router=None))
    sent = LiteLLMAnthropicMessagesAdapter().translate_anthropic_messages_to_openai(messages=result.messages)
    return [("system", result.system, (), None), *map(_shape, sent)]


def _shape(message: Any) -> tuple:
    """(role, text, tool calls with inputs, tool_call_id) of a chat message, from either side."""
    message = dict(message)
    content = message.get("content")
    text = content if isinstance(content, str) else "".join(p.get("text", "") for p in content or ())
    calls = tuple((c["id"], c["function"]["name"], json.loads(c["function"]["arguments"]))
                  for c in message.get("tool_calls") or ())
    return message["role"], text, calls, message.get("tool_call_id")


# ----- (a) end to end: no error, a compaction where the context passes the trigger, replay without the polyfill

def test_the_smoke_suite_runs_without_error_and_replays_without_litellms_polyfill(run_suite, monkeypatch):
    """Both edits on the smoke suite (clear_tool_uses low enough to clear): no run ends `error`; every log
    replays with the polyfill's modules unimportable (the view ops are in the log)."""
    configs = {NAME: {"clear_tool_uses": {"trigger": 3000}}}
    frame = run_suite("smoke", strategies=NAME, strategy_configs=configs)
    assert not (frame["termination"] == "error").any(), frame["error"].tolist()
    assert frame["compactions"].sum() > 0
    assert set(frame["libraries"].map(tuple)) == {(LITELLM.label,)}
    for name in [m for m in sys.modules if m.startswith("litellm.llms.anthropic.messages")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "litellm.llms.anthropic.messages", None)  # any import of it now fails
    paths = sorted((frame.attrs["out"] / "events").glob("*.jsonl.gz"))
    assert paths and [p.name for p in paths if not replay_file(p).ok] == []


def test_it_compacts_once_the_context_passes_the_trigger_and_its_summaries_are_summary_side_calls(run_suite,
                                                                                                   tmp_path):
    """At a 64k window compact's trigger is litellm's minimum, 50,000 (constants.py:26): repo_maintenance-0
    passes it, litellm summarizes once through the `summary` profile, and the agent finishes from the summary."""
    suite = write_suite_file(tmp_path, task_ids=["repo_maintenance-0"])
    frame = run_suite(suite, strategies=NAME, window=64_000)
    row = frame.iloc[0]
    assert row["termination"] == "submitted" and row["success"], row["error"]
    assert row["summaries"] == row["summarizer_requests"] == 1
    events = read_events(next((frame.attrs["out"] / "events").glob("*.jsonl.gz")))
    side = [e for e in events if e["type"] == "llm_call" and e["profile"] == "summary"]
    assert [e["purpose"] for e in side] == ["litellm.compact_20260112"]
    condensation = next(e for e in events if e["type"] == "condensation")
    assert condensation["kind"] == "summary" and condensation["trigger_tokens"] == 50_000
    summary = events[condensation["summary_id"]]["message"]
    assert summary["role"] == "system" and summary["content"].startswith(SUMMARY_PREFIX + HEADER)


# ----- (b) the view sent is what litellm forwards

def test_clearing_sends_what_litellm_forwards_with_its_placeholder():
    """clear_tool_uses_20250919 past its trigger: the oldest results become litellm's placeholder
    (constants.py:21), the last `keep` uses (constants.py:19, default 3) and the latest completed result
    (clear_tool_uses.py:290-303, 403) stay; the view equals litellm's own forwarding of the same history, sent
    as a client groups parallel results (one user turn), though the adapter sends each result as its own."""
    ctx = context()
    calls = [tool_call("p0", "read", {"f": 0}), tool_call("p1", "read", {"f": 1})]
    ctx.add_message({"role": "assistant", "content": "two at once", "tool_calls": calls}, origin="agent")
    parallel = [ctx.add_message({"role": "tool", "tool_call_id": f"p{n}", "name": "read",
                                 "content": "lorem " * 300}, origin="tool")["id"] for n in range(2)]
    ids = _history(ctx, results=5, words=300)
    original = ctx.view.to_messages()
    adapter = _adapter({"clear_tool_uses": {"trigger": 1000}, "compact": None})
    adapter.before_request(ctx)
    spec = {"edits": [{"type": "clear_tool_uses_20250919", "trigger": {"type": "input_tokens", "value": 1000},
                       "keep": {"type": "tool_uses", "value": 3}}]}
    assert list(map(_shape, ctx.view.to_messages())) == _forwarded(original, spec)
    cleared = [i for i in parallel + ids if ctx.view.message(i).get("content") == PLACEHOLDER]
    assert cleared == parallel + ids[1:4:2]  # the results of the four oldest of seven uses
    event = ctx.log.events[-1]
    assert event["type"] == "compaction" and event["step"] == "clear_tool_uses" and event["cleared_ids"] == cleared
    assert event["applied_edits"][0]["cleared_tool_uses"] == 4


def test_a_cleared_result_is_cleared_again_from_its_original_as_the_client_never_sees_the_edit():
    """The client sends its whole history each request; litellm counts the originals against the trigger
    (clear_tool_uses.py:395) and clears them again: a view already cleared stays as it is, no new event."""
    ctx = context()
    _history(ctx, results=6, words=300)
    adapter = _adapter({"clear_tool_uses": {"trigger": 1000}, "compact": None})
    adapter.before_request(ctx)
    events = len(ctx.log)
    adapter.before_request(ctx)
    assert len(ctx.log) == events


def test_small_results_and_excluded_tools_are_never_cleared_and_inputs_clear_when_asked():
    """Results of 1 to 46 bytes are never cleared (clear_tool_uses.py:40-41, 180-187), nor uses of
    `exclude_tools`; `clear_tool_inputs` empties a cleared use's input (clear_tool_uses.py:338-352)."""
    ctx = context()
    ids = _history(ctx, results=5, words=300)
    tiny = ctx.add_message({"role": "assistant", "content": "", "tool_calls": [tool_call("t", "read", {})]},
                           origin="agent")["id"]
    ctx.add_message({"role": "tool", "tool_call_id": "t", "name": "read", "content": "ok"}, origin="tool")
    _history(ctx, results=4, words=300, tool="grep")
    original = ctx.view.to_messages()
    config = {"trigger": 1000, "exclude_tools": ["read"], "clear_tool_inputs": True}
    _adapter({"clear_tool_uses": config, "compact": None}).before_request(ctx)
    spec = {"edits": [{"type": "clear_tool_uses_20250919", "trigger": {"type": "input_tokens", "value": 1000},
                       "keep": {"type": "tool_uses", "value": 3}, "exclude_tools": ["read"],
                       "clear_tool_inputs": True}]}
    assert list(map(_shape, ctx.view.to_messages())) == _forwarded(original, spec)
    assert all(ctx.view.message(i) is ctx.log.events[i]["message"] for i in ids + [tiny])  # reads: kept as sent
    grep_calls = [m for m in ctx.view.to_messages() if m["role"] == "assistant" and
                  m["tool_calls"][0]["function"]["name"] == "grep"]
    assert grep_calls[0]["tool_calls"][0]["function"]["arguments"] == "{}"


def _compacting(ctx: Any, config: dict[str, Any] | None = None) -> Any:
    """A history of ~60k tokens (litellm's count) and the adapter with compact at litellm's minimum trigger."""
    _history(ctx, results=12, words=5000)
    return _adapter(config or {"compact": {"trigger": 50_000}})


def test_a_compaction_leaves_litellms_system_prompt_with_the_summary_and_the_last_user_question():
    """Past the trigger litellm asks the summary model (the `summary` profile, as a side call), puts the summary in
    front of the system prompt (compact.py:211-228, 870) and forwards the last user question alone
    (compact.py:365-400, 875). The question keeps its identity; the system prompt with the summary is new."""
    ctx = context()
    adapter = _compacting(ctx)
    adapter.before_request(ctx)
    view = ctx.view.to_messages()
    assert [m["role"] for m in view] == ["system", "user"]
    assert view[0]["content"].startswith(SUMMARY_PREFIX + HEADER) and view[0]["content"].endswith("\n\nYou are an agent.")
    assert ctx.view.ids[1] == 1 and view[1] is ctx.log.events[1]["message"]
    side = [e for e in ctx.log.events if e["type"] == "llm_call"]
    assert [(e["profile"], e["purpose"]) for e in side] == [("summary", "litellm.compact_20260112")]
    condensation = ctx.log.events[-1]
    assert condensation["type"] == "condensation" and condensation["summary_id"] == ctx.view.ids[0]
    assert condensation["applied_edits"][0]["summary_output_tokens"] == side[0]["usage"]["output_tokens"]


def test_the_next_request_carries_the_compaction_block_and_litellm_drops_what_came_before_it(monkeypatch):
    """litellm puts the compaction block at the head of the response's content (adapters/transformation.py:1781);
    the client sends it back in that assistant message, and litellm drops everything before the latest block
    (compact.py:144-171, 693), keeping the summary in the system prompt."""
    import litellm.llms.anthropic.messages.adapters.handler as handler

    ctx = context()
    adapter = _compacting(ctx)
    adapter.before_request(ctx)
    system_id = ctx.view.ids[0]
    reply = success(ctx, adapter, {"role": "assistant", "content": "next", "tool_calls": [tool_call("z", "read", {})]},
                    600)
    ctx.add_message({"role": "tool", "tool_call_id": "z", "name": "read", "content": "fresh"}, origin="tool")
    sent: list[Any] = []
    prepare = handler.prepare_context_managed_request

    async def spy(**kwargs: Any) -> Any:
        sent.append(kwargs)
        return await prepare(**kwargs)

    monkeypatch.setattr(handler, "prepare_context_managed_request", spy)
    adapter.before_request(ctx)
    carrier = next(m for m in sent[0]["messages"] if m["role"] == "assistant")
    assert carrier["content"][0] == {"type": "compaction", "content": adapter.carrier[1]["content"]}
    assert sent[0]["system"] == "You are an agent."  # the client's own system prompt
    assert ctx.view.ids == [system_id, reply["id"], reply["id"] + 1]
    assert ctx.log.events[-1]["step"] == "compaction_slice" and ctx.log.events[-1]["dropped_ids"] == [1]


def test_a_summary_outside_a_summary_block_is_litellms_extraction_failure_and_nothing_is_compacted():
    """litellm reads the summary out of a <summary> block (compact.py:403-410); custom instructions that ask
    for none get none from the mock, as from a model: litellm forwards uncompacted (compact.py:834-841),
    recorded as condensation_refused."""
    ctx = context()
    adapter = _compacting(ctx, {"compact": {"trigger": 50_000, "instructions": "Summarize the conversation."}})
    before = list(ctx.view.ids)
    adapter.before_request(ctx)
    assert ctx.view.ids == before
    refused = [e for e in ctx.log.events if e["type"] == "condensation_refused"]
    assert [e["reason"] for e in refused] == ["summary_extraction_failed"]


def test_pause_after_compaction_is_ignored_with_litellms_warning():
    """compact.py:682-683: litellm cannot pause, and says so in the applied edit."""
    ctx = context()
    adapter = _compacting(ctx, {"compact": {"trigger": 50_000, "pause_after_compaction": True}})
    adapter.before_request(ctx)
    assert ctx.log.events[-1]["applied_edits"][0]["warnings"] == ["pause_after_compaction_ignored"]


def test_outside_the_proxy_the_summary_model_is_the_profile_and_litellms_own_settings_are_untouched(monkeypatch):
    """compact.py:106-109 reads the summary model from the proxy's general settings (utils.py:91-97: none
    outside it), and calls it through `llm_router.acompletion` (compact.py:568-570); the caller checks allow a
    caller with no proxy auth (caller_model_checks.py:132-133, 238-239, 408-409). The adapter's settings
    hold only during its own calls."""
    from litellm.llms.anthropic.messages.context_management.editors import compact

    ctx = context(profiles={"main": {"model": "mock/agent"}, "writer": {"model": "mock/summarizer"}})
    adapter = _compacting(ctx, {"compact": {"trigger": 50_000}, "context_management_summary_model": "writer"})
    assert adapter.profiles_needed() == ["writer"]
    adapter.before_request(ctx)
    assert [e["profile"] for e in ctx.log.events if e["type"] == "llm_call"] == ["writer"]
    assert compact._read_summary_model_setting() is None


def test_ctxbench_own_error_in_the_summary_call_ends_the_run_though_litellm_catches_it(monkeypatch):
    """litellm treats any failure of its summary call as summary_call_failed (compact.py:825-832); a ctxbench
    error raised there (not the provider's) is raised again (ours, as Library.calling passes them)."""
    ctx = context()
    adapter = _compacting(ctx)

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise ConfigError("profile trouble")

    monkeypatch.setattr(ctx, "call_llm", refuse)
    with pytest.raises(ConfigError, match="profile trouble"):
        adapter.before_request(ctx)


# ----- (c) configuration

def test_a_compact_trigger_under_litellms_minimum_is_refused_before_the_run():
    """compact.py:254-261: a trigger under 50,000 (constants.py:26) is litellm's 400."""
    with pytest.raises(ConfigError, match=r"compact\.trigger: litellm \S+ refuses 49,999: .*at least 50000 tokens"):
        _adapter({"compact": {"trigger": 49_999}})


def test_a_malformed_clear_tool_uses_edit_is_refused_by_litellms_own_check():
    """clear_tool_uses.py:113-129 check_clear_tool_uses_spec: the API's 400 for a malformed field."""
    with pytest.raises(ConfigError, match=r"clear_tool_uses: litellm \S+ refuses it: "
                                          r"context_management\.edits\.0\.clear_tool_uses_20250919\.clear_at_least"):
        _adapter({"clear_tool_uses": {"clear_at_least": -1}})
    with pytest.raises(ConfigError, match="keep must be 0 or more"):
        _adapter({"clear_tool_uses": {"keep": -1}})
    with pytest.raises(ConfigError, match="unknown key"):
        _adapter({"compact": {"value": 60_000}})


def test_an_older_litellm_is_refused_naming_the_release_that_has_the_polyfill(monkeypatch):
    monkeypatch.setattr(Library, "version", lambda self: "1.100.0")
    with pytest.raises(ConfigError, match=r"from release 1\.109\.0 on; this is 1\.100\.0: "
                                          r"pip install -U 'litellm>=1\.109\.0'"):
        _adapter()


def test_triggers_scale_with_the_window_and_compact_never_goes_under_litellms_minimum():
    """Defaults: 0.5 and 0.75 of the input budget (constants.py:18 and :25 at a 200k window); ours: compact's
    scaled default is raised to the 50,000 minimum; a window at or under it can never compact, said before the run."""
    adapter = _adapter({"clear_tool_uses": {}})
    assert adapter.threshold_values(200_000) == {"clear_tool_uses.trigger": 100_000, "compact.trigger": 150_000}
    assert adapter.threshold_values(60_000)["compact.trigger"] == 50_000
    assert adapter.threshold_warnings(60_000, NAME) == []
    [warning] = adapter.threshold_warnings(40_000, NAME)
    assert "refuses a compact trigger under 50,000 tokens" in warning and "never compacts" in warning
    [warning] = _adapter({"compact": {"trigger": 300_000}}).threshold_warnings(200_000, NAME)
    assert "150,000 (0.75 x budget, its default) would act" in warning


# ----- (d) the mock reads litellm's prompt and its system prompt

def test_the_mock_summarizer_answers_in_the_summary_block_litellms_prompt_asks_for():
    """Anthropic's compaction prompt, which litellm sends (constants.py:43-51), asks for a <summary> block."""
    from litellm.llms.anthropic.messages.context_management.constants import COMPACT_DEFAULT_INSTRUCTIONS

    env = small_env("chained_lookup")
    request = [*opening(env), {"role": "user", "content": COMPACT_DEFAULT_INSTRUCTIONS}]
    reply = summarize(request, seed=0)["content"]
    assert reply.startswith("<summary>\n" + HEADER + "Task: Start at record") and reply.endswith("\n</summary>")
    assert not summarize(request[:-1] + [{"role": "user", "content": "Summarize."}], seed=0)["content"].startswith("<")


def test_the_mock_agent_reads_a_summary_litellm_put_in_the_system_prompt():
    """The agent reads the system prompt as it reads the user's words (mock agents' TOLD roles), so the task and
    the facts of litellm's summary there are known, and the agent goes on from them."""
    env = small_env("chained_lookup")
    notes = summarize([*opening(env), {"role": "user", "content": "<summary></summary>"}], seed=0)["content"]
    summary = notes.removeprefix("<summary>\n").removesuffix("\n</summary>")
    system = f"{SUMMARY_PREFIX}{summary}\n\n{env.system_prompt}"
    tools = [spec.schema() for spec in env.tool_specs()]
    reply = respond([{"role": "system", "content": system},
                     {"role": "user", "content": "Please continue based on the conversation summary above."}],
                    tools, seed=0)
    assert "cannot find a task statement" not in (reply.get("content") or "") and reply.get("tool_calls")
