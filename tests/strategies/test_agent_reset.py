"""Seed 000 (SmolPaws agent reset): each test names the rule of the seed it checks."""
from __future__ import annotations

import json

import pytest

from harness.conversation.events import read_events
from harness.core.errors import ConfigError
from harness.conversation.replay import replay_file
from reset_helpers import context, run_environment, success, tool_call, view_after
from strategies import StrategySpec, build_strategy
from strategies.agent_reset import (CONDENSE_SPEC, RECOVERY_TEXT, RESET_NOTICE, AgentReset, utf16_length)
from tasks.base import ToolCall
from tasks.chained_lookup import ChainedLookup, Params

SEED_CONFIG = {
    "llm_profile_ref": "main",
    "condenser": {"condenser_kind": "agent_reset", "warning_thresholds": [0.75, 0.80, 0.85, 0.90]},
    "hard_condenser": {"condenser_kind": "llm_summarizing", "llm_profile_ref": "summary",
                       "hard_context_reset_max_retries": 5, "hard_context_reset_context_scaling": 0.8},
}


def observation_call_id(events, reset):
    return events[reset["observation_id"]]["message"]["tool_call_id"]


def _condense(ctx, strategy, args, extra_calls=()):
    calls = [tool_call("call_c", "condense", args)] + list(extra_calls)
    success(ctx, strategy, {"role": "assistant", "content": "", "tool_calls": calls}, 100)
    return strategy.handle_tool_call(ctx, ToolCall.from_message(calls[0]))


# ----- the condense tool
def test_condense_tool_has_one_optional_argument_message_to_future_self():
    """Seed: the tool can carry a message to its future self; the message is optional."""
    params = CONDENSE_SPEC.parameters
    assert list(params["properties"]) == ["message_to_future_self"]
    assert not params.get("required")
    assert "only tool call" in CONDENSE_SPEC.description and "notes" in CONDENSE_SPEC.description


def test_message_limit_is_16384_utf16_code_units_non_bmp_counts_two():
    """Seed: message_to_future_self is limited to 16,384 UTF-16 code units."""
    assert utf16_length("\U0001F600") == 2 and utf16_length("é") == 1
    for text, accepted in [("a" * 16_384, True), ("a" * 16_385, False), ("\U0001F600" * 8_192, True),
                           ("\U0001F600" * 8_192 + "a", False)]:
        ctx, strategy = context(max_input_tokens=100_000), AgentReset()
        result = _condense(ctx, strategy, {"message_to_future_self": text})
        assert result.is_error is (not accepted), (len(text), result.content[:200])
        assert (strategy.request is not None) is accepted
        if not accepted:
            assert "16384" in result.content and "No reset happened" in result.content


def test_message_to_future_self_is_preserved_verbatim():
    """Seed: the message is preserved verbatim (in the CondenseAction and the tool result)."""
    message = "Read notes/release.md. Tests passed; next, review the diff.  \U0001F600\n  trailing "
    ctx, strategy = context(max_input_tokens=100_000), AgentReset()
    result = _condense(ctx, strategy, {"message_to_future_self": message})
    assert result.content.endswith(message)
    action = ctx.log.events[strategy.request["action_id"]]
    assert action["payload"] == {"type": "CondenseAction", "tool_call_id": "call_c", "message_to_future_self": message}
    assert result.payload["message_to_future_self"] == message


def test_condense_must_be_the_only_tool_call_of_its_response():
    """Seed: it must be the only tool call in that response, so a reset cannot split a batch."""
    ctx, strategy = context(max_input_tokens=100_000), AgentReset()
    result = _condense(ctx, strategy, {}, [tool_call("call_r", "read_file", {"path": "a"})])
    assert result.is_error and "only tool call" in result.content and "No reset happened" in result.content
    ids_before = list(ctx.view.ids)
    strategy.before_request(ctx)
    assert not list(ctx.log.of_type("condensation_request")) and not list(ctx.log.of_type("condensation"))
    assert ctx.view.ids == ids_before


