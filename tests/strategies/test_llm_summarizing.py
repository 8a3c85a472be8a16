"""OpenHands' LLMSummarizingCondenser as `llm_summarizing` (REFERENCES.md). Each test names its rule."""
from __future__ import annotations

import json

import pytest

from harness.core.errors import ConfigError
from harness.conversation.replay import replay_file
from reset_helpers import context, run_environment, success, tool_call
from strategies import StrategySpec, build_strategy
from strategies.summaries import SUMMARY_HEADER, SUMMARY_SECTIONS, SUMMARY_PROMPT
from tasks.chained_lookup import ChainedLookup, Params


def _strategy(**config):
    return build_strategy(StrategySpec("llm_summarizing", config))


def _exchanges(ctx, strategy, count):
    """`count` tool exchanges (assistant call + tool result) after the context's first two messages."""
    for n in range(count):
        call = tool_call(f"call_{n}", "read_file", {"path": f"f{n}"})
        success(ctx, strategy, {"role": "assistant", "content": f"Noted fact {n}.", "tool_calls": [call]}, 100)
        ctx.add_message({"role": "tool", "tool_call_id": f"call_{n}", "name": "read_file", "content": f"content {n}"},
                        origin="tool")


def _no_split(messages):
    """Every tool result in the view follows an assistant message in the view that made its call."""
    calls: set[str] = set()
    for message in messages:
        calls.update(c["id"] for c in message.get("tool_calls") or ())
        if message["role"] == "tool" and message["tool_call_id"] not in calls:
            return False
    return True


def test_defaults_are_openhands_max_size_240_keep_first_2_minimum_progress_0_1():
    """OpenHands: max_size=240, keep_first=2, max_tokens=None, minimum_progress=0.1, 5 retries, x0.8."""
    config = _strategy().config
    assert (config.max_size, config.keep_first, config.max_tokens, config.minimum_progress) == (240, 2, None, 0.1)
    assert (config.hard_context_reset_max_retries, config.hard_context_reset_context_scaling) == (5, 0.8)
    with pytest.raises(ConfigError, match="keep_first"):
        _strategy(max_size=10, keep_first=5)
    with pytest.raises(ConfigError, match="unknown key"):
        _strategy(keep_last=3)


def test_summary_prompt_asks_for_the_openhands_sections():
    """OpenHands: the summary prompt asks for USER_CONTEXT, TASK_TRACKING, ... VERSION_CONTROL_STATUS."""
    assert all(f"{name}:" in SUMMARY_PROMPT for name in SUMMARY_SECTIONS) and len(SUMMARY_SECTIONS) == 10


def test_over_max_size_it_keeps_the_head_summarizes_the_middle_and_keeps_a_tail():
    """OpenHands: len(view) > max_size triggers; keep_first head, summary at offset keep_first, a tail."""
    strategy, ctx = _strategy(max_size=12), context(max_input_tokens=100_000)
    _exchanges(ctx, strategy, 6)  # 2 + 12 messages
    head = ctx.view.ids[:2]
    strategy.before_request(ctx)
    event = next(ctx.log.of_type("condensation"))
    assert event["kind"] == "summary" and event["summary_offset"] == 2
    assert ctx.view.ids[:2] == head and ctx.view.ids[2] == event["summary_id"]
    assert ctx.view.message(event["summary_id"])["role"] == "user"
    assert ctx.view.message(event["summary_id"])["content"].startswith(SUMMARY_HEADER)
    assert len(ctx.view.ids) <= 12 // 2 + 1
    assert _no_split(ctx.view.to_messages())
    assert set(event["forgotten_ids"]).isdisjoint(ctx.view.ids)


@pytest.mark.parametrize("max_size", [10, 11, 12, 13, 14])
def test_never_splits_a_tool_call_from_its_result(max_size):
    """OpenHands: condensation never separates a tool call from its result (OpenHands #7512)."""
    strategy, ctx = _strategy(max_size=max_size, keep_first=3), context(max_input_tokens=100_000)
    _exchanges(ctx, strategy, 8)
    strategy.before_request(ctx)
    assert list(ctx.log.of_type("condensation"))
    assert _no_split(ctx.view.to_messages())


def test_token_limit_triggers_condensation():
    """OpenHands: tokens over max_tokens trigger condensation (default: the model's input limit)."""
    strategy, ctx = _strategy(max_tokens=300), context(max_input_tokens=100_000)
    _exchanges(ctx, strategy, 12)
    assert ctx.prompt_tokens_estimate() > 300
    strategy.before_request(ctx)
    assert next(ctx.log.of_type("condensation_request"))["reason"] == "tokens"
    assert next(ctx.log.of_type("condensation"))


def test_refuses_when_under_ten_percent_would_be_forgotten():
    """OpenHands: if under 10% would be forgotten it refuses (NoCondensationAvailableException)."""
    strategy, ctx = _strategy(max_size=10, minimum_progress=0.9), context(max_input_tokens=100_000)
    _exchanges(ctx, strategy, 6)  # 14 events, 10 forgettable < 0.9 x 14: refused; soft, so nothing else
    ids = list(ctx.view.ids)
    strategy.before_request(ctx)
    refused = next(ctx.log.of_type("condensation_refused"))
    assert "minimum progress" in refused["reason"] and not refused["hard"]
    assert ctx.view.ids == ids and not list(ctx.log.of_type("condensation"))


