"""LangChain 1.x agent middleware (strategies/adapters/langchain.py) against LangChain itself.

Sources, langchain 1.5.0 (langchain/agents/): middleware/summarization.py (SummarizationMiddleware),
middleware/context_editing.py (ContextEditingMiddleware, ClearToolUsesEdit), factory.py (create_agent: the system
prompt is apart from the state); langgraph's graph/message.py (the add_messages reducer); langchain_core's
messages/utils.py (count_tokens_approximately, get_buffer_string).
"""
from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from harness.cli import main
from harness.conversation.replay import replay_file
from harness.core.errors import ConfigError
from harness.models.mock.summarizer import HEADER, summarize
from strategies import StrategySpec, build_strategy
from strategies.adapters import LANGCHAIN, Library
from tests.adapter_helpers import requires, tool_steps
from tests.reset_helpers import SYSTEM, context, success, tool_call
from tests.tasks.test_suites import opening, small_env

pytestmark = requires(LANGCHAIN)

SUMMARIZATION, CLEAR = "langchain.summarization", "langchain.clear_tool_uses"
NAMES = (SUMMARIZATION, CLEAR)


def _adapter(name: str, config: dict[str, Any] | None = None) -> Any:
    return build_strategy(StrategySpec(name, config or {}))


def _history(ctx: Any, uses: int, words: int, tool: str = "read", parallel: int = 1) -> None:
    """`uses` assistant turns, each calling `tool` `parallel` times at once, each call answered by about `words`
    words naming a code."""
    for n in range(uses):
        calls = [tool_call(f"{tool}{n}-{k}", tool, {"n": n, "k": k}) for k in range(parallel)]
        ctx.add_message({"role": "assistant", "content": f"step {n}", "tool_calls": calls}, origin="agent")
        for k in range(parallel):
            ctx.add_message({"role": "tool", "tool_call_id": f"{tool}{n}-{k}", "name": tool,
                             "content": f"result {n}.{k}: code K{n}{k}7 " + "lorem " * words}, origin="tool")


def _state(messages: list[dict[str, Any]]) -> list[Any]:
    """Chat messages as a LangChain agent's state holds them, written here apart from the adapter's converter."""
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    out = []
    for n, message in enumerate(messages):
        if message["role"] == "assistant":
            calls = [{"id": c["id"], "name": c["function"]["name"], "args": json.loads(c["function"]["arguments"])}
                     for c in message.get("tool_calls") or ()]
            out.append(AIMessage(message["content"] or "", tool_calls=calls, id=f"m{n}"))
        elif message["role"] == "tool":
            out.append(ToolMessage(message["content"], tool_call_id=message["tool_call_id"], name=message["name"],
                                   id=f"m{n}"))
        else:
            out.append(HumanMessage(message["content"], id=f"m{n}"))
    return out


def _shape(message: Any) -> tuple:
    """(role, text, tool calls with their arguments, tool_call_id) of a chat message or a LangChain one."""
    if not isinstance(message, dict):
        from langchain_core.messages import convert_to_openai_messages
        message = convert_to_openai_messages(message)
    calls = tuple((c["id"], c["function"]["name"], json.loads(c["function"]["arguments"]))
                  for c in message.get("tool_calls") or ())
    return message["role"], message.get("content") or "", calls, message.get("tool_call_id")


def _mock_summarizer() -> Any:
    """A LangChain chat model answering as the mock summarizer, recording the prompts it is sent."""
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import AIMessage
    from langchain_core.outputs import ChatGeneration, ChatResult

    class MockSummarizer(BaseChatModel):
        prompts: list = []

        @property
        def _llm_type(self) -> str:
            return "test"

        def _generate(self, messages, stop=None, run_manager=None, **kwargs):
            self.prompts.append(messages[0].content)
            reply = summarize([{"role": "user", "content": messages[0].content}], seed=0)["content"]
            return ChatResult(generations=[ChatGeneration(message=AIMessage(reply))])

    return MockSummarizer(prompts=[], profile={"max_input_tokens": 200_000})


