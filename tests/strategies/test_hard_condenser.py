"""Seed 000's emergency hard condenser (`hard_summarize`, and agent_reset's `hard_condenser`), OpenHands'
hard_context_reset(), and the mock summarizer. Each test names the rule it checks."""
from __future__ import annotations

import litellm
import pytest

from harness.models.mock.summarizer import summarize as mock_summarize
from harness.conversation.replay import replay_file
from harness.core.tokens import message_text
from reset_helpers import context, run_environment, success, view_after
from strategies import StrategySpec, build_strategy
from strategies.summaries import (EMERGENCY_NOTICE, N_CHAR_PREVIEW, RecoverableRunError, event_preview, summary_request,
                                  truncate, view_events)
from tasks.chained_lookup import ChainedLookup, Params

SEED_NOTICE = ("The environment triggered emergency context condensation after the model provider returned a "
               "context-window error.")
OVERFLOW = litellm.ContextWindowExceededError(message="prompt is too long", model="m", llm_provider="mock")


def _big_task():
    return ChainedLookup(Params(hops=12, files=8, distractors=60, filler_lines=60), 103)


def _filled_context(**main):
    """A context with two answered exchanges and a pending user message after the last success."""
    strategy = build_strategy(StrategySpec("hard_summarize"))
    ctx = context(**main)
    success(ctx, strategy, {"role": "assistant", "content": "Start at record AB-1234 and follow the successor chain "
                                                            "through 2 records."}, 100)
    ctx.add_message({"role": "user", "content": "record AB-1234 | weight 10 | successor CD-5678"}, origin="user")
    success(ctx, strategy, {"role": "assistant", "content": "Noted."}, 200)
    pending = ctx.add_message({"role": "user", "content": "A new requirement, not yet answered."}, origin="user")
    return strategy, ctx, pending


def test_emergency_notice_begins_with_the_seed_text():
    """Seed: the emergency notice begins "The environment triggered emergency context condensation ..."."""
    assert EMERGENCY_NOTICE.startswith(SEED_NOTICE)


@pytest.mark.parametrize("error", [
    litellm.AuthenticationError("bad key", llm_provider="openai", model="m"),
    litellm.RateLimitError("slow down", llm_provider="openai", model="m"),
    litellm.APIConnectionError("connection reset", llm_provider="openai", model="m"),
    litellm.Timeout("timed out", model="m", llm_provider="openai"),
    litellm.BadRequestError("messages with role tool must be a response to a preceeding message with tool_calls",
                            model="m", llm_provider="openai"),
])
def test_only_recognized_context_window_errors_select_the_hard_condenser(error):
    """Seed: authentication failures, rate limits, transport errors and malformed message history do not
    select this path."""
    strategy, ctx, _ = _filled_context(max_input_tokens=10_000)
    assert strategy.on_context_window_error(ctx, error) is False
    assert all(e["profile"] == "main" for e in ctx.log.of_type("llm_call"))  # no summary call
    assert not list(ctx.log.of_type("condensation"))


def test_context_window_error_and_overflow_bad_request_select_it():
    """Seed: a recognized context-window error (ContextWindowExceededError, or a bad request saying the
    context is too long) selects the hard condenser."""
    for error in (OVERFLOW, litellm.BadRequestError("This model's maximum context length is 8192 tokens",
                                                    model="m", llm_provider="openai")):
        strategy, ctx, _ = _filled_context(max_input_tokens=10_000)
        assert strategy.on_context_window_error(ctx, error) is True
        assert next(ctx.log.of_type("condensation"))["kind"] == "hard_reset"


def test_whole_eligible_view_at_offset_zero_then_notice_summary_and_protected_pending_input():
    """Seed: it summarizes the whole eligible view at offset zero (no keep_first head, no tail); the history
    becomes the notice followed by the summary as a user-role message; pending user input is protected."""
    strategy, ctx, pending = _filled_context(max_input_tokens=10_000)
    eligible = [i for i in ctx.view.ids if i not in (ctx.view.ids[0], pending["id"])]
    assert strategy.on_context_window_error(ctx, OVERFLOW)
    reset = next(ctx.log.of_type("condensation"))
    assert reset["forgotten_ids"] == eligible and reset["pending_user_ids"] == [pending["id"]]
    view = ctx.view.to_messages()
    assert [m["role"] for m in view] == ["system", "user", "user", "user"]
    assert view[1]["content"] == EMERGENCY_NOTICE
    assert "AB-1234" in view[2]["content"] and view[3]["content"] == pending["message"]["content"]
    summary_call = [e for e in ctx.log.of_type("llm_call") if e["profile"] == "summary"]
    assert len(summary_call) == 1 and summary_call[0]["purpose"] == "hard_reset"