def test_manual_condense_request_is_honoured():
    """Seed: existing summarizing condensers keep their own manual-command behaviour (accepted)."""
    strategy, ctx = _strategy(max_size=16), context(max_input_tokens=100_000)
    _exchanges(ctx, strategy, 6)
    answer = strategy.request_condensation(ctx)
    assert (answer.accepted, answer.status) == (True, 202)
    strategy.before_request(ctx)
    request = next(ctx.log.of_type("condensation_request"))
    assert request["reason"] == "manual"
    assert next(ctx.log.of_type("condensation"))["request_id"] == request["id"]


def test_an_earlier_summary_is_folded_into_the_next_one():
    """OpenHands: the previous summary is among the forgotten events, so the new summary carries it."""
    strategy, ctx = _strategy(max_size=10), context(max_input_tokens=100_000)
    _exchanges(ctx, strategy, 5)
    strategy.before_request(ctx)
    _exchanges(ctx, strategy, 5)
    strategy.before_request(ctx)
    first, second = list(ctx.log.of_type("condensation"))
    assert first["summary_id"] in second["forgotten_ids"]
    assert "Noted fact 0." in ctx.view.message(second["summary_id"])["content"]


def test_end_to_end_on_chained_lookup_with_summarizer_counted_and_replay(tmp_path):
    """The summarizer's requests are counted in the totals and on their own; replay passes."""
    from harness.results.metrics import compute_metrics

    task = ChainedLookup(Params(hops=8, files=5, distractors=30, filler_lines=30), 101)
    _, _, events = run_environment(tmp_path, task, "llm_summarizing", {"max_size": 10}, task_id="chained_lookup-1",
                                   window=30_000)
    metrics = compute_metrics(events)
    assert metrics["summaries"] >= 1 and metrics["summarizer_requests"] >= 1
    assert metrics["input_tokens"] > metrics["summarizer_input_tokens"] > 0
    assert metrics["cost_usd"] > metrics["summarizer_cost_usd"] > 0
    assert replay_file(tmp_path / "events.jsonl").ok
    json.dumps(metrics)


# ----- OpenHands' events, previews and paths (openhands-sdk 1.58.2)
def _parallel(ctx, strategy, rounds, width=3):
    """`rounds` responses of `width` parallel calls, each followed by its results."""
    for r in range(rounds):
        calls = [tool_call(f"c{r}_{k}", "read_file", {"path": f"secret-arg-{r}-{k}"}) for k in range(width)]
        success(ctx, strategy, {"role": "assistant", "content": f"Batch {r}.", "tool_calls": calls}, 100)
        for k in range(width):
            ctx.add_message({"role": "tool", "tool_call_id": f"c{r}_{k}", "name": "read_file",
                             "content": f"result {r}.{k} " + "x" * 800}, origin="tool")


def test_max_size_counts_events_each_parallel_call_and_result_is_one():
    """OpenHands: max_size counts events; k parallel calls are k ActionEvents (event/llm_convertible/action.py,
    View.__len__). 2 + 2x(3 calls + 3 results) = 14 events > 10 in 8 messages (the old count: 8 <= 10)."""
    strategy, ctx = _strategy(max_size=10), context(max_input_tokens=100_000)
    _parallel(ctx, strategy, 2)
    strategy.before_request(ctx)
    event = next(ctx.log.of_type("condensation"))
    assert event["summary_offset"] == 2 and _no_split(ctx.view.to_messages())


def test_summarizer_sees_500_character_previews_and_actions_without_arguments():
    """OpenHands: each forgotten event as str(event): N_CHAR_PREVIEW=500 (event/base.py), ActionEvent.__str__
    shows thought and action type, not arguments; ObservationEvent.__str__ the tool name and 500 characters."""
    from strategies.summaries import event_preview, view_events
    strategy, ctx = _strategy(max_size=10), context(max_input_tokens=100_000)
    _parallel(ctx, strategy, 1)
    previews = [event_preview(ctx.view, e, 0) for e in view_events(ctx.view)[2:]]
    assert previews[0].startswith("ActionEvent (agent)\n  Thought: Batch 0.\n  Action: ClientAction_read_file")
    assert all("secret-arg" not in p for p in previews)
    assert previews[3].startswith("ObservationEvent (environment)\n  Tool: read_file\n  Result: result 0.0 ")
    assert previews[3].endswith("...") and len(previews[3].split("Result: ", 1)[1]) == 503


