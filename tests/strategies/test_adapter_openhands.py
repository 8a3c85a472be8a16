"""openhands.llm_summarizing and openhands.pipeline: the real openhands-sdk condensers inside ctxbench.

Sources: openhands/sdk/context/condenser/llm_summarizing_condenser.py (LLMSummarizingCondenser),
pipeline_condenser.py (PipelineCondenser), openhands/sdk/context/view/view.py (View.from_events),
openhands/sdk/agent/agent.py (step: condense before each LLM call; a context-window error -> a
CondensationRequest), openhands/sdk/event/condenser.py (Condensation, CondensationSummaryEvent).
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import litellm
import pytest

from harness.conversation.events import event_log_name, read_events
from harness.core.errors import ConfigError
from harness.conversation.replay import replay_file
from strategies import StrategySpec, build_strategy
from strategies.adapters import OPENHANDS_SDK, Library
from tests.adapter_helpers import requires
from tests.reset_helpers import context, tool_call

pytestmark = [pytest.mark.conformance, requires(OPENHANDS_SDK)]

SMALL = {"max_size": 12, "keep_first": 2}
STRATEGIES = "openhands.llm_summarizing,openhands.pipeline"
CONFIGS = {"openhands.llm_summarizing": SMALL,
           "openhands.pipeline": {"condensers": [{"kind": "no_op"}, {"kind": "llm_summarizing", **SMALL}]}}


def sdk():
    from strategies.adapters.openhands import _load
    return _load("test")


# ----- (a) end to end, and replay without the library

@pytest.fixture(scope="module")
def smoke_out(tmp_path_factory):
    from harness import api
    from harness.results.report import runs_frame

    out = tmp_path_factory.mktemp("oh") / "smoke"
    api.run("smoke", strategies=STRATEGIES + ",llm_summarizing", strategy_configs={**CONFIGS, "llm_summarizing": SMALL},
            seeds=(0,), profiles=api.mock_profiles(), out=out, workers=1)
    return out, runs_frame(out)


def test_smoke_suite_runs_both_adapters_end_to_end(smoke_out):
    """Each adapter runs the smoke suite (api.run) and its runs end as the tasks do, not `error`."""
    _, frame = smoke_out
    for name in STRATEGIES.split(","):
        rows = frame[frame.strategy == name]
        assert len(rows) == 7 and (rows.termination != "error").all(), rows[["task_id", "termination", "error"]]
        assert rows.success.mean() >= 0.8


def test_summaries_go_through_the_summary_profile(smoke_out):
    """LLMSummarizingCondenser._generate_condensation's llm.generate is a `summary` side call:
    summarizer_requests > 0, one llm_call of profile summary per condensation."""
    out, frame = smoke_out
    rows = frame[frame.strategy == "openhands.llm_summarizing"]
    assert rows.summarizer_requests.sum() > 0
    events = read_events(out / "events" / event_log_name("work_queue-smoke-0--openhands.llm_summarizing--s0"))
    summaries = [e for e in events if e["type"] == "llm_call" and e.get("profile") == "summary"]
    condensations = [e for e in events if e["type"] == "condensation"]
    assert condensations and len(summaries) == len(condensations)
    assert all(c["kind"] == "summary" and c["summary_id"] is not None for c in condensations)


def test_every_adapter_log_replays_without_importing_the_library(smoke_out, monkeypatch):
    """Replay folds the logged view ops: with openhands blocked from import, every log replays."""
    out, _ = smoke_out
    for name in ("openhands", "openhands.sdk"):
        monkeypatch.setitem(sys.modules, name, None)
    logs = sorted((out / "events").glob("*openhands*.jsonl.gz"))
    assert len(logs) == 14
    for path in logs:
        report = replay_file(path)
        assert report.ok, (path.name, report.mismatches)


# ----- (b) the view ctxbench sends equals the library's own answer

class FixedLLM:
    """A summarizer LLM for the direct library call: a subclass of the SDK's LLM answering one text."""

    @staticmethod
    def make(text: str):
        base = sdk()["llm"].LLM

        class Fixed(base):
            def _transport_call(self, *, messages, **_):
                return litellm.ModelResponse(choices=[{"index": 0, "finish_reason": "stop",
                                                       "message": {"role": "assistant", "content": text}}])
        return Fixed(model="test/fixed", usage_id="fixed", num_retries=0, input_cost_per_token=0.0,
                     output_cost_per_token=0.0)