def test_after_a_hard_reset_no_further_one_until_a_later_main_response_succeeds():
    """Seed: another automatic hard reset is blocked until a later main-model response completes
    successfully; new input does not lift the block."""
    strategy, ctx, _ = _filled_context(max_input_tokens=10_000)
    assert strategy.on_context_window_error(ctx, OVERFLOW)
    ctx.add_message({"role": "user", "content": "new input"}, origin="user")
    with pytest.raises(RecoverableRunError, match="blocked"):
        strategy.on_context_window_error(ctx, OVERFLOW)
    assert len(list(ctx.log.of_type("hard_reset_blocked"))) == 1
    assert len([e for e in ctx.log.of_type("llm_call") if e["profile"] == "summary"]) == 1  # no paid retry
    success(ctx, strategy, {"role": "assistant", "content": "ok"}, 300)
    assert strategy.on_context_window_error(ctx, OVERFLOW)


def test_missing_summary_profile_stops_the_run_with_a_recoverable_error_and_keeps_history():
    """Seed: if the fallback is missing, the run stops with a recoverable error and retains its history."""
    strategy = build_strategy(StrategySpec("hard_summarize", {"llm_profile_ref": "absent"}))
    _, ctx, _ = _filled_context(max_input_tokens=10_000)
    ids = list(ctx.view.ids)
    with pytest.raises(RecoverableRunError, match="absent"):
        strategy.on_context_window_error(ctx, OVERFLOW)
    assert ctx.view.ids == ids and next(ctx.log.of_type("hard_reset_failed"))["recoverable"]


def test_oversized_fixed_context_cannot_be_fixed_by_dropping_history():
    """Seed: dropping conversation history cannot fix an oversized system prompt or tool set."""
    strategy = build_strategy(StrategySpec("hard_summarize"))
    ctx = context(max_input_tokens=10_000)
    ctx.log.append("llm_call", profile="main", ok=True, usage={"input_tokens": 5})  # the user message answered
    ctx.view.apply({"type": "x", "view_ops": [{"op": "set", "ids": ctx.view.ids[:1]}]})
    with pytest.raises(RecoverableRunError, match="fixed context"):
        strategy.on_context_window_error(ctx, OVERFLOW)
    assert not [e for e in ctx.log.of_type("llm_call") if e["profile"] == "summary"]


def test_hard_summarize_recovers_overflows_end_to_end_and_replays(tmp_path):
    """Seed: on a provider overflow the emergency path commits a hard_reset and the run continues."""
    termination, _, events = run_environment(tmp_path, _big_task(), "hard_summarize", window=30_000)
    assert termination in ("submitted", "max_requests")  # 500-character previews can lose what the task needs
    resets = [e for e in events if e["type"] == "condensation"]
    assert any(e["type"] == "llm_call" and e["profile"] == "main" and e["ok"] and e["id"] > resets[0]["id"]
               for e in events)  # the run continued after the reset
    assert resets and all(e["kind"] == "hard_reset" for e in resets)
    overflows = [e for e in events if e["type"] == "llm_call" and not e["ok"]]
    assert all("ContextWindowExceeded" in e["error_type"] for e in overflows)
    view = view_after(events, resets[0]["id"])
    assert view[1]["content"] == EMERGENCY_NOTICE and view[2]["role"] == "user"
    assert not any(m.get("name") == "condense" for m in view)  # no condense exchange on this path
    assert replay_file(tmp_path / "events.jsonl").ok


def test_five_attempts_with_previews_shortened_by_0_8_then_a_recoverable_strategy_failed_stop(tmp_path):
    """Seed / OpenHands hard_context_reset(): 5 attempts; after the first failure each preview is capped at the
    longest event's length x 0.8, and the cap shrinks by 0.8 again after each further failure. If every attempt
    fails the strategy gives up: the run ends strategy_failed (not error) and keeps its history."""
    termination, error, events = run_environment(
        tmp_path, _big_task(), "hard_summarize", window=30_000,
        extra={"summary": {"model": "mock/summarizer", "mock": {"window": 300}}})
    assert termination == "strategy_failed" and "RecoverableRunError" in error and "history kept" in error
    attempts = [e for e in events if e["type"] == "summary_attempt"]
    assert [a["attempt"] for a in attempts] == [1, 2, 3, 4, 5]
    request = next(e for e in events if e["type"] == "condensation_request")
    longest = _longest_preview(view_after(events, request["id"]))
    caps = [a["preview_cap"] for a in attempts]
    assert caps[0] is None and caps[1] == int(longest * 0.8)
    for previous, cap in zip(caps[1:], caps[2:]):
        assert cap == int(previous * 0.8)
    assert not any(e["type"] == "condensation" for e in events)
    assert any(e["type"] == "hard_reset_failed" and e["recoverable"] for e in events)