def test_one_summary_attempt_on_the_normal_path_and_a_failure_leaves_a_soft_view_unchanged():
    """OpenHands: _generate_condensation calls the summarizer once; a failure is NoCondensationAvailable, and
    a soft requirement returns the view unchanged (base.py RollingCondenser.condense). Old: 5 attempts."""
    profiles = {"main": {"model": "mock/agent"}, "summary": {"model": "mock/summarizer", "mock": {"window": 10}}}
    strategy, ctx = _strategy(max_size=10), context(profiles)
    _exchanges(ctx, strategy, 6)
    ids = list(ctx.view.ids)
    strategy.before_request(ctx)
    assert len([e for e in ctx.log.of_type("llm_call") if e["profile"] == "summary"]) == 1
    assert ctx.view.ids == ids and not list(ctx.log.of_type("condensation"))


def test_an_empty_summary_is_accepted_and_inserts_nothing(monkeypatch):
    """OpenHands: Condensation(summary=None) forgets the events and inserts no summary (event/condenser.py
    has_summary_metadata). Old: an empty summary was a failed attempt, retried."""
    from harness.models.llm import LLMResult
    from harness.models.usage import Usage
    strategy, ctx = _strategy(max_size=10), context(max_input_tokens=100_000)
    _exchanges(ctx, strategy, 6)
    monkeypatch.setattr(ctx, "call_llm", lambda *a, **k: LLMResult({"role": "assistant", "content": ""},
                                                                   Usage(), None, None, 0.0))
    strategy.before_request(ctx)
    event = next(ctx.log.of_type("condensation"))
    assert event["summary_id"] is None and event["attempts"] == 1
    assert set(event["forgotten_ids"]).isdisjoint(ctx.view.ids) and len(ctx.view.ids) < 14


def test_a_manual_request_halves_a_short_view():
    """OpenHands: Reason.REQUEST keeps len(view)//2 - keep_first - 1 tail events (_get_forgotten_events).
    Old: a short view was refused."""
    strategy, ctx = _strategy(), context(max_input_tokens=100_000)
    _exchanges(ctx, strategy, 4)  # 10 events: keep 2, naive end 10 - (5-2-1) = 8, a cut point: forget [2, 8)
    strategy.request_condensation(ctx)
    strategy.before_request(ctx)
    event = next(ctx.log.of_type("condensation"))
    assert event["kind"] == "summary" and len(event["forgotten_ids"]) == 6 and len(ctx.view.ids) == 5


def test_a_context_window_error_requests_a_rolling_condensation_with_head_and_tail():
    """OpenHands agent.py: LLMContextWindowExceedError -> CondensationRequest(); the next step condenses as a
    request (head and tail kept); hard_context_reset only when none is available. Old: an immediate hard reset."""
    import litellm
    strategy, ctx = _strategy(), context(max_input_tokens=100_000)
    _exchanges(ctx, strategy, 6)
    error = litellm.ContextWindowExceededError(message="prompt is too long", model="m", llm_provider="mock")
    assert strategy.on_context_window_error(ctx, error) is True
    assert not list(ctx.log.of_type("condensation"))
    head, tail = ctx.view.ids[:2], ctx.view.ids[-1]
    strategy.before_request(ctx)
    event = next(ctx.log.of_type("condensation"))
    assert event["kind"] == "summary" and ctx.view.ids[:2] == head and ctx.view.ids[-1] == tail
    assert next(ctx.log.of_type("condensation_request"))["reason"] == "context_window_error"


def test_hard_reset_only_as_fallback_when_a_hard_requirement_finds_no_condensation():
    """OpenHands base.py: HARD + NoCondensationAvailableException -> hard_context_reset(): everything after the
    system prompt forgotten, the summary right behind it."""
    strategy, ctx = _strategy(), context(max_input_tokens=100_000)
    _exchanges(ctx, strategy, 1)  # 4 events: a request keeps 4//2-2-1 < 0 tail events: no cut point
    strategy.request_condensation(ctx)
    system = ctx.view.ids[0]
    strategy.before_request(ctx)
    event = next(ctx.log.of_type("condensation"))
    assert event["kind"] == "hard_reset" and ctx.view.ids == [system, event["summary_id"]]


def test_an_overflow_right_after_a_hard_reset_requests_again_as_openhands_unless_told_to_stop():
    """OpenHands agent.py requests a condensation on every LLMContextWindowExceedError, hard reset or not
    (its condensation loops, #8630); `stop_after_failed_hard_reset` (ours, off by default) stops the run."""
    import litellm

    from strategies.summaries import RecoverableRunError
    error = litellm.ContextWindowExceededError(message="prompt is too long", model="m", llm_provider="mock")
    for stop in (False, True):
        strategy = _strategy(stop_after_failed_hard_reset=stop)
        ctx = context(max_input_tokens=100_000)
        _exchanges(ctx, strategy, 1)
        strategy.request_condensation(ctx)
        strategy.before_request(ctx)
        assert next(ctx.log.of_type("condensation"))["kind"] == "hard_reset"
        if stop:
            with pytest.raises(RecoverableRunError, match="blocked"):
                strategy.on_context_window_error(ctx, error)
        else:
            assert strategy.on_context_window_error(ctx, error) is True
            assert [e["reason"] for e in ctx.log.of_type("condensation_request")][-1] == "context_window_error"
