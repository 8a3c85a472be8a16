"""Golden files from the real OpenHands SDK: run with a Python >= 3.12 that has the `openhands` extra installed,
from the repository's root. Each crafted history (ctxbench messages) is converted to OpenHands' events by the adapter's
converter (strategies/adapters/openhands.py `_History`), condensed once by the real
LLMSummarizingCondenser (`condense`, with a condensation request where the case asks), and the outcome is
written as JSON: forgotten message ids, the event strings the summarizer received, the summary offset, the
number of summary calls. The summarizer is a stub that answers a fixed text, '' or fails."""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
GOLDENS = ROOT / "tests" / "goldens" / "openhands"
SUMMARY = "SUMMARY-TEXT"


def _call(call_id: str, name: str, args: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": args}}


def varied(words: int) -> str:
    """A text of distinct words (about two tokens each): repeated characters tokenize too compactly."""
    return " ".join(f"w{i}" for i in range(words))


def huge(history_: list[dict], words: int) -> list[dict]:
    """The history with every tool result made `words` distinct words long."""
    return [{**m, "content": m["content"] + " " + varied(words)} if m["role"] == "tool" else m for m in history_]


def history(rounds: int, width: int = 1, text: int = 40, result: int = 60, users: tuple[int, ...] = ()) -> list[dict]:
    """System prompt, a task, then `rounds` responses of `width` parallel calls each with their results."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are an agent. " * 3},
                                      {"role": "user", "content": "Task: follow the records. " + "t" * 30}]
    for r in range(rounds):
        if r in users:
            messages.append({"role": "user", "content": f"New input {r}."})
        calls = [_call(f"c{r}_{k}", "read_file", json.dumps({"path": f"arg-{r}-{k}"})) for k in range(width)]
        messages.append({"role": "assistant", "content": f"Step {r} " + "a" * text, "tool_calls": calls})
        messages.extend({"role": "tool", "tool_call_id": f"c{r}_{k}", "name": "read_file",
                         "content": f"result {r}.{k} " + "r" * result} for k in range(width))
    return messages


CASES: dict[str, dict[str, Any]] = {
    "size_serial": {"history": history(8), "config": {"max_size": 10}},
    "size_parallel_3": {"history": history(3, width=3), "config": {"max_size": 10}},
    "size_parallel_5": {"history": history(3, width=5), "config": {"max_size": 12, "keep_first": 3}},
    "size_keep_first_0": {"history": history(8), "config": {"max_size": 10, "keep_first": 0}},
    "size_keep_first_3": {"history": history(8), "config": {"max_size": 12, "keep_first": 3}},
    "size_long_results": {"history": history(8, result=1500, text=900), "config": {"max_size": 10}},
    "size_with_user_inputs": {"history": history(8, users=(2, 5)), "config": {"max_size": 10}},
    "size_bad_arguments": {"history": [*history(1), {"role": "assistant", "content": "", "tool_calls": [
        _call("bad", "read_file", "{not json")]}, {"role": "tool", "tool_call_id": "bad", "name": "read_file",
        "content": "error"}, *history(6)[2:]], "config": {"max_size": 10}},
    "size_under_minimum_progress": {"history": history(6), "config": {"max_size": 10, "minimum_progress": 0.9}},
    "manual_short": {"history": history(3), "config": {}, "request": True},
    "manual_even": {"history": history(4), "config": {}, "request": True},
    "manual_parallel": {"history": history(4, width=2), "config": {}, "request": True},
    "manual_tiny_hard_reset": {"history": history(1), "config": {}, "request": True},
    "context_window_error_request": {"history": history(10, width=2), "config": {}, "request": True},
    "context_window_error_long": {"history": history(12, result=2000), "config": {}, "request": True},
    "failing_summarizer_soft": {"history": history(8), "config": {"max_size": 10}, "summarizer": "fail"},
    "failing_summarizer_hard": {"history": history(5), "config": {}, "request": True, "summarizer": "fail_once"},
    "failing_summarizer_all": {"history": history(5), "config": {}, "request": True, "summarizer": "fail"},
    "empty_summary": {"history": history(8), "config": {"max_size": 10}, "summarizer": "empty"},
    "hard_reset_truncated": {"history": history(3, result=3000), "config": {"keep_first": 4, "max_size": 80},
                             "request": True, "summarizer": "fail_twice"},
    # token pressure: results of ~13k tokens each (under OpenHands' 50,000-character formatting cut), so where
    # the kept tail starts does not hang on how the two sides count (litellm's token_counter vs ctxbench's)
    "tokens_big_results": {"history": [*huge(history(3), 6_500), *history(6)[2:]],
                               "config": {"max_tokens": 30_000}, "tokens": True},
    "tokens_parallel_huge_results": {"history": [*huge(history(2, width=2), 9_000), *history(5, width=2)[2:]],
                                     "config": {"max_tokens": 40_000, "keep_first": 3}, "tokens": True},
    "size_and_request": {"history": history(8, width=2), "config": {"max_size": 16}, "request": True},
}


def run_case(name: str, case: dict[str, Any]) -> dict[str, Any]:
    """The real condenser on one case; what it forgot, what its summarizer received."""
    from strategies.adapters.openhands import _History, _load

    sdk = _load("goldens")
    condenser_module = sdk["condenser"]
    received: list[list[str]] = []
    mode = case.get("summarizer", "ok")
    history_ = _History(sdk)
    history_.set_tools([{"type": "function", "function": {"name": "read_file", "parameters": {
        "type": "object", "properties": {"path": {"type": "string"}}}}}])
    for index, message in enumerate(case["history"]):
        for event in history_.convert(index, message):
            history_.append(event, index)
    if case.get("request"):
        history_.append(sdk["event"].CondensationRequest(), None)

    class Stub(sdk["llm"].LLM):  # type: ignore[misc, valid-type]
        def generate(self, messages: Any, **_: Any) -> Any:  # the stub summarizer
            if mode == "fail" or (mode.startswith("fail_") and len(received) <= {"fail_once": 1, "fail_twice": 2}[mode]):
                raise RuntimeError("summarizer failed")
            return sdk["llm"].LLMResponse(message=sdk["llm"].Message(role="assistant", content=[
                sdk["llm"].TextContent(text="" if mode == "empty" else SUMMARY)]), metrics=_metrics(sdk),
                raw_response=sdk["litellm"].ModelResponse(id="stub"))

    original = condenser_module.LLMSummarizingCondenser._generate_condensation

    def recording(self: Any, forgotten_events: Any, summary_offset: int, max_event_str_length: Any = None) -> Any:
        from openhands.sdk.utils import maybe_truncate
        received.append([maybe_truncate(str(e), truncate_after=max_event_str_length) for e in forgotten_events])
        return original(self, forgotten_events, summary_offset, max_event_str_length)

    condenser_module.LLMSummarizingCondenser._generate_condensation = recording
    try:
        condenser = condenser_module.LLMSummarizingCondenser(llm=Stub(model="stub", usage_id="stub"), **case["config"])
        view = history_.view
        try:
            agent_llm = sdk["llm"].LLM(model="mock/agent", usage_id="agent") if case.get("tokens") else None
            result = condenser.condense(view, agent_llm=agent_llm)
        except Exception as exc:  # NoCondensationAvailable after a failed hard reset
            result = exc
    finally:
        condenser_module.LLMSummarizingCondenser._generate_condensation = original
    out: dict[str, Any] = {"name": name, "history": case["history"], "config": case["config"],
                           "request": bool(case.get("request")), "summarizer": mode, "received": received}
    if isinstance(result, sdk["event"].Condensation):
        out["forgotten"] = sorted({history_.message_of[e.id] for e in view.events if e.id in result.forgotten_event_ids})
        out["summary_offset"] = result.summary_offset
        out["summary"] = result.summary
        out["outcome"] = "condensation"
    else:
        out["outcome"] = "error" if isinstance(result, Exception) else "unchanged"
    return out


def _metrics(sdk: dict[str, Any]) -> Any:
    from openhands.sdk.llm.utils.metrics import MetricsSnapshot
    return MetricsSnapshot(model_name="stub", accumulated_cost=0.0, max_budget_per_task=None,
                           accumulated_token_usage=None)


def generate() -> dict[str, dict[str, Any]]:
    return {name: run_case(name, case) for name, case in CASES.items()}


def main() -> None:
    GOLDENS.mkdir(parents=True, exist_ok=True)
    for name, golden in generate().items():
        (GOLDENS / f"{name}.json").write_text(json.dumps(golden, indent=1, sort_keys=True) + "\n")
    print(f"{len(CASES)} goldens -> {GOLDENS}")


if __name__ == "__main__":
    main()