def _spy_side_calls(ctx: Any, monkeypatch: pytest.MonkeyPatch) -> list[list[dict[str, Any]]]:
    sent: list[list[dict[str, Any]]] = []
    call = ctx.call_llm
    monkeypatch.setattr(ctx, "call_llm", lambda profile, messages, purpose: sent.append(messages) or
                        call(profile, messages, purpose))
    return sent


# ----- (a) SummarizationMiddleware: what ctxbench sends is what the middleware leaves

@pytest.mark.parametrize("keep", [["messages", 3], ["messages", 4], ["tokens", 700]])
def test_the_view_after_a_summary_is_what_the_middleware_and_langgraphs_reducer_leave(keep, monkeypatch):
    """before_model returns [RemoveMessage(REMOVE_ALL_MESSAGES), the summary, the kept messages]
    (summarization.py:479-517), which LangGraph's add_messages reducer applies (graph/message.py:207-211); the
    cut keeps an AI message with its tool results (summarization.py:862-911: a cut landing on a ToolMessage moves
    back to the AIMessage that called it: ["messages", 4] lands on one), and the summary is LangChain's HumanMessage
    (summarization.py:836-842). The same history driven through the middleware directly (with a chat model
    answering as the mock summarizer) leaves the same messages, and its summary prompt is the one ctxbench sent."""
    from langchain.agents.middleware import SummarizationMiddleware
    from langgraph.graph.message import add_messages

    ctx = context()
    _history(ctx, uses=4, words=200, parallel=2)
    logged = ctx.view.to_messages()
    config = {"trigger": {"tokens": 1000}, "keep": keep, "trim_tokens_to_summarize": None}
    sent = _spy_side_calls(ctx, monkeypatch)
    _adapter(SUMMARIZATION, config).before_request(ctx)

    model = _mock_summarizer()
    middleware = SummarizationMiddleware(model, trigger={"tokens": 1000}, keep=tuple(keep), trim_tokens_to_summarize=None)
    state = _state(logged[1:])
    expected = add_messages(state, middleware.before_model({"messages": state}, None)["messages"])
    view = ctx.view.to_messages()
    assert view[0] == SYSTEM
    assert list(map(_shape, view[1:])) == list(map(_shape, expected))
    assert [[{"role": "user", "content": prompt}] for prompt in model.prompts] == sent
    assert view[1]["content"].startswith(expected[0].content.split("\n\n")[0] + "\n\n" + HEADER)
    condensation = ctx.log.events[-1]
    assert condensation["type"] == "condensation" and condensation["kind"] == "summary"
    assert condensation["summary_id"] == ctx.view.ids[1]
    assert ctx.log.events[condensation["request_id"]]["type"] == "condensation_request"
    if keep == ["messages", 4]:  # the 4th message from the end is a result: its AI message and both results stay
        assert [m.type for m in expected[1:]] == ["ai", "tool", "tool"] * 2


def test_the_trigger_counts_the_state_alone_and_also_fires_on_the_usage_the_provider_reported():
    """The count is of the state's messages, the system prompt and tools apart (summarization.py:497; factory.py
    puts the system prompt in front only for the model call, 1506-1507); a last AI message whose reported total
    reaches a tokens trigger fires it too (summarization.py:676-696, 709-719), the provider matching: ctxbench's
    main model's, on the replies and on the middleware's model alike."""
    ctx = context()
    ctx.tools = [{"type": "function", "function": {"name": "read", "description": "Read a row. " * 1000,
                                                   "parameters": {"type": "object", "properties": {}}}}]
    _history(ctx, uses=3, words=20)
    adapter = _adapter(SUMMARIZATION, {"trigger": {"tokens": 3000}, "keep": ["messages", 2]})
    adapter.before_request(ctx)
    assert ctx.prompt_tokens_estimate() > 3000  # the tools' schemas are not LangChain's to count
    assert not any(e["type"] == "condensation" for e in ctx.log.events)
    success(ctx, adapter, {"role": "assistant", "content": "more", "tool_calls": [tool_call("z", "read", {})]},
            input_tokens=3500)  # the provider saw the whole request
    ctx.add_message({"role": "tool", "tool_call_id": "z", "name": "read", "content": "ok"}, origin="tool")
    adapter.before_request(ctx)
    condensation = ctx.log.events[-1]
    assert condensation["type"] == "condensation" and condensation["langchain_tokens"] < 3000