def test_lone_surrogate_in_message_is_refused_as_a_tool_error_not_a_crash():
    """Seed: the message is "preserved verbatim and limited to 16,384 UTF-16 code units": a lone surrogate (valid
    JSON "\\ud800") has no UTF-16 encoding, so it can be neither measured nor kept; it is refused as a tool error
    with no reset. Old code: UnicodeEncodeError ended the run."""
    for text in ("\ud800", "notes at notes/a.md \udfff", "\U0001F600\ud83d"):
        call = {"id": "call_c", "type": "function",
                "function": {"name": "condense", "arguments": json.dumps({"message_to_future_self": text})}}
        ctx, strategy = context(max_input_tokens=100_000), AgentReset()
        success(ctx, strategy, {"role": "assistant", "content": "", "tool_calls": [call]}, 100)
        result = strategy.handle_tool_call(ctx, ToolCall.from_message(call))
        assert result.is_error and "lone surrogate" in result.content and "No reset happened" in result.content
        assert strategy.request is None and "payload" not in ctx.log.events[-1]
        result.content.encode("utf-8")  # the refusal itself is text


def test_explicit_null_message_is_the_optional_message_absent():
    """Seed: "The message is optional": an explicit null is the message absent (accepted, no message in the result)."""
    ctx, strategy = context(max_input_tokens=100_000), AgentReset()
    result = _condense(ctx, strategy, {"message_to_future_self": None})
    assert not result.is_error and result.content == RECOVERY_TEXT
    assert result.payload["message_to_future_self"] is None and strategy.request is not None
    assert ctx.log.events[strategy.request["action_id"]]["payload"]["message_to_future_self"] is None


def test_condense_refuses_malformed_arguments_without_reset():
    """Seed: one optional argument only; bad input gets a clear error and no reset."""
    for args in ({"message_to_future_self": 3}, {"notes": "x"}):
        ctx, strategy = context(max_input_tokens=100_000), AgentReset()
        result = _condense(ctx, strategy, args)
        assert result.is_error and "No reset happened" in result.content
        assert strategy.request is None


# ----- the view after a reset
class _InjectsWhileResetting(ChainedLookup):
    """Sends a genuine user message right after the request that produced the condense call, and one
    right before it."""

    def __init__(self):
        super().__init__(Params(hops=12, files=8, distractors=60, filler_lines=60), 103)
        self.notes_seen_at: int | None = None

    def user_messages_due(self, requests_done):
        if self.notes_seen_at is None and "notes/context-reset.md" in self.fs.listing("notes"):
            self.notes_seen_at = requests_done
            return ["Before-call message."]
        if self.notes_seen_at is not None and requests_done == self.notes_seen_at + 1:
            return ["While-resetting message."]
        return []


def test_view_after_reset_is_notice_call_result_then_pending_user_input(tmp_path):
    """Seed: after a reset the history is: user-role notice "The agent triggered context condensation.", the
    actual condense call (original arguments and id), its result with recovery instructions and the message,
    then genuine user messages that arrived after the request which produced the call. No summary, no prefix;
    a message arriving while resetting stays pending until a later request consumes it."""
    termination, _, events = run_environment(tmp_path, _InjectsWhileResetting(), "agent_reset", window=30_000)
    assert termination == "submitted"
    reset = next(e for e in events if e["type"] == "condensation")
    assert reset["kind"] == "agent_reset"
    view = view_after(events, reset["id"])
    action, observation = events[reset["action_id"]], events[reset["observation_id"]]
    assert [m["role"] for m in view] == ["system", "user", "assistant", "tool", "user"]
    assert view[0]["content"] == events[1]["message"]["content"]
    assert view[1]["content"] == RESET_NOTICE and events[reset["notice_id"]]["origin"] == "environment"
    assert view[2]["id"] == action["id"] and view[2]["tool_calls"] == action["message"]["tool_calls"]
    assert view[3]["tool_call_id"] == action["message"]["tool_calls"][0]["id"]
    text = view[3]["content"]
    for phrase in ("Take a deep breath", "Read your notes", "continue the user's work", "may not know"):
        assert phrase in text
    assert text.startswith(RECOVERY_TEXT) and "Read notes/context-reset.md" in text
    assert view[4]["content"] == "While-resetting message."
    assert all(m["content"] != "Before-call message." for m in view)  # seen by the call's request: forgotten
    # The next request consumes the pending message: it was sent in that view.
    request = next(e for e in events[reset["id"]:] if e["type"] == "llm_call")
    assert request["view_len"] == 5 and request["ok"]


