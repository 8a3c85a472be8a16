"""anthropic.compaction: Anthropic's server-side compaction, switched on in the request (the `compact_20260112` edit).

The provider forgets, not the client: every main request carries `context_management.edits` with the edit (litellm
adds the `compact-2026-01-12` beta header for it, anthropic/chat/transformation.py); when a request's input passes
`trigger` the API summarizes the conversation in an extra, billed sampling step and answers from the summary, its
reply starting with a `compaction` block. The client keeps the conversation as Anthropic's docs tell it to: the reply,
compaction block included, is appended, and the whole history is sent again; the API drops everything before the
latest compaction block. So the view never shrinks here: the provider's usage shows what the model saw.

Defaults and limits are Anthropic's (docs "Compaction"; anthropic SDK beta_compact_20260112_edit_param.py): trigger
150,000 input tokens (0.75 x the run's input budget, so 150,000 at a 200k window: strategies.thresholds), never below
the API's minimum of 50,000 (an explicit smaller value is refused; a scaled one is raised to it, ours); instructions
replace the API's summarizing prompt; pause_after_compaction answers with the block alone.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from harness.core.config import option, require
from harness.core.errors import ConfigError
from harness.models.cache_policy import ANTHROPIC, provider_family
from harness.models.provider_compaction import ANTHROPIC_EDIT as EDIT, ANTHROPIC_MIN_TRIGGER as MIN_TRIGGER, summary_of
from harness.core.tokens import count_text
from strategies import thresholds
from strategies.base import Strategy

if TYPE_CHECKING:
    from harness.conversation.context import RunContext
    from harness.models.llm import LLMProfile, LLMResult


@dataclass
class AnthropicCompactionConfig:
    trigger: int | None = option(help="the API compacts once a request's input passes this many tokens (Anthropic's "
                                      "150,000 at a 200k window; never below its minimum, 50,000)", of_budget=0.75,
                                 at_least=MIN_TRIGGER)
    instructions: str | None = option(None, "replaces the API's own summarizing prompt")
    pause_after_compaction: bool = option(False, "the API answers with the compaction block alone; the next request "
                                                 "continues the turn")

    def __post_init__(self) -> None:
        require(self.trigger is None or self.trigger >= MIN_TRIGGER,
                f"trigger must be at least {MIN_TRIGGER:,} input tokens (the API refuses a smaller one: Anthropic's "
                f"compaction docs), got {self.trigger}")
        require(self.instructions is None or bool(self.instructions.strip()),
                "instructions must be a non-empty text, or null for the API's own prompt")


def require_anthropic(profile: "LLMProfile", where: str, what: str, alternatives: str) -> None:
    """Anthropic's API (or the mock, in process or behind serve-mock's Anthropic route) applies a context edit; litellm
    refuses `context_management` for other providers' chat APIs: another model is refused naming `alternatives`."""
    if profile.is_mock or provider_family(profile.model, None, profile.api_base) == ANTHROPIC:
        return
    raise ConfigError(f"{where}: {what}, and {profile.model} is not served by Anthropic's API; use an anthropic/... "
                      f"model (serve-mock: --model anthropic/<name> --api-base URL), or {alternatives} for another "
                      "provider")


class AnthropicCompaction(Strategy):
    name = "anthropic.compaction"
    summary = "Anthropic's server-side compaction: past a token trigger the API summarizes and drops the history"
    source = "Anthropic compaction docs (compact_20260112, beta compact-2026-01-12); anthropic SDK 2.x types"
    Config = AnthropicCompactionConfig
    provider = "anthropic"

    def check_main(self, profile: "LLMProfile", where: str) -> None:
        require_anthropic(profile, where, f"{EDIT} is Anthropic's own compaction", "litellm.context_management")

    def on_run_start(self, ctx: "RunContext") -> None:
        self.limits = thresholds.resolved(self.config, ctx.budget())

    def request_options(self, ctx: "RunContext") -> dict[str, Any]:
        edit: dict[str, Any] = {"type": EDIT, "trigger": {"type": "input_tokens", "value": self.limits.trigger}}
        if self.config.instructions is not None:
            edit["instructions"] = self.config.instructions
        if self.config.pause_after_compaction:
            edit["pause_after_compaction"] = True
        return {"context_management": {"edits": [edit]}}

    def after_response(self, ctx: "RunContext", result: "LLMResult") -> None:
        summary = summary_of(result.message)
        if summary is None:
            return
        ctx.emit("condensation", kind="summary", by="provider", request_id=ctx.last_request_id,
                 summary_tokens=count_text(summary), paused=result.paused)