def test_a_summarized_part_with_no_user_message_in_its_last_4000_tokens_is_langchains_placeholder(monkeypatch):
    """LangChain shows the summary model the last trim_tokens_to_summarize (default 4000, summarization.py:114) tokens
    of what it summarizes, starting on a human message (summarization.py:1022-1040); when none is in that span the
    trimmed list is empty and the summary is LangChain's own placeholder, no model called (summarization.py:929-931)."""
    from langchain.agents.middleware import SummarizationMiddleware

    ctx = context()
    _history(ctx, uses=6, words=1000)
    sent = _spy_side_calls(ctx, monkeypatch)
    _adapter(SUMMARIZATION, {"trigger": {"tokens": 2000}, "keep": ["messages", 2]}).before_request(ctx)
    placeholder = SummarizationMiddleware(_mock_summarizer())._create_summary(_state(ctx.view.to_messages()[3:]))
    assert sent == [] and ctx.view.to_messages()[1]["content"].endswith("\n\n" + placeholder)
    assert not any(e["type"] == "llm_call" for e in ctx.log.events)


def test_a_later_request_holds_langchains_own_summary_message_and_appends():
    """The state after a summary is LangChain's (its summary message kept as LangChain made it, with its metadata);
    the next request sends it and what the agent added, and nothing is summarized again below the trigger."""
    ctx = context()
    _history(ctx, uses=4, words=200)
    adapter = _adapter(SUMMARIZATION, {"trigger": {"tokens": 1000}, "keep": ["messages", 2]})
    adapter.before_request(ctx)
    summary_id = ctx.view.ids[1]
    lc_summary = adapter.converter.cache[summary_id][1]
    assert lc_summary.additional_kwargs == {"lc_source": "summarization"}  # summarization.py:840
    reply = success(ctx, adapter, {"role": "assistant", "content": "done"}, input_tokens=300)
    events = len(ctx.log)
    adapter.before_request(ctx)
    assert len(ctx.log) == events and ctx.view.ids[-1] == reply["id"]
    assert adapter.converter.convert(summary_id, ctx.view.message(summary_id)) is lc_summary


def test_a_failed_summary_call_is_not_retried_by_langchain_and_ends_the_run_as_it_failed(monkeypatch):
    """LangChain retries a summary call up to 3 times unless the error is a non-retryable ModelError
    (summarization.py:430, _retry.py default_retry_on); ctxbench's LLM layer has already retried it (ours): one
    attempt, and the side call's own error, a ctxbench error included, is what the run ends with."""
    ctx = context()
    _history(ctx, uses=4, words=200)
    attempts = []

    def refuse(*args: Any) -> Any:
        attempts.append(args)
        raise ConfigError("profile trouble")

    monkeypatch.setattr(ctx, "call_llm", refuse)
    with pytest.raises(ConfigError, match="profile trouble"):
        _adapter(SUMMARIZATION, {"trigger": {"tokens": 1000}, "keep": ["messages", 2],
                                 "trim_tokens_to_summarize": None}).before_request(ctx)
    assert len(attempts) == 1


def test_a_summary_call_past_the_window_is_retried_once_with_langchains_shorter_prompt(monkeypatch):
    """A summary prompt past the summary model's window (ContextOverflowError) is sent once more with the middle of
    the conversation cut out (summarization.py:939-945, 989-1020): the side call's overflow is LangChain's."""
    import litellm

    ctx = context()
    _history(ctx, uses=4, words=200)
    sent = []
    call = ctx.call_llm

    def overflow_once(profile: str, messages: list[dict[str, Any]], purpose: str) -> Any:
        sent.append(messages[0]["content"])
        if len(sent) == 1:
            raise litellm.ContextWindowExceededError("prompt is too long", model="mock", llm_provider="mock")
        return call(profile, messages, purpose)

    monkeypatch.setattr(ctx, "call_llm", overflow_once)
    _adapter(SUMMARIZATION, {"trigger": {"tokens": 1000}, "keep": ["messages", 2],
                             "trim_tokens_to_summarize": None}).before_request(ctx)
    assert len(sent) == 2 and len(sent[1]) < len(sent[0])
    assert ctx.log.events[-1]["type"] == "condensation"