def library_events(messages: list[dict]) -> list:
    """The test's own conversion (independent of the adapter's): one event per message, one
    ActionEvent per tool call of an assistant message (sharing llm_response_id)."""
    s = sdk()
    llm, event = s["llm"], s["event"]
    out, actions = [], {}
    for index, m in enumerate(messages):
        text = m.get("content") or ""
        if m["role"] == "system":
            out.append(event.SystemPromptEvent(id=f"e{index}", system_prompt=llm.TextContent(text=text), tools=[]))
        elif m["role"] == "tool":
            obs = s["client_tool"].ClientToolObservation(content=[llm.TextContent(text=text)])
            out.append(event.ObservationEvent(id=f"e{index}", observation=obs, action_id=actions[m["tool_call_id"]],
                                              tool_name=m["name"], tool_call_id=m["tool_call_id"]))
        elif m.get("tool_calls"):
            for j, call in enumerate(m["tool_calls"]):
                tc = llm.MessageToolCall(id=call["id"], name=call["function"]["name"],
                                         arguments=call["function"]["arguments"], origin="completion")
                actions[call["id"]] = f"e{index}.{j}"
                out.append(event.ActionEvent(id=f"e{index}.{j}", thought=[llm.TextContent(text=text)] if j == 0 and text
                                             else [], tool_name=tc.name, tool_call_id=tc.id, tool_call=tc,
                                             llm_response_id=f"r{index}", action=None))
        else:
            source = "agent" if m["role"] == "assistant" else "user"
            out.append(event.MessageEvent(id=f"e{index}", source=source,
                                          llm_message=llm.Message(role=m["role"], content=[llm.TextContent(text=text)])))
    return out


def history(kind: str) -> list[dict]:
    """Crafted histories: parallel tool calls, big outputs, several user turns."""
    messages = []
    for turn in range(6):
        if kind == "turns" or turn == 0:
            messages.append({"role": "user", "content": f"Request {turn}: look up item K{turn}."})
        if kind == "parallel":
            calls = [tool_call(f"c{turn}.{j}", "lookup", {"key": f"K{turn}{j}"}) for j in range(3)]
            messages.append({"role": "assistant", "content": f"Looking up three keys ({turn}).", "tool_calls": calls})
            messages += [{"role": "tool", "tool_call_id": c["id"], "name": "lookup", "content": f"value {c['id']}"}
                         for c in calls]
        else:
            call = tool_call(f"c{turn}", "read", {"path": f"f{turn}"})
            messages.append({"role": "assistant", "content": f"Reading f{turn}.", "tool_calls": [call]})
            body = ("x" * 30_000 + f" needle {turn}") if kind == "big" else f"contents of f{turn}"
            messages.append({"role": "tool", "tool_call_id": call["id"], "name": "read", "content": body})
            messages.append({"role": "assistant", "content": f"Done with f{turn}."})
    return messages


def run_adapter(messages: list[dict], config: dict, name: str = "openhands.llm_summarizing"):
    ctx = context()  # system prompt + "Do the task."
    first_user = ctx.view.ids[1]
    ctx.emit("drop", view_ops=[{"op": "drop", "ids": [first_user]}])
    strategy = build_strategy(StrategySpec(name, config))
    strategy.on_run_start(ctx)
    for m in messages:
        ctx.add_message(m, origin={"user": "user", "assistant": "agent", "tool": "tool"}[m["role"]])
    strategy.before_request(ctx)
    return ctx, strategy


@pytest.mark.parametrize("kind", ["parallel", "big", "turns"])
@pytest.mark.parametrize("config", [{"max_size": 10, "keep_first": 2}, {"max_size": 16, "keep_first": 4},
                                    {"max_size": 240, "max_tokens": 9_000}])
