"""anthropic.context_editing: Anthropic's server-side context editing, switched on in the request (the
`clear_tool_uses_20250919` edit).

The provider forgets, not the client: every main request carries `context_management.edits` with the edit (litellm
adds the `context-management-2025-06-27` beta header for it, anthropic/chat/transformation.py
`_ensure_context_management_beta_header`); when the request's input passes `trigger`, the API replaces the oldest tool
results beyond the `keep` most recent tool uses with a placeholder before the model reads the request, and reports
what it cleared in the response's `context_management.applied_edits`. The client keeps its whole history, as the docs
tell it to ("you do not need to sync your client state with the edited version"): the view never shrinks here; each
applied edit is logged as a `compaction` event (step `clear_tool_uses`, by the provider) with the tokens it cleared.

Defaults are Anthropic's (context-editing docs, "Configuration options for tool result clearing"; anthropic SDK 2.17
beta_clear_tool_uses_20250919_edit_param.py): trigger 100,000 input tokens (0.5 x the run's input budget, so
100,000 at a 200k window: strategies.thresholds), or a number of tool uses; keep 3 tool uses; clear_at_least none;
no excluded tools; inputs kept. The rules the provider applies: harness.models.mock.context_editing.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from harness.core.config import option, require
from harness.models.provider_compaction import ANTHROPIC_CLEAR_EDIT as EDIT
from strategies import thresholds
from strategies.anthropic_compaction import require_anthropic
from strategies.base import Strategy

if TYPE_CHECKING:
    from harness.conversation.context import RunContext
    from harness.models.llm import LLMProfile, LLMResult

STEP = "clear_tool_uses"  # the `compaction` event's step, as the client-side clear_tool_uses logs its own


@dataclass
class AnthropicContextEditingConfig:
    trigger: int | None = option(help="the API clears once a request's input passes this many tokens (Anthropic's "
                                      "100,000 at a 200k window)", of_budget=0.5)
    trigger_tool_uses: int | None = option(None, "trigger on this many tool uses instead of input tokens "
                                                 "(the API's `tool_uses` trigger; null: input tokens)")
    keep: int = option(3, "most recent tool uses the API leaves intact")
    clear_at_least: int | None = option(None, "input tokens an edit must clear, else the API clears nothing (null: "
                                              "no minimum)", tokens=True)
    exclude_tools: list[str] = option(help="tools whose uses and results are never cleared", factory=list)
    clear_tool_inputs: bool | list[str] = option(False, "also clear the cleared uses' inputs: true for every tool, "
                                                        "or the tools named")

    def __post_init__(self) -> None:
        require(self.trigger is None or self.trigger >= 1,
                f"trigger must be a positive number of input tokens, got {self.trigger}")
        require(self.trigger_tool_uses is None or self.trigger_tool_uses >= 0,
                f"trigger_tool_uses must be 0 or more, got {self.trigger_tool_uses}")
        require(self.trigger is None or self.trigger_tool_uses is None,
                "trigger and trigger_tool_uses: give one (the edit has one trigger)")
        require(self.keep >= 0, f"keep must be 0 or more, got {self.keep}")
        require(self.clear_at_least is None or self.clear_at_least >= 0,
                f"clear_at_least must be 0 or more, got {self.clear_at_least}")
        require(all(name.strip() for name in self.exclude_tools), "exclude_tools: tool names must be non-empty")
        require(isinstance(self.clear_tool_inputs, bool) or all(name.strip() for name in self.clear_tool_inputs),
                "clear_tool_inputs: tool names must be non-empty")


class AnthropicContextEditing(Strategy):
    name = "anthropic.context_editing"
    summary = "Anthropic's server-side context editing: past a trigger the API clears old tool results"
    source = ("Anthropic context-editing docs (clear_tool_uses_20250919, beta context-management-2025-06-27); "
              "anthropic SDK 2.x types; litellm's polyfill where the docs are silent")
    Config = AnthropicContextEditingConfig
    provider = "anthropic"

    def check_main(self, profile: "LLMProfile", where: str) -> None:
        require_anthropic(profile, where, f"{EDIT} is Anthropic's own context editing",
                          "litellm.context_management (litellm's polyfill of the edit) or clear_tool_uses (the same "
                          "edit done in the view)")

    def threshold_values(self, budget: int | None) -> dict[str, int]:
        """A `tool_uses` trigger leaves no token threshold to scale."""
        return {} if self.config.trigger_tool_uses is not None else super().threshold_values(budget)

    def threshold_warnings(self, budget: int | None, label: str) -> list[str]:
        return [] if self.config.trigger_tool_uses is not None else super().threshold_warnings(budget, label)

    def on_run_start(self, ctx: "RunContext") -> None:
        self.limits = thresholds.resolved(self.config, ctx.budget())

    def request_options(self, ctx: "RunContext") -> dict[str, Any]:
        config = self.limits
        trigger = ({"type": "tool_uses", "value": config.trigger_tool_uses} if config.trigger_tool_uses is not None
                   else {"type": "input_tokens", "value": config.trigger})
        edit: dict[str, Any] = {"type": EDIT, "trigger": trigger, "keep": {"type": "tool_uses", "value": config.keep}}
        if config.clear_at_least is not None:
            edit["clear_at_least"] = {"type": "input_tokens", "value": config.clear_at_least}
        if config.exclude_tools:
            edit["exclude_tools"] = list(config.exclude_tools)
        if config.clear_tool_inputs:
            edit["clear_tool_inputs"] = config.clear_tool_inputs if isinstance(config.clear_tool_inputs, bool) \
                else list(config.clear_tool_inputs)
        return {"context_management": {"edits": [edit]}}

    def after_response(self, ctx: "RunContext", result: "LLMResult") -> None:
        """Each clearing the provider reports, logged: the view is unchanged (the client sends its whole history)."""
        for applied in (result.context_management or {}).get("applied_edits") or ():
            if applied.get("type") == EDIT:
                ctx.emit("compaction", step=STEP, by="provider", request_id=ctx.last_request_id,
                         cleared_tool_uses=applied.get("cleared_tool_uses"),
                         reclaimed_tokens=applied.get("cleared_input_tokens"), applied_edit=applied)