def test_composed_with_clearing_the_summary_counts_and_reads_the_uncleared_state(monkeypatch):
    """LangChain's `middleware=[SummarizationMiddleware, ContextEditingMiddleware]`: the clearing edits each model
    request's copy (context_editing.py:270), never the state, so the summarization counts and summarizes the
    uncleared results; composed with `with`, the adapters do the same."""
    ctx = context()
    _history(ctx, uses=5, words=200)
    clear = {"name": CLEAR, "config": {"edits": [{"trigger": 1000}]}}
    stack = _adapter(SUMMARIZATION, {"trigger": {"tokens": 2000}, "keep": ["messages", 2],
                                     "trim_tokens_to_summarize": None, "with": [clear]})
    stack.before_request(ctx)
    assert ctx.log.events[-1]["step"] == "clear_tool_uses"
    _history(ctx, uses=2, words=200, tool="grep")
    sent = _spy_side_calls(ctx, monkeypatch)
    stack.before_request(ctx)
    [condensation] = [e for e in ctx.log.events if e["type"] == "condensation"]
    assert condensation["langchain_tokens"] >= 2000 > condensation["tokens_before"]
    assert "result 0.0: code K007 lorem" in sent[0][0]["content"] and "[cleared]" not in sent[0][0]["content"]


# ----- (b) ContextEditingMiddleware: what ctxbench sends is what its handler receives

@pytest.mark.parametrize("edit", [{"trigger": 1000}, {"trigger": 1000, "keep": 1, "exclude_tools": ["grep"]},
                                  {"trigger": 1000, "clear_tool_inputs": True, "placeholder": "[gone]"},
                                  {"trigger": 1000, "clear_at_least": 600}, {"trigger": 100_000}])
def test_the_view_is_what_clear_tool_uses_hands_the_model(edit):
    """ClearToolUsesEdit past its trigger (`tokens <= trigger` does nothing, context_editing.py:86-89) clears every
    tool result but the last `keep` (95-98), of tools not excluded (126), to its placeholder (default "[cleared]",
    35; 129-141), their calls' inputs to {} when asked (143-147, 157-184), stopping once `clear_at_least` tokens are
    reclaimed (149-153). The same messages driven through the middleware directly reach its handler as ctxbench
    sends them."""
    from langchain.agents.middleware import ClearToolUsesEdit, ContextEditingMiddleware, ModelRequest
    from langchain_core.language_models.fake_chat_models import FakeListChatModel
    from langchain_core.messages import SystemMessage

    ctx = context()
    _history(ctx, uses=3, words=200, parallel=2)
    _history(ctx, uses=3, words=200, tool="grep")
    logged = ctx.view.to_messages()
    _adapter(CLEAR, {"edits": [edit]}).before_request(ctx)

    middleware = ContextEditingMiddleware(edits=[ClearToolUsesEdit(**edit)])
    handed: list[Any] = []
    request = ModelRequest(model=FakeListChatModel(responses=[""]), messages=_state(logged[1:]),
                           system_message=SystemMessage(SYSTEM["content"]))
    middleware.wrap_model_call(request, lambda edited: handed.extend(edited.messages))
    view = ctx.view.to_messages()
    assert view[0] == SYSTEM and list(map(_shape, view[1:])) == list(map(_shape, handed))
    cleared = [m for m in view if m["role"] == "tool" and m["content"] == edit.get("placeholder", "[cleared]")]
    if edit["trigger"] == 100_000:
        assert not cleared and ctx.log.events[-1]["type"] == "message"
    else:
        assert cleared and ctx.log.events[-1]["step"] == "clear_tool_uses"
        assert ctx.log.events[-1]["cleared_ids"] == [i for i in ctx.view.ids if ctx.view.message(i) in cleared]


