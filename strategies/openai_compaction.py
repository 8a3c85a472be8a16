"""openai.compaction: OpenAI's server-side compaction, switched on in the request (Responses `context_management`).

The provider forgets, not the client: every main request carries `context_management: [{"type": "compaction",
"compact_threshold": N}]` (openai SDK types/responses/response_create_params.py:64,398-403), which sends it through the
Responses API (harness.models.responses_api). When a request's rendered input crosses N, the server compacts in the
same response: its output starts with an opaque `compaction` item, and the answer comes from the compacted context
(OpenAI's "Compaction" guide). The client appends the output as it is, item included, and sends the whole history
again; the guide lets a client drop what precedes the latest item, and the server reads past it anyway. So the view
never shrinks here: the provider's usage shows what the model saw.

Threshold: OpenAI documents no default (the field is optional, with none given; litellm's docstring shows 200,000 as
an example, types/llms/openai.py:1405). Ours: 0.75 x the run's input budget, 150,000 at a 200k window, Anthropic's
default trigger, so the two providers' compactions compare at one threshold; never below the API's minimum of 1,000
(litellm types/llms/openai.py:1362: an explicit smaller value is refused, a scaled one raised to it).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from harness.core.config import option, require
from harness.core.errors import ConfigError
from harness.models.cache_policy import COMPATIBLE, OPENAI, OPENAI_BREAKPOINTS, provider_family
from harness.models.provider_compaction import OPENAI_COMPACTION, OPENAI_MIN_THRESHOLD as MIN_THRESHOLD, compaction_items
from strategies import thresholds
from strategies.base import Strategy

if TYPE_CHECKING:
    from harness.conversation.context import RunContext
    from harness.models.llm import LLMProfile, LLMResult


@dataclass
class OpenAICompactionConfig:
    compact_threshold: int | None = option(help="compaction once a request's input passes this many tokens (ours: "
                                                "OpenAI documents no default; at least its minimum, 1,000)",
                                           of_budget=0.75, at_least=MIN_THRESHOLD)

    def __post_init__(self) -> None:
        require(self.compact_threshold is None or self.compact_threshold >= MIN_THRESHOLD,
                f"compact_threshold must be at least {MIN_THRESHOLD:,} tokens (OpenAI's minimum), "
                f"got {self.compact_threshold}")


OPENAI_FAMILIES = (OPENAI, OPENAI_BREAKPOINTS, COMPATIBLE)  # models litellm sends to OpenAI's API (or a compatible one)


class OpenAIThreshold(Strategy):
    """What OpenAI's two compactions share: the Responses API as the main model, `compact_threshold` scaled to the
    window and never below the API's minimum."""

    Config = OpenAICompactionConfig
    provider = "openai"
    what: ClassVar[str] = ""  # the compaction, as a refusal names it

    def check_main(self, profile: "LLMProfile", where: str) -> None:
        """Only the provider that made a compaction item can read it; the mock (in process, or behind serve-mock's
        Responses route as openai/<name>) serves it too."""
        if profile.is_mock or provider_family(profile.model, None, profile.api_base) in OPENAI_FAMILIES:
            return
        raise ConfigError(f"{where}: {self.what} is OpenAI's own compaction (the Responses API), and {profile.model} "
                          "is not served by OpenAI's API; use an openai/... model (serve-mock: --model openai/<name> "
                          "--api-base http://127.0.0.1:N/v1), or litellm.context_management for another provider")

    def on_run_start(self, ctx: "RunContext") -> None:
        self.limits = thresholds.resolved(self.config, ctx.budget())

class OpenAICompaction(OpenAIThreshold):
    name = "openai.compaction"
    summary = "OpenAI's server-side compaction: past a token threshold the Responses API compacts into an opaque item"
    source = "OpenAI compaction guide (context_management on POST /responses); openai SDK 3.63 types"
    what = "server-side compaction"

    def request_options(self, ctx: "RunContext") -> dict[str, Any]:
        return {"context_management": [{"type": OPENAI_COMPACTION, "compact_threshold": self.limits.compact_threshold}]}

    def after_response(self, ctx: "RunContext", result: "LLMResult") -> None:
        items = compaction_items(result.message)
        if items:
            ctx.emit("condensation", kind="summary", by="provider", request_id=ctx.last_request_id,
                     item_ids=[item.get("id") for item in items])