def test_reset_keeps_identity_files_notes_and_usage_and_old_messages_stay_in_the_log(tmp_path):
    """Seed: the conversation keeps its identity, files, saved notes and usage accounting; old messages
    remain available in the event log."""
    environment = _InjectsWhileResetting()
    termination, _, events = run_environment(tmp_path, environment, "agent_reset", window=30_000)
    reset = next(e for e in events if e["type"] == "condensation")
    assert environment.fs.read("notes/context-reset.md").startswith("Task: Start at record")
    assert all(events[i]["type"] == "message" for i in reset["forgotten_ids"])
    from harness.results.metrics import compute_metrics

    metrics = compute_metrics(events)
    assert metrics["requests"] == sum(1 for e in events if e["type"] == "llm_call" and e["profile"] == "main")
    assert metrics["agent_resets"] >= 1 and metrics["summarizer_requests"] == 0  # no summarizer call


def test_condense_call_and_result_carry_typed_payloads_and_request_records_boundary(tmp_path):
    """Seed: CondenseAction/CondenseObservation payloads in ordinary envelopes; a CondensationRequest
    records intent and the input boundary; a Condensation commits the reset."""
    _, _, events = run_environment(tmp_path, _InjectsWhileResetting(), "agent_reset", window=30_000)
    request = next(e for e in events if e["type"] == "condensation_request")
    reset = next(e for e in events if e["type"] == "condensation")
    action = events[request["action_id"]]
    assert action["type"] == "message" and action["origin"] == "agent" and reset["action_id"] == action["id"]
    assert action["payload"]["type"] == "CondenseAction" and "action" not in request  # on the ActionEvent envelope
    assert action["payload"]["tool_call_id"] == request["tool_call_id"] == observation_call_id(events, reset)
    assert reset["request_id"] == request["id"]
    assert events[request["boundary"]]["type"] == "llm_call" and request["boundary"] < request["action_id"]
    observation = events[reset["observation_id"]]
    assert observation["type"] == "message" and observation["payload"]["type"] == "CondenseObservation"
    assert {e["type"] for e in events} >= {"condensation_request", "condensation"}
    assert not any(e["type"] in ("action", "observation") for e in events)


def test_replay_rebuilds_views_and_validates_references(tmp_path):
    """Seed: restore reconstructs the view from the stored records, validating their references, and
    never runs the tool again."""
    run_environment(tmp_path, _InjectsWhileResetting(), "agent_reset", window=30_000)
    path = tmp_path / "events.jsonl"
    assert replay_file(path).ok
    lines = path.read_text().splitlines()
    for number, line in enumerate(lines):
        event = json.loads(line)
        if event["type"] == "condensation":
            event["observation_id"] = event["notice_id"]
            lines[number] = json.dumps(event)
            break
    path.write_text("\n".join(lines) + "\n")
    report = replay_file(path)
    assert not report.ok and any("observation_id" in m and "not applied" in m for m in report.mismatches)


def test_replay_does_not_apply_a_condensation_with_a_bad_reference(tmp_path):
    """Seed: "The SDK validates their references before rebuilding the active view from them": a record whose
    references do not hold is reported and not applied, so the next sent view no longer matches the rebuilt one
    (old code applied it anyway and found the views equal). A condense call without its CondenseAction is refused
    the same way."""
    run_environment(tmp_path, _InjectsWhileResetting(), "agent_reset", window=30_000)
    path = tmp_path / "events.jsonl"
    events = read_events(path)
    reset = next(e for e in events if e["type"] == "condensation")
    for corrupt, expected in ((lambda: reset.update(observation_id=reset["notice_id"]), "observation_id"),
                              (lambda: events[reset["action_id"]].pop("payload"), "CondenseAction")):
        saved = json.dumps(events[reset["action_id"]]), json.dumps(reset)
        corrupt()
        path.write_text("".join(json.dumps(e) + "\n" for e in events))
        report = replay_file(path)
        assert any(expected in m and "not applied" in m for m in report.mismatches), report.mismatches
        next_request = next(e for e in events[reset["id"]:] if e["type"] == "llm_call")
        assert any(m.startswith(f"event {next_request['id']}: rebuilt view hash") for m in report.mismatches)
        events[reset["action_id"]], events[reset["id"]] = json.loads(saved[0]), json.loads(saved[1])
        reset = events[reset["id"]]


# ----- warnings
def _strategy_and_ctx(thresholds=None, **main):
    config = {"condenser": {"warning_thresholds": thresholds}} if thresholds else {}
    strategy = build_strategy(StrategySpec("agent_reset", config))
    return strategy, context(**main)


def _warnings(ctx):
    return [e["level"] for e in ctx.log.of_type("warning")]


def _reply(ctx, strategy, tokens):
    success(ctx, strategy, {"role": "assistant", "content": "working"}, tokens)