def test_each_request_is_edited_again_from_the_originals_the_state_keeps():
    """The middleware edits a deep copy of the request's messages (context_editing.py:270): the state keeps the
    originals, counted against the trigger each time. A request with nothing new changes nothing; one more result
    clears one more."""
    ctx = context()
    _history(ctx, uses=5, words=200)
    adapter = _adapter(CLEAR, {"edits": [{"trigger": 1000}]})
    adapter.before_request(ctx)
    events = len(ctx.log)
    adapter.before_request(ctx)
    assert len(ctx.log) == events
    _history(ctx, uses=1, words=200, tool="grep")
    adapter.before_request(ctx)
    assert len(ctx.log.events[-1]["cleared_ids"]) == 1


def test_token_count_method_model_is_ctxbenchs_count_of_the_whole_request():
    """token_count_method "model" counts the system prompt, the messages and the tools with the model's own counter
    (context_editing.py:241-246); the adapter's model is ctxbench's main model, whose count is ctxbench's:
    what the edit read equals ctxbench's estimate of the request."""
    ctx = context()
    ctx.tools = [{"type": "function", "function": {"name": "read", "description": "Read a row.",
                                                   "parameters": {"type": "object", "properties": {}}}}]
    _history(ctx, uses=5, words=200)
    before = ctx.prompt_tokens_estimate()
    _adapter(CLEAR, {"edits": [{"trigger": 1000}], "token_count_method": "model"}).before_request(ctx)
    event = ctx.log.events[-1]
    assert event["step"] == "clear_tool_uses" and abs(event["langchain_tokens"] - before) <= 5 * 4


def test_each_message_is_converted_once_and_the_state_only_grows_between_edits(monkeypatch):
    """O(new messages): each logged message becomes a LangChain message once, however many requests follow, for
    both adapters, clearing or summarizing included (the state is extended, rebuilt only after a view op)."""
    from strategies.adapters.langchain import Converter

    converted: list[int] = []
    original = Converter.to_langchain
    monkeypatch.setattr(Converter, "to_langchain", lambda self, cid, message: converted.append(cid) or
                        original(self, cid, message))
    for name, config in ((SUMMARIZATION, {"trigger": {"tokens": 3000}, "keep": ["messages", 6]}),
                         (CLEAR, {"edits": [{"trigger": 3000}]})):
        converted.clear()
        ctx = context()
        tool_steps(ctx, _adapter(name, config), 30, 300)
        assert any(e["type"] in ("compaction", "condensation") for e in ctx.log.events)
        assert sorted(converted) == sorted(set(converted))


# ----- (c) configuration: the library's names and defaults, scaled to the window

def test_defaults_are_langchains_and_its_absolute_trigger_scales_with_the_window():
    """ClearToolUsesEdit's trigger 100,000 (context_editing.py:61) is 0.5 x budget; keep 3, clear_at_least 0 and the
    placeholder stay LangChain's. SummarizationMiddleware keeps LangChain's keep ("messages", 20, :113) and
    trim_tokens_to_summarize (4000, :114); its trigger, None in LangChain (never summarize, :286), is ours:
    LangChain's fraction 0.85 of the model profile's window, the run's input budget."""
    from langchain.agents.middleware import ClearToolUsesEdit

    clear = _adapter(CLEAR)
    assert ClearToolUsesEdit().trigger == 100_000
    assert clear.threshold_values(200_000) == {"edits[0].trigger": 100_000}
    assert clear.threshold_values(32_000) == {"edits[0].trigger": 16_000}
    [edit] = clear.instance.edits
    assert (edit.keep, edit.clear_at_least, edit.placeholder) == (3, 0, "[cleared]")
    summarization = _adapter(SUMMARIZATION)
    middleware = summarization.instance
    assert middleware.keep == ("messages", 20) and middleware.trim_tokens_to_summarize == 4000
    assert summarization.threshold_values(200_000) == {"trigger.fraction": 170_000}
    assert summarization.threshold_values(32_000) == {"trigger.fraction": 27_200}
    ctx = context(max_input_tokens=32_000)
    summarization.on_run_start(ctx)
    assert summarization.instance._get_profile_limits() == ctx.budget() == 32_000