def test_view_equals_the_library_condensation(kind, config):
    """LLMSummarizingCondenser.condense on View.from_events of the same messages forgets the same
    events and inserts its summary (CondensationSummaryEvent, user role) at the same offset."""
    messages = [{"role": "system", "content": "You are an agent."}] + history(kind)
    ctx, _ = run_adapter(messages[1:], config)
    s = sdk()
    condenser = s["condenser"].LLMSummarizingCondenser(llm=FixedLLM.make("SUMMARY"), **config)
    agent_llm = s["llm"].LLM(model=ctx.main.model, usage_id="agent", max_input_tokens=ctx.budget())
    view = s["View"].from_events(library_events(messages))
    result = condenser.condense(view, agent_llm=agent_llm)
    if isinstance(result, s["event"].Condensation):
        expected_view = s["View"].from_events([*view.events, result])
    else:
        expected_view = result
    expected: list[str] = []
    for e in expected_view.events:
        label = "SUMMARY" if e.id.endswith("-summary") else messages[int(e.id[1:].split(".")[0])]["content"]
        if not expected or e.id.endswith("-summary") or "." not in e.id or e.id.endswith(".0"):
            expected.append(label)
    sent = [m["content"] for m in ctx.view.to_messages()]
    summaries = [i for i in ctx.view.ids if ctx.view.origins[i] == "strategy"]
    sent = ["SUMMARY" if i in summaries else m for i, m in zip(ctx.view.ids, sent)]
    assert sent == expected
    assert isinstance(result, s["event"].Condensation) == bool(summaries)


def test_context_window_error_requests_a_condensation_then_condenses():
    """agent.py step(): LLMContextWindowExceedError -> CondensationRequest (the condenser handles
    requests); the next step's condense sees view.unhandled_condensation_request and keeps
    len(view)//2 - keep_first - 1 tail events (Reason.REQUEST)."""
    messages = history("turns")
    ctx, strategy = run_adapter(messages, {"keep_first": 2})
    assert not any(e["type"] == "condensation" for e in ctx.log.events)
    overflow = litellm.ContextWindowExceededError("prompt is too long", model="mock/agent", llm_provider="mock")
    assert strategy.on_context_window_error(ctx, overflow) is True
    request = ctx.log.events[-1]
    assert request["type"] == "condensation_request" and request["reason"] == "context_window_error"
    assert strategy.history.view.unhandled_condensation_request
    strategy.before_request(ctx)
    condensation = ctx.log.events[-1]
    assert condensation["type"] == "condensation" and condensation["request_id"] == request["id"]
    assert condensation["kind"] == "summary" and not strategy.history.view.unhandled_condensation_request


def test_conversion_is_incremental():
    """Only new messages are converted: the events made before stay the same objects."""
    ctx, strategy = run_adapter(history("turns")[:3], {})
    first = list(strategy.history.events)
    ctx.add_message({"role": "user", "content": "one more"}, origin="user")
    strategy.before_request(ctx)
    assert strategy.history.events[:len(first)] == first
    assert all(a is b for a, b in zip(strategy.history.events, first))
    assert len(strategy.history.events) == len(first) + 1


# ----- (c) configuration

def test_defaults_are_the_librarys():
    """LLMSummarizingConfig's defaults are LLMSummarizingCondenser's own field defaults."""
    from strategies.adapters.openhands import LLMSummarizingConfig

    fields = sdk()["condenser"].LLMSummarizingCondenser.model_fields
    ours = LLMSummarizingConfig()
    for name, value in ours.library_fields().items():
        assert fields[name].default == value, name


@pytest.mark.parametrize("config, key", [({"max_size": 0}, "max_size"), ({"keep_first": 200}, "keep_first"),
                                         ({"minimum_progress": 1.5}, "minimum_progress"),
                                         ({"hard_context_reset_context_scaling": 0}, "hard_context_reset_context_scaling"),
                                         ({"max_sise": 3}, "max_sise")])