def test_warning_stages_default_to_75_80_85_90_percent_of_max_input_tokens():
    """Seed: default warning levels 75/80/85/90% of the main budget; maxInputTokens defines it."""
    strategy, ctx = _strategy_and_ctx(max_input_tokens=400_000)
    assert strategy.thresholds == [0.75, 0.80, 0.85, 0.90]
    for tokens, expected in [(299_999, []), (300_000, [0.75]), (320_000, [0.75, 0.8]), (340_000, [0.75, 0.8, 0.85]),
                             (360_000, [0.75, 0.8, 0.85, 0.9])]:
        _reply(ctx, strategy, tokens)
        strategy.before_request(ctx)
        assert _warnings(ctx) == expected, tokens


def test_budget_falls_back_to_the_models_input_limit():
    """Seed: without maxInputTokens the budget is the resolved model metadata (mock: its window)."""
    strategy, ctx = _strategy_and_ctx(mock={"window": 1000})
    _reply(ctx, strategy, 760)
    strategy.before_request(ctx)
    assert _warnings(ctx) == [0.75]


def test_a_jump_delivers_only_the_highest_stage_crossed_and_each_stage_once_per_cycle():
    """Seed: a jump from 74% to 87% produces one 85% warning; each stage once per reset cycle."""
    strategy, ctx = _strategy_and_ctx(max_input_tokens=1000)
    _reply(ctx, strategy, 740)
    strategy.before_request(ctx)
    _reply(ctx, strategy, 870)
    strategy.before_request(ctx)
    assert _warnings(ctx) == [0.85]
    for tokens in (870, 860, 880):
        _reply(ctx, strategy, tokens)
        strategy.before_request(ctx)
    assert _warnings(ctx) == [0.85]
    _reply(ctx, strategy, 900)
    strategy.before_request(ctx)
    assert _warnings(ctx) == [0.85, 0.9]


def test_measurement_is_the_last_successful_requests_input_tokens_cached_included():
    """Seed: the provider's input-token count of the last successful request (cached input included; not
    cumulative, not output, not other profiles)."""
    strategy, ctx = _strategy_and_ctx(max_input_tokens=1000)
    for _ in range(5):
        _reply(ctx, strategy, 500)  # cumulative 2,500 would be far over the budget
        strategy.before_request(ctx)
    assert _warnings(ctx) == []
    ctx.call_llm("summary", [{"role": "user", "content": "x" * 4000}], purpose="test")  # another profile
    strategy.before_request(ctx)
    assert _warnings(ctx) == []
    _reply(ctx, strategy, 800)
    strategy.before_request(ctx)
    warning = next(ctx.log.of_type("warning"))
    assert warning["measured"] == "usage" and warning["tokens"] == 800


def test_before_the_first_success_of_a_cycle_the_prompt_is_estimated():
    """Seed: before the first success in a reset cycle, an estimate from the assembled prompt and tools."""
    strategy, ctx = _strategy_and_ctx(max_input_tokens=1000)
    ctx.add_message({"role": "user", "content": "word " * 800}, origin="user")
    strategy.before_request(ctx)
    warning = next(ctx.log.of_type("warning"))
    assert warning["measured"] == "estimate" and warning["tokens"] == ctx.prompt_tokens_estimate() - \
        ctx.view.tokens(warning["message_id"])


def test_no_usage_or_no_budget_means_no_percentage_and_no_warning():
    """Seed: if it cannot establish usage or a budget, it does not invent a percentage."""
    strategy, ctx = _strategy_and_ctx(max_input_tokens=1000)
    _reply(ctx, strategy, None)
    ctx.add_message({"role": "user", "content": "word " * 2000}, origin="user")
    strategy.before_request(ctx)
    assert _warnings(ctx) == []
    strategy = build_strategy(StrategySpec("agent_reset"))
    ctx = context({"main": {"model": "openai/no-such-model-known-to-litellm"}})
    ctx.add_message({"role": "user", "content": "word " * 2000}, origin="user")
    strategy.before_request(ctx)
    assert ctx.budget() is None and _warnings(ctx) == []


def test_failed_request_leaves_warning_pending_and_success_consumes_it():
    """Seed: a failed model request leaves its warning pending; a successful request consumes it."""
    strategy, ctx = _strategy_and_ctx(max_input_tokens=1000)
    _reply(ctx, strategy, 800)
    strategy.before_request(ctx)
    message_id = next(ctx.log.of_type("warning"))["message_id"]
    # The request fails (no after_response): the warning stays in the view, not sent twice.
    strategy.before_request(ctx)
    assert _warnings(ctx) == [0.8] and ctx.view.ids.count(message_id) == 1
    assert strategy.pending is not None
    _reply(ctx, strategy, 810)
    assert strategy.pending is None and strategy.delivered == 1