def test_a_trigger_at_or_above_the_budget_is_said_before_the_run():
    [line] = _adapter(CLEAR, {"edits": [{"trigger": 40_000}]}).threshold_warnings(32_000, CLEAR)
    assert "edits[0].trigger 40,000 is at or above the 32,000-token input budget" in line and "16,000" in line
    [line] = _adapter(SUMMARIZATION, {"trigger": ["tokens", 50_000]}).threshold_warnings(32_000, SUMMARIZATION)
    assert "trigger.tokens 50,000" in line and "27,200 tokens" in line
    assert _adapter(SUMMARIZATION).threshold_warnings(32_000, SUMMARIZATION) == []


@pytest.mark.parametrize("name, config, named", [
    (SUMMARIZATION, {"trigger": {"fraction": 1.5}}, "Fractional trigger values must be between 0 and 1"),
    (SUMMARIZATION, {"trigger": {"turns": 3}}, "Unsupported trigger metric: 'turns'"),
    (SUMMARIZATION, {"trigger": {"messages": 2.5}}, "messages trigger values must be integers"),
    (SUMMARIZATION, {"keep": ["tokens", 0]}, "keep thresholds must be greater than 0"),
    (SUMMARIZATION, {"keep": {"messages": 20}}, r"keep: .* a \[kind, value\] pair"),
    (SUMMARIZATION, {"trim_tokens_to_summarize": 0}, "trim_tokens_to_summarize: expected a positive number"),
    (SUMMARIZATION, {"token_counter": "x"}, "token_counter: not configurable here"),
    (SUMMARIZATION, {"summarizer": "openai:gpt-4o"}, "summarizer: not configurable here"),
    (SUMMARIZATION, {"model": 3}, "model: expected a profile name"),
    (SUMMARIZATION, {"keep_messages": 3}, "unknown option 'keep_messages' for SummarizationMiddleware"),
    (CLEAR, {"edits": [{"keep_last": 3}]}, r"edits\[0\]: langchain refused .*keep_last"),
    (CLEAR, {"edits": [{"trigger": 0}]}, r"edits\[0\]\.trigger: expected a whole number of at least 1"),
    (CLEAR, {"edits": [{"keep": -1}]}, r"edits\[0\]\.keep: expected a whole number of at least 0"),
    (CLEAR, {"edits": [{"clear_at_least": "lots"}]}, r"edits\[0\]\.clear_at_least"),
    (CLEAR, {"edits": [{"exclude_tools": "read"}]}, r"edits\[0\]\.exclude_tools: expected a list"),
    (CLEAR, {"edits": [{"clear_tool_inputs": "yes"}]}, r"edits\[0\]\.clear_tool_inputs: expected true or false"),
    (CLEAR, {"edits": [{"placeholder": 1}]}, r"edits\[0\]\.placeholder: expected a text"),
    (CLEAR, {"edits": [3]}, r"edits\[0\]: expected a mapping"),
    (CLEAR, {"edits": {"trigger": 1}}, "edits: expected a list"),
    (CLEAR, {"token_count_method": "exact"}, "token_count_method: expected one of approximate, model"),
    (CLEAR, {"trigger": 1000}, "unknown option 'trigger' for ContextEditingMiddleware"),
])
def test_a_bad_config_is_refused_naming_the_option(name, config, named):
    """SummarizationMiddleware's constructor checks its trigger and keep (summarization.py:600-674, 819-833),
    ClearToolUsesEdit's its field names; what LangChain does not check, ours (each marked in the module)."""
    with pytest.raises(ConfigError, match=named):
        _adapter(name, config)


def test_a_bad_config_exits_2_naming_the_option(tmp_path, capsys):
    config = json.dumps({CLEAR: {"edits": [{"keep": -1}]}})
    assert main(["run", "--suite", "smoke", "--strategies", CLEAR, "--strategy-config", config, "--no-progress",
                 "--out", str(tmp_path / "r")]) == 2
    assert "edits[0].keep" in capsys.readouterr().err