def test_retries_and_scaling_are_configurable_and_shorter_previews_can_succeed(tmp_path):
    """Seed: attempts and the scaling factor are configurable (hard_context_reset_max_retries / _scaling)."""
    termination, _, events = run_environment(
        tmp_path, _big_task(), "hard_summarize",
        {"hard_context_reset_max_retries": 8, "hard_context_reset_context_scaling": 0.5}, window=30_000,
        extra={"summary": {"model": "mock/summarizer", "mock": {"window": 1_000}}})
    attempts = [e for e in events if e["type"] == "summary_attempt"]
    first = next(e for e in events if e["type"] == "condensation")
    assert first["attempts"] > 1 and len(attempts) >= first["attempts"]
    caps = [a["preview_cap"] for a in attempts[: first["attempts"]]]
    assert all(cap == int(previous * 0.5) for previous, cap in zip(caps[1:], caps[2:]))


def test_agent_reset_falls_back_to_its_hard_condenser_in_the_seeds_json_shape(tmp_path):
    """Seed: the hard condenser is the fallback of agent_reset when the agent does not reset in time."""
    config = {"llm_profile_ref": "main",
              "condenser": {"condenser_kind": "agent_reset", "warning_thresholds": [0.75, 0.80, 0.85, 0.90]},
              "hard_condenser": {"condenser_kind": "llm_summarizing", "llm_profile_ref": "summary",
                                 "hard_context_reset_max_retries": 5, "hard_context_reset_context_scaling": 0.8}}
    termination, _, events = run_environment(tmp_path, _big_task(), "agent_reset", config, window=30_000,
                                             knobs={"reset_at_warning": None})
    kinds = [e["kind"] for e in events if e["type"] == "condensation"]
    assert kinds and set(kinds) == {"hard_reset"} and termination in ("submitted", "max_requests")


# ----- the mock summarizer
def _longest_preview(messages):
    """The longest OpenHands preview of a view's events (hard_context_reset's first cap, before x0.8)."""
    ctx = context()
    ids = [ctx.add_message(m, origin="agent")["id"] for m in messages]
    return max(len(event_preview(ctx.view, e, len(ctx.tools))) for e in view_events(ctx.view, ids[2:]))


def _previews(*messages, cap=None):
    """OpenHands-shaped previews of `messages` (strategies.summaries), each cut to `cap` characters."""
    ctx = context()
    ids = [ctx.add_message(m, origin="tool" if m["role"] == "tool" else "agent")["id"] for m in messages]
    return [truncate(event_preview(ctx.view, e, 0), cap) for e in view_events(ctx.view, ids)]


def test_mock_summarizer_keeps_only_what_its_previews_show():
    """DESIGN mock rule 4: facts cut from the previews are lost from the summary."""
    task = {"role": "user", "content": "Start at record AB-1234 and follow the successor chain through 3 records "
                                       "in total."}
    result = {"role": "tool", "name": "read_file", "content": "header\n" + "filler " * 100 +
              "\nrecord AB-1234 | weight 10 | successor CD-5678 | custodian Kai"}
    short = {**result, "content": "header\nrecord AB-1234 | weight 10 | successor CD-5678 | custodian Kai"}
    whole = mock_summarize(summary_request(_previews(task, short)), seed=0)["content"]
    cut = mock_summarize(summary_request(_previews(task, result)), seed=0)["content"]  # past N_CHAR_PREVIEW
    assert len(message_text(result)) > N_CHAR_PREVIEW
    assert "AB-1234 | weight 10" in whole and "AB-1234 | weight 10" not in cut
    assert "Start at record AB-1234" in cut


def test_mock_summarizer_without_a_task_keeps_what_the_agent_said():
    """DESIGN mock rule 4: without a visible task it keeps what the agent said and the shown lines naming what
    the agent was looking for; nothing it was not shown."""
    said = {"role": "assistant", "content": "Noted record AB-1234 | weight 10 | successor CD-5678. Looking for "
                                            "record CD-5678."}
    raw = {"role": "tool", "name": "read_file", "content": "record EF-1111 | weight 20 | successor GH-2222\n"
                                                           "record CD-5678 | weight 30 | successor JK-3333"}
    text = mock_summarize(summary_request(_previews(said, raw)), seed=0)["content"]
    assert "AB-1234 | weight 10" in text and "CD-5678 | weight 30" in text and "EF-1111" not in text
    padded = {**raw, "content": raw["content"] + "\n" + "padding " * 40}
    cut = mock_summarize(summary_request(_previews(said, padded, cap=150)), seed=0)["content"]
    assert "CD-5678 | weight 30" not in cut