def test_a_committed_reset_rearms_the_stages(tmp_path):
    """Seed: a committed reset rearms the stages (each stage is delivered again in the next cycle)."""
    _, _, events = run_environment(tmp_path, ChainedLookup(Params(hops=12, files=8, distractors=60,
                                                                  filler_lines=60), 103), "agent_reset", window=30_000)
    resets = [e["id"] for e in events if e["type"] == "condensation"]
    assert len(resets) >= 2
    levels_per_cycle = []
    for start, end in zip([0] + resets, resets):
        levels_per_cycle.append([e["level"] for e in events[start:end] if e["type"] == "warning"])
    assert all(levels for levels in levels_per_cycle)
    assert 0.9 in levels_per_cycle[0] and 0.9 in levels_per_cycle[2]


def test_warnings_never_trigger_a_reset_by_themselves():
    """Seed: warnings are advisory; neither a high estimate nor ignored warnings trigger a reset."""
    strategy, ctx = _strategy_and_ctx(max_input_tokens=1000)
    for tokens in (800, 900, 990, 999, 999):
        _reply(ctx, strategy, tokens)
        strategy.before_request(ctx)
    assert not list(ctx.log.of_type("condensation")) and not list(ctx.log.of_type("condensation_request"))


def test_empty_warning_thresholds_are_refused_at_config_time():
    """Seed: "The agent-reset condenser needs warning thresholds": an empty list is a config error."""
    with pytest.raises(ConfigError, match="needs warning thresholds"):
        build_strategy(StrategySpec("agent_reset", {"condenser": {"warning_thresholds": []}}))


@pytest.mark.parametrize("thresholds", [[0.8, 0.75], [0.75, 0.75], [0.0, 0.5], [0.5, 1.0], [1.2]])
def test_warning_thresholds_strictly_ascending_each_in_open_unit_interval(thresholds):
    """Seed (source): warning thresholds must be strictly ascending, each in (0, 1)."""
    with pytest.raises(ConfigError, match="warning_thresholds"):
        build_strategy(StrategySpec("agent_reset", {"condenser": {"warning_thresholds": thresholds}}))


# ----- configuration and manual condensation
def test_configuration_in_the_seeds_own_json_shape():
    """Seed: llm_profile_ref, condenser{condenser_kind, warning_thresholds}, hard_condenser{...}."""
    strategy = build_strategy(StrategySpec("agent_reset", SEED_CONFIG))
    assert strategy.hard is not None and strategy.hard.config.llm_profile_ref == "summary"
    assert build_strategy(StrategySpec("agent_reset", {**SEED_CONFIG, "hard_condenser": None})).hard is None
    assert build_strategy(StrategySpec("agent_reset")).hard is None  # omitted = disabled
    for bad in ({"condenser": {"condenser_kind": "summarizing"}}, {"llm_profile_ref": "other"},
                {"hard_condenser": {"condenser_kind": "llm_summarizing", "hard_context_reset_context_scaling": 1.5}},
                {"hard_condenser": {"llm_profile_ref": "summary", "surprise": 1}}):
        with pytest.raises(ConfigError):
            build_strategy(StrategySpec("agent_reset", bad))


def test_manual_condense_request_is_refused_with_agent_controlled_condensation():
    """Seed: for an agent-reset conversation the manual /condense route returns 409
    agent_controlled_condensation."""
    strategy, ctx = _strategy_and_ctx(max_input_tokens=1000)
    answer = strategy.request_condensation(ctx)
    assert (answer.accepted, answer.status, answer.code) == (False, 409, "agent_controlled_condensation")
    stacked = build_strategy(StrategySpec("agent_reset", {"with": ["none"]}))
    assert stacked.request_condensation(ctx).code == "agent_controlled_condensation"


