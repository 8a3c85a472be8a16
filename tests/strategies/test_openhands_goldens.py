"""Our llm_summarizing against goldens from the real OpenHands SDK (tests/goldens/openhands, written by
tests/conformance/make_openhands_goldens.py): forgotten messages, what the summarizer receives (event
previews), where the summary lands, for each crafted history."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from harness.conversation.context import RunContext
from harness.conversation.events import EventLog
from harness.models.llm import LLMResult
from harness.models.usage import Usage
from harness.models.profiles import build_profiles
from strategies import StrategySpec, build_strategy
from strategies.summaries import RecoverableRunError, TRUNCATION_NOTICE

GOLDENS = sorted((Path(__file__).parents[1] / "goldens" / "openhands").glob("*.json"))
BLOCK = re.compile(r"<EVENT>\n(.*?)\n</EVENT>", re.DOTALL)
OPENHANDS_NOTICE = "<response clipped>"  # where maybe_truncate's notice begins (openhands/sdk/utils/truncate.py)
TOOLS = [{"type": "function", "function": {"name": "read_file", "parameters": {
    "type": "object", "properties": {"path": {"type": "string"}}}}}]


def _head(text: str) -> str:
    """A preview up to its truncation notice (the notice's text is ours, not OpenHands')."""
    return text.split(OPENHANDS_NOTICE, 1)[0].split(TRUNCATION_NOTICE[:10], 1)[0]


def ours(golden: dict, monkeypatch: pytest.MonkeyPatch) -> dict:
    """Our strategy on the golden's history, with the same stub summarizer."""
    ctx = RunContext(EventLog(), build_profiles({"main": {"model": "mock/agent"}, "summary": {"model": "mock/summarizer"}}),
                     run_id="golden", seed=0)
    monkeypatch.setattr(ctx, "tools", TOOLS, raising=False)
    ids = [ctx.add_message(m, origin={"system": "task", "user": "user", "tool": "tool"}.get(m["role"], "agent"))["id"]
           for m in golden["history"]]
    received: list[list[str]] = []
    mode = golden["summarizer"]

    def stub(profile, messages, purpose):
        received.append(BLOCK.findall(messages[-1]["content"]))
        if mode == "fail" or (mode.startswith("fail_") and len(received) <= {"fail_once": 1, "fail_twice": 2}[mode]):
            raise RuntimeError("summarizer failed")
        return LLMResult({"role": "assistant", "content": "" if mode == "empty" else "SUMMARY-TEXT"}, Usage(), None,
                         None, 0.0)

    monkeypatch.setattr(ctx, "call_llm", stub)
    strategy = build_strategy(StrategySpec("llm_summarizing", golden["config"]))
    if golden["request"]:
        strategy.request_condensation(ctx)
    out = {"received": received}
    try:
        strategy.before_request(ctx)
    except RecoverableRunError:
        out["outcome"] = "error"
        return out
    event = next(ctx.log.of_type("condensation"), None)
    if event is None:
        out["outcome"] = "unchanged"
    else:
        out.update(outcome="condensation", forgotten=sorted(ids.index(i) for i in event["forgotten_ids"]),
                   summary_offset=event["summary_offset"])
    return out


@pytest.mark.parametrize("path", GOLDENS, ids=[p.stem for p in GOLDENS])
def test_llm_summarizing_matches_the_openhands_golden(path, monkeypatch):
    """OpenHands SDK 1.58.2 LLMSummarizingCondenser.condense on the same history (golden file)."""
    golden = json.loads(path.read_text())
    got = ours(golden, monkeypatch)
    assert got["outcome"] == golden["outcome"]
    if golden["outcome"] == "condensation":
        assert (got["forgotten"], got["summary_offset"]) == (golden["forgotten"], golden["summary_offset"])
    assert [len(r) for r in got["received"]] == [len(r) for r in golden["received"]]
    for mine, theirs in zip(got["received"], golden["received"]):
        for a, b in zip(mine, theirs):  # equal, or (clipped around notices of other lengths) one head the other's prefix
            assert a == b or _head(a).startswith(_head(b)) or _head(b).startswith(_head(a))


def test_there_are_at_least_20_goldens():
    """At least 20 crafted histories."""
    assert len(GOLDENS) >= 20
