"""anthropic_sdk.compaction: the anthropic SDK's tool-runner compaction (`BetaToolRunner.compact_before_next_turn`,
anthropic SDK 2.x lib/tools/_beta_runner.py), run by ctxbench's runner.

The SDK's tool runner (`client.beta.messages.tool_runner(...)`) compacts when the application asks it to: after
`compact_before_next_turn()`, once the current turn is done, its loop sends a compaction request on a fork of the
thread (`_take_compaction_thread`: the whole history and the thread's fields plus `compaction: {"type":
"summarize"}`, minus what `_without_compaction_incompatible_params` removes), and replaces the history with the
response, the signed `compaction` block alone (`_register_compaction_response`); the messages appended meanwhile
follow it. The server summarizes (beta `compact-2026-09-04`; the mock: harness.models.mock.compaction). The SDK up
to 0.125 had a client-side `compaction_control` instead (a summary the runner wrote itself, replacing the history),
deprecated for this server-side compaction and removed from the SDK since.

The SDK leaves when to compact to the application; here the strategy decides (ours): before a request whose input
(the view as the harness counts it) passes `threshold`, a fraction of the run's input budget (0.75, 150,000 at a 200k
window: the default trigger of Anthropic's own server-side compaction), at most once between two responses. Then:

1. the view becomes the runner's params as litellm sends it to Anthropic (anthropic/chat/transformation.py
   `transform_request`: system, messages, tools), with the beta, `thread=False` (the simulated provider holds no
   server-side threads) and `max_tokens` 8,192 (ours);
2. the SDK's own code compacts: the public `compact_before_next_turn(compaction)` schedules it, and its loop's
   compaction step, `_compact` (take the fork, send, register), runs to its end, as the loop runs it when a compaction
   is pending; the loop's next step, a model turn, is ctxbench's own request, so the loop itself is not run;
3. the runner's history becomes the view: the system prompt and the compaction message (a `condensation` event).

The compaction request is sent by the SDK's client, whose transport is ctxbench's (strategies.adapters.provider_wire):
a side call of the `summary` profile. The SDK sends it to the runner's own model (the thread's `model`); ctxbench's
`summary` profile is, by default, the main model itself for a real model, and the mock summarizer with the mock.
While the view holds the block, main requests name the beta in `anthropic-beta`, as the runner's requests do.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from harness.core.config import option, require
from harness.core.errors import ConfigError, StrategyFailed
from harness.models.cache_policy import ANTHROPIC, provider_family
from harness.models.llm import says_context_overflow
from harness.models.provider_compaction import ANTHROPIC_SUMMARIZE_BETA, blocks_alone, compaction_blocks
from strategies import thresholds
from strategies.adapters import ANTHROPIC_SDK, LibraryError, apply_view
from strategies.base import Strategy

if TYPE_CHECKING:
    from harness.conversation.context import RunContext
    from harness.models.llm import LLMProfile, LLMResult

SUMMARY_PROFILE = "summary"
MAX_TOKENS = 8_192  # ours: the compaction request's output bound (the summary), under the SDK's non-streaming limit


@dataclass
class AnthropicSDKCompactionConfig:
    threshold: int | None = option(help="compact before a request whose input passes this many tokens (ours: "
                                        "Anthropic's server-side default trigger, 150,000 at a 200k window)",
                                   of_budget=0.75)
    instructions: str | None = option(None, "replace the server's summarization prompt (the compaction config's "
                                            "`instructions`; empty or only whitespace counts as absent)")

    def __post_init__(self) -> None:
        require(self.threshold is None or self.threshold >= 1,
                f"threshold must be a positive number of input tokens, got {self.threshold}")


class AnthropicSDKCompaction(Strategy):
    name = "anthropic_sdk.compaction"
    summary = "the anthropic SDK's tool-runner compaction: past a threshold the server summarizes, the block replaces the history"
    source = "anthropic SDK lib/tools/_beta_runner.py compact_before_next_turn (the library's code; beta compact-2026-09-04)"
    Config = AnthropicSDKCompactionConfig
    library = ANTHROPIC_SDK

    def __init__(self, config: Any = None, where: str | None = None):
        super().__init__(config)
        self._where = where or f"strategy {self.name}"
        ANTHROPIC_SDK.load(self._where, "anthropic.lib.tools._beta_runner")
        self._client: Any = None
        self._ctx: "RunContext | None" = None
        self._compacted = False  # since the last response: compact at most once between two
        self._holds_block = False  # the view holds the compaction block (it stays until the next compaction)

    @classmethod
    def from_config(cls, data: Any, where: str | None = None) -> "Strategy":
        from harness.core.config import build_dataclass

        where = where or f"strategy {cls.name}"
        return cls(build_dataclass(cls.Config, data or {}, where), where)

    def profiles_needed(self) -> list[str]:
        return [SUMMARY_PROFILE]

    def check_main(self, profile: "LLMProfile", where: str) -> None:
        """The compaction block goes back to the main model: the mock, or a model on Anthropic's API."""
        if profile.is_mock or provider_family(profile.model, None, profile.api_base) == ANTHROPIC:
            return
        raise ConfigError(f"{where}: the SDK's compaction block is read only by Anthropic's API, and {profile.model} "
                          "is not served by it; use an anthropic/... model or the mock")

    def on_run_start(self, ctx: "RunContext") -> None:
        self.limits = thresholds.resolved(self.config, ctx.budget())
        self._compacted = self._holds_block = False

    def before_request(self, ctx: "RunContext") -> None:
        if self._compacted or ctx.prompt_tokens_estimate() <= self.limits.threshold:
            return
        self._compacted = True
        self._compact(ctx)

    def after_response(self, ctx: "RunContext", result: "LLMResult") -> None:
        self._compacted = False

    def request_options(self, ctx: "RunContext") -> dict[str, Any]:
        """The runner's requests name the beta (its `betas`); the block is sent back only with it."""
        if not self._holds_block:
            return {}
        return {"extra_headers": {"anthropic-beta": ANTHROPIC_SUMMARIZE_BETA}}

    # -- the SDK's compaction
    def _sdk_client(self, ctx: "RunContext") -> Any:
        if self._client is None or self._ctx is not ctx:
            import anthropic

            from strategies.adapters.provider_wire import api_key, sync_client  # here: they load litellm

            profile = ctx.profiles[SUMMARY_PROFILE]
            self._ctx = ctx
            self._client = anthropic.Anthropic(api_key=api_key(profile), base_url=profile.api_base,
                                               http_client=sync_client(ctx, SUMMARY_PROFILE, "compaction"))
        return self._client

    def runner_params(self, ctx: "RunContext") -> dict[str, Any]:
        """The view as the runner's params: litellm's rendering of it for Anthropic (what a main request sends)."""
        from litellm.llms.anthropic.chat.transformation import AnthropicConfig

        from strategies.adapters.provider_wire import model_name

        model = model_name(ctx.profiles[SUMMARY_PROFILE])
        anthropic = AnthropicConfig()
        optional = anthropic.map_openai_params({"tools": ctx.tools, "max_tokens": MAX_TOKENS} if ctx.tools else
                                               {"max_tokens": MAX_TOKENS}, {}, model, False)
        request = anthropic.transform_request(model, ctx.view.to_messages(), optional, {}, {})
        return {key: request[key] for key in ("model", "max_tokens", "system", "messages", "tools") if key in request}

    def _compact(self, ctx: "RunContext") -> None:
        """The SDK's compaction step; a compaction request past the window (the API's 400 "prompt is too long")
        is the strategy failing to fit it (`strategy_failed`), not a fault."""
        from harness.models.serve_mock.anthropic_wire import read_messages

        try:
            with ANTHROPIC_SDK.calling("compact_before_next_turn", ctx):
                runner = self._sdk_client(ctx).beta.messages.tool_runner(
                    **{"tools": [], **self.runner_params(ctx)}, betas=[ANTHROPIC_SUMMARIZE_BETA], thread=False)
                runner.compact_before_next_turn(
                    {"type": "summarize", **({"instructions": self.config.instructions}
                                             if self.config.instructions is not None else {})})
                for _ in runner._compact(runner._pending_compaction):  # the loop's compaction step, run to its end
                    pass
                history = list(runner._thread.messages)
        except LibraryError as exc:
            if exc.__cause__ is not None and says_context_overflow(str(exc.__cause__)):
                raise StrategyFailed(str(exc)) from exc
            raise
        compacted = [blocks_alone(message) for message in read_messages([_as_sent(message) for message in history])]
        if not any(compaction_blocks(message) for message in compacted):
            ctx.log.append("compaction_skipped", reason="the compaction produced no summary (the SDK keeps the "
                                                        "conversation)", library=ANTHROPIC_SDK.label)
            return
        self._holds_block = True
        view = ctx.view
        system = [cid for cid in view.ids if view.message(cid).get("role") == "system"]
        request = ctx.emit("condensation_request", reason="threshold", boundary=len(ctx.log) - 1,
                           library=ANTHROPIC_SDK.label)
        upcoming = len(ctx.log)
        kept = set(system)
        apply_view(ctx, [*((cid, None) for cid in system), *((None, message) for message in compacted)],
                   "condensation", kind="summary", library=ANTHROPIC_SDK.label, request_id=request["id"],
                   forgotten_ids=[cid for cid in view.ids if cid not in kept], summary_id=upcoming)


def _as_sent(message: Any) -> Any:
    """A history message as the SDK sends it: the response's blocks (the SDK's models) as their API fields."""
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, list):
        return message
    return {**message, "content": [block.to_dict(mode="json") if hasattr(block, "to_dict") else block
                                   for block in content]}