def test_missing_hard_condenser_profile_is_a_config_error_before_any_model_call(tmp_path):
    """Seed: "The hard condenser needs a saved LLM profile of its own": a hard_condenser naming no defined profile
    fails validation before any model call (old code: a KeyError at the first overflow, after paid requests)."""
    from harness.run.runner import Cell, validate_cells
    from tasks.suites import load_tasks

    config = {**SEED_CONFIG, "hard_condenser": {**SEED_CONFIG["hard_condenser"], "llm_profile_ref": "nosuch"}}
    task = next(t for t in load_tasks("default") if t.task_id == "chained_lookup-3")
    for name, spec in (("agent_reset", config), ("hard_summarize", config["hard_condenser"])):
        cell = Cell(task=task, strategy=StrategySpec(name, spec), seed=0,
                    profiles={"main": {"model": "mock/agent"}, "summary": {"model": "mock/summarizer"}},
                    events_dir=str(tmp_path))
        with pytest.raises(ConfigError, match="nosuch"):
            validate_cells([cell])
        termination, error, events = run_environment(tmp_path, task.build(), name, spec, window=30_000)
        assert termination == "error" and "nosuch" in error
        assert not [e for e in events if e["type"] == "llm_call"]


def test_without_hard_condenser_an_overflow_stops_the_run_with_an_error(run_suite, suite_file):
    """Seed: omitting hard_condenser or setting it to null: after a provider overflow the run stops."""
    runs = run_suite(suite_file(task_ids={"chained_lookup-3"}), strategies="agent_reset", window=30_000, knobs={"reset_at_warning": None},
                     strategy_configs={"agent_reset": {**SEED_CONFIG, "hard_condenser": None}})
    big = runs[runs["task_id"] == "chained_lookup-3"].iloc[0]
    assert big["termination"] == "context_overflow" and big["hard_resets"] == 0 and big["error"]


# ----- the mock agent's reset behaviour
def test_mock_agent_writes_notes_waits_condenses_alone_and_rereads_notes(tmp_path):
    """Seed: it writes notes with its existing tools, waits for those writes to succeed, then calls condense;
    saved notes need to be read again after the reset."""
    _, _, events = run_environment(tmp_path, ChainedLookup(Params(hops=12, files=8, distractors=60,
                                                                  filler_lines=60), 103), "agent_reset", window=30_000)
    calls = [(e["id"], c["function"]["name"], json.loads(c["function"]["arguments"])) for e in events
             if e["type"] == "message" and e["origin"] == "agent" for c in e["message"].get("tool_calls", [])]
    condense_at = [i for i, (_, name, _) in enumerate(calls) if name == "condense"]
    assert condense_at
    for index in condense_at:
        assert calls[index - 1][1] == "write_file" and calls[index - 1][2]["path"] == "notes/context-reset.md"
        assert calls[index + 1][1] == "read_file" and calls[index + 1][2]["path"] == "notes/context-reset.md"
    first_warning = next(e for e in events if e["type"] == "warning")
    assert calls[condense_at[0] - 1][0] > first_warning["id"]


def test_mock_agent_acts_at_its_knob_warning_and_notes_completeness_drops_progress_lines(run_suite, suite_file):
    """DESIGN mock rule 3: at which warning of a reset cycle it acts (the k-th) and how
    complete its notes are are seeded knobs."""
    lookups = suite_file(family="chained_lookup")
    careful = run_suite(lookups, strategies="agent_reset", window=30_000)
    sloppy = run_suite(lookups, strategies="agent_reset", window=30_000,
                       knobs={"reset_at_warning": 2, "notes_completeness": 0.3})
    assert careful["success"].all(), careful[["task_id", "termination"]]
    assert sloppy["rereads"].sum() > careful["rereads"].sum()
    writes = 0
    for log in (sloppy.attrs["out"] / "events").glob("*.jsonl.gz"):
        events = read_events(log)
        for write in [e for e in events if e["type"] == "message" and e["origin"] == "agent"
                      and any(c["function"]["name"] == "write_file" for c in e["message"].get("tool_calls", []))]:
            cycle_start = max((e["id"] for e in events[: write["id"]] if e["type"] == "condensation"), default=-1)
            assert len([e for e in events[cycle_start + 1: write["id"]] if e["type"] == "warning"]) >= 2, log.name
            writes += 1
    assert writes, "the agent never acted: the test would prove little"



def test_profiles_accept_the_seeds_own_maxInputTokens_key():
    """Seed: 'Set maxInputTokens on the main LLM profile to choose the warning budget'."""
    from harness.core.errors import ConfigError
    from harness.models.profiles import build_profiles

    profiles = build_profiles({"main": {"model": "mock/agent", "maxInputTokens": 120_000}})
    assert profiles["main"].input_budget() == 120_000
    with pytest.raises(ConfigError, match="not both"):
        build_profiles({"main": {"model": "mock/agent", "maxInputTokens": 1, "max_input_tokens": 2}})
