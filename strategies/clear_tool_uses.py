"""clear_tool_uses (Anthropic context editing, `clear_tool_uses_20250919`), done by the harness.

When the input tokens pass `trigger` (the provider's count for the last request, an
estimate before the first), tool results are cleared oldest first, keeping the `keep`
most recent tool uses and any use of a tool in `exclude_tools`. With `clear_at_least`,
the edit applies only if it can reclaim that many tokens, and then stops once it has;
without it every eligible result is cleared. `clear_tool_inputs` also blanks the cleared
calls' arguments. Each edit is one `compaction` event with step "clear_tool_uses".
Defaults as in Anthropic's API: trigger 100,000 input tokens (0.5 x the run's input budget, so
100,000 at a 200k window: strategies.thresholds), keep 3, inputs kept.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from harness.core.config import option, require
from harness.core.tokens import count_message
from strategies import history, thresholds
from strategies.base import Strategy

if TYPE_CHECKING:
    from harness.conversation.context import RunContext

CLEARED_INPUT = "{}"


@dataclass
class ClearToolUsesConfig:
    trigger: int | None = option(help="clear once the last request's input tokens pass this (Anthropic's "
                                      "100,000 at a 200k window)", of_budget=0.5)
    keep: int = option(3, "most recent tool uses left intact")
    clear_at_least: int = option(0, "input tokens an edit must reclaim to apply, then it stops (0: no minimum, "
                                    "clear every eligible result)", tokens=True)
    exclude_tools: list[str] = option(help="tools whose results are never cleared", factory=list)
    clear_tool_inputs: bool = option(False, "also blank the cleared calls' arguments")

    def __post_init__(self) -> None:
        require(self.trigger is None or self.trigger >= 1, f"trigger must be a positive number of input tokens, got {self.trigger}")
        require(self.keep >= 0, f"keep must be 0 or more, got {self.keep}")
        require(self.clear_at_least >= 0, f"clear_at_least must be 0 or more, got {self.clear_at_least}")


class ClearToolUses(Strategy):
    name = "clear_tool_uses"
    summary = "past a token trigger, clear old tool results, keeping the last few"
    source = "Anthropic context editing (clear_tool_uses_20250919)"
    Config = ClearToolUsesConfig

    def on_run_start(self, ctx: "RunContext") -> None:
        self.limits = thresholds.resolved(self.config, ctx.budget())

    def input_tokens(self, ctx: "RunContext") -> int:
        reported = ctx.last_usage.input_tokens if ctx.last_usage is not None else None
        return reported if reported is not None else ctx.prompt_tokens_estimate()

    def before_request(self, ctx: "RunContext") -> None:
        config = self.limits
        measured = self.input_tokens(ctx)
        if measured <= config.trigger:
            return
        view = ctx.view
        answered = [p for p in history.tool_pairs(view) if p.result_id is not None]
        eligible = answered[: max(len(answered) - config.keep, 0)]
        ops: list[dict[str, Any]] = []
        ids: list[int] = []
        cleared_calls: dict[int, set[str]] = {}
        reclaimed = 0
        for pair in eligible:
            if config.clear_at_least and reclaimed >= config.clear_at_least:
                break
            message = view.message(pair.result_id)
            if pair.name in config.exclude_tools or history.is_placeholder(message):
                continue
            tokens = view.tokens(pair.result_id)
            cleared = history.placeholder(message, "cleared", tokens)
            ops.append(history.replace_op(pair.result_id, cleared))
            ids.append(pair.result_id)
            reclaimed += tokens - count_message(cleared)
            if config.clear_tool_inputs and pair.arguments != CLEARED_INPUT:
                cleared_calls.setdefault(pair.assistant_id, set()).add(pair.call_id)
        for assistant_id, call_ids in cleared_calls.items():
            original = view.message(assistant_id)
            blanked = blank_arguments(original, call_ids)
            ops.append(history.replace_op(assistant_id, blanked))
            ids.append(assistant_id)
            reclaimed += view.tokens(assistant_id) - count_message(blanked)
        if not ops or reclaimed < config.clear_at_least:
            return
        before = ctx.prompt_tokens_estimate()
        ctx.emit("compaction", step="clear_tool_uses", trigger="input_tokens", measured_input_tokens=measured,
                 tokens_before=before, tokens_after=before - reclaimed, reclaimed_tokens=reclaimed,
                 message_ids=ids, view_ops=ops)


def blank_arguments(message: dict[str, Any], call_ids: set[str]) -> dict[str, Any]:
    """The assistant message with the named calls' arguments cleared (ids and names kept)."""
    calls = []
    for call in message.get("tool_calls") or ():
        if call.get("id") in call_ids:
            call = {**call, "function": {**call.get("function", {}), "arguments": CLEARED_INPUT}}
        calls.append(call)
    return {**message, "tool_calls": calls}