def test_bad_values_are_config_errors_naming_the_key(config, key):
    """The library's own validators (pydantic Field bounds, validate_keep_first_vs_max_size) refuse."""
    with pytest.raises(ConfigError, match=f"(?s){key}"):
        build_strategy(StrategySpec("openhands.llm_summarizing", config))


def test_pipeline_config_errors_name_the_entry():
    with pytest.raises(ConfigError, match=r"condensers\[1\].kind"):
        build_strategy(StrategySpec("openhands.pipeline", {"condensers": [{"kind": "no_op"}, {"kind": "masking"}]}))
    with pytest.raises(ConfigError, match=r"(?s)condensers\[0\].*keep_first"):
        build_strategy(StrategySpec("openhands.pipeline", {"condensers": [{"kind": "llm_summarizing",
                                                                            "keep_first": 500}]}))


def test_missing_library_is_a_config_error_naming_the_extra(monkeypatch):
    monkeypatch.setattr(Library, "version", lambda self: None)
    with pytest.raises(ConfigError, match=r"\[openhands\]"):
        build_strategy(StrategySpec("openhands.llm_summarizing", {}))


# ----- isolation and library errors

def test_import_leaves_ctxbench_settings_alone():
    """Importing the SDK sets litellm.modify_params and prints a banner: contained (fresh process)."""
    code = ("import logging, warnings, litellm; before = (litellm.modify_params, litellm.suppress_debug_info, "
            "list(logging.getLogger().handlers), logging.getLogger().level, list(warnings.filters)); "
            "from strategies.adapters.openhands import _load; _load('t'); "
            "after = (litellm.modify_params, litellm.suppress_debug_info, list(logging.getLogger().handlers), "
            "logging.getLogger().level, list(warnings.filters)); print(before == after)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          cwd=Path(__file__).parents[2])
    assert done.stdout.strip().splitlines()[-1] == "True", done.stdout + done.stderr
    assert "OpenHands" not in done.stdout


def test_litellm_settings_unchanged_after_an_adapter_run(run_suite):
    modify, quiet = litellm.modify_params, litellm.suppress_debug_info
    run_suite("smoke", strategies="openhands.llm_summarizing", strategy_configs={"openhands.llm_summarizing": SMALL})
    assert (litellm.modify_params, litellm.suppress_debug_info) == (modify, quiet)


def test_a_raising_library_ends_that_run_error_naming_it(run_suite, monkeypatch):
    """Library.calling: the condenser raising ends its runs `error` naming openhands-sdk; others go on."""
    def broken(self, view, agent_llm=None):
        raise RuntimeError("boom")

    monkeypatch.setattr(sdk()["condenser"].LLMSummarizingCondenser, "condense", broken)
    frame = run_suite("smoke", strategies="openhands.llm_summarizing,none")
    adapter, native = frame[frame.strategy == "openhands.llm_summarizing"], frame[frame.strategy == "none"]
    assert (adapter.termination == "error").all()
    assert adapter.error.str.contains("openhands-sdk 1.58").all() or adapter.error.str.contains("openhands-sdk").all()
    assert (native.termination != "error").all()


@pytest.mark.conformance
@requires(OPENHANDS_SDK)
def test_openhands_goldens_regenerate_identically_from_the_real_sdk():
    """The committed goldens (tests/goldens/openhands) are what the real SDK produces now,
    whatever ran before in the process: another task's `read_file` of another schema is registered first
    (the SDK keeps one ClientAction type per tool name per process; a run registers its own afresh)."""
    from openhands.sdk.tool import client_tool

    sys.path.insert(0, str(Path(__file__).parents[1] / "conformance"))
    import make_openhands_goldens

    client_tool._client_action_types.pop("read_file", None)  # whatever an earlier test registered
    client_tool._client_action_schemas.pop("read_file", None)
    client_tool.ClientTool.from_spec(client_tool.ClientToolSpec(
        name="read_file", description="another task's", parameters={"type": "object", "properties": {
            "other": {"type": "integer"}}}))

    for name, golden in make_openhands_goldens.generate().items():
        committed = json.loads((make_openhands_goldens.GOLDENS / f"{name}.json").read_text())
        assert json.loads(json.dumps(golden)) == committed, name