@pytest.mark.parametrize("name", NAMES)
def test_a_missing_library_names_the_extra(name, monkeypatch):
    monkeypatch.setattr(Library, "version", lambda self: None)
    with pytest.raises(ConfigError, match=r"pip install -e '\.\[langchain\]'"):
        _adapter(name)


def test_loading_the_library_leaves_warnings_filters_alone():
    """Isolation: LangChain's imports (langsmith, langchain_core) add warnings filters; load() restores ctxbench's
    (in a fresh interpreter: the first import is the one that adds them)."""
    code = ("import warnings; before = list(warnings.filters); from strategies.adapters import langchain; "
            "langchain.load('test'); import langchain_core, langsmith; print(warnings.filters == before)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "True"


# ----- (d) the mock summarizer reads LangChain's summary prompt

def test_the_mock_summarizer_reads_the_conversation_langchains_prompt_embeds():
    """LangChain's prompt (DEFAULT_SUMMARY_PROMPT, summarization.py:55-100) embeds the messages to summarize as
    get_buffer_string(format="xml") renders them (summarization.py:982-987): the mock reads them back, the task and
    the records it is shown, and nothing it is not shown."""
    from langchain.agents.middleware.summarization import DEFAULT_SUMMARY_PROMPT
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage, get_buffer_string

    env = small_env("chained_lookup")
    task = opening(env)[1]["content"]
    start = task.split("Start at record ")[1].split()[0]
    shown = [HumanMessage(task), AIMessage("", tool_calls=[{"id": "r", "name": "read_file", "args": {"path": "a"}}]),
             ToolMessage(f"record {start} | weight 7 | successor QQ-1234 | custodian Ann", tool_call_id="r",
                         name="read_file")]
    prompt = DEFAULT_SUMMARY_PROMPT.format(messages=get_buffer_string(shown, format="xml"))
    reply = summarize([{"role": "user", "content": prompt}], seed=0)["content"]
    assert reply.startswith(HEADER + "Task: Start at record " + start) and "QQ-1234" in reply
    hidden = DEFAULT_SUMMARY_PROMPT.format(messages=get_buffer_string(shown[1:], format="xml"))
    assert "Task:" not in summarize([{"role": "user", "content": hidden}], seed=0)["content"]


# ----- (e) runs: the default suite at a 32k window, replayed without LangChain

@pytest.mark.parametrize("task_ids", [("work_queue-1", "plant_early_ask_late-1"),
                                      pytest.param((), id="default-suite", marks=pytest.mark.slow)])
def test_both_act_on_the_default_suite_at_32k_with_no_error_and_replay_without_langchain(task_ids, run_suite,
                                                                                         monkeypatch):
    """At a 32,000-token window each adapter acts (a summary, a clearing) with its defaults, no run ends `error`, the
    summaries are side calls of the `summary` profile, and every log replays with LangChain unimportable."""
    frame = run_suite("default", strategies=",".join(NAMES), window=32_000, task_ids=task_ids)
    assert not (frame["termination"] == "error").any(), frame["error"].tolist()
    by = frame.groupby("strategy")
    assert by["summaries"].sum()[SUMMARIZATION] > 0 and by["summarizer_requests"].sum()[SUMMARIZATION] > 0
    assert by["compactions"].sum()[CLEAR] > 0
    assert set(frame["libraries"].map(tuple)) == {(LANGCHAIN.label,)}
    for module in [m for m in sys.modules if m.split(".")[0] in ("langchain", "langchain_core", "langgraph")]:
        monkeypatch.delitem(sys.modules, module)
    for module in ("langchain", "langchain_core", "langgraph"):
        monkeypatch.setitem(sys.modules, module, None)  # any import of it now fails
    paths = sorted((frame.attrs["out"] / "events").glob("*.jsonl.gz"))
    assert paths and [p.name for p in paths if not replay_file(p).ok] == []
