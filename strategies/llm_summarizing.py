"""llm_summarizing: OpenHands' proactive LLMSummarizingCondenser.

Triggers, checked before each request: a pending manual condensation request, the view
holding more than `max_tokens` input tokens (default: the main profile's budget), or more
than `max_size` messages. It keeps the first `keep_first` messages and a recent tail, and
replaces the forgotten middle with a user-role summary written by its own LLM profile from
event previews (an earlier summary is among the forgotten messages, so it is folded in). A
tool call is never split from its result. When under `minimum_progress` of the view would
be forgotten it refuses (OpenHands' NoCondensationAvailableException), logged as a
`condensation_refused` event. A context-window error falls back to `hard_context_reset()`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from harness.config import require
from strategies.base import ManualCondensation, Strategy
from strategies.hard_summarize import HardCondenser, HardCondenserConfig
from strategies.summaries import SUMMARY_HEADER, HardResetConfig, RecoverableRunError, summarize

if TYPE_CHECKING:
    from harness.context import RunContext
    from harness.llm import LLMResult


@dataclass
class LLMSummarizingConfig(HardResetConfig):
    max_size: int = 240
    max_tokens: int | None = None
    keep_first: int = 2
    minimum_progress: float = 0.1
    llm_profile_ref: str = "summary"

    def __post_init__(self) -> None:
        super().__post_init__()
        require(self.max_size >= 4, f"max_size must be at least 4 messages, got {self.max_size}")
        require(self.max_tokens is None or self.max_tokens > 0, f"max_tokens must be positive, got {self.max_tokens}")
        require(0 <= self.keep_first < self.max_size // 2,
                f"keep_first must be 0 or more and below max_size // 2, got {self.keep_first}")
        require(0.0 <= self.minimum_progress < 1.0, f"minimum_progress must be in [0, 1), got {self.minimum_progress}")
        require(bool(self.llm_profile_ref), "llm_profile_ref must name an LLM profile")


def _is_tool_result(message: dict[str, Any]) -> bool:
    return message.get("role") == "tool"


class LLMSummarizing(Strategy):
    name = "llm_summarizing"
    Config = LLMSummarizingConfig

    def __init__(self, config: LLMSummarizingConfig | None = None):
        super().__init__(config)
        self.hard = HardCondenser(HardCondenserConfig(
            hard_context_reset_max_retries=self.config.hard_context_reset_max_retries,
            hard_context_reset_context_scaling=self.config.hard_context_reset_context_scaling,
            llm_profile_ref=self.config.llm_profile_ref))
        self.manual_request: dict[str, Any] | None = None

    def request_condensation(self, ctx: "RunContext") -> ManualCondensation:
        self.manual_request = ctx.emit("condensation_request", reason="manual", boundary=len(ctx.log) - 1)
        return ManualCondensation(True, 202, "condensation_requested", "the history is condensed before the next request")

    def _trigger(self, ctx: "RunContext") -> str | None:
        limit = self.config.max_tokens or ctx.budget()
        if self.manual_request is not None:
            return "manual"
        if limit and ctx.prompt_tokens_estimate() > limit:
            return "tokens"
        if len(ctx.view.ids) > self.config.max_size:
            return "size"
        return None

    def _tail_start(self, ctx: "RunContext", reason: str, head: int) -> int:
        """Where the kept tail begins: half of max_size, or (tokens) what fits in half the limit."""
        ids = ctx.view.ids
        if reason != "tokens":
            return max(head, len(ids) - max(0, self.config.max_size // 2 - head - 1))
        target = (self.config.max_tokens or ctx.budget() or 0) // 2
        used = sum(ctx.view.tokens(i) for i in ids[:head])
        start = len(ids)
        while start > head and used + ctx.view.tokens(ids[start - 1]) <= target:
            start -= 1
            used += ctx.view.tokens(ids[start])
        return start

    def before_request(self, ctx: "RunContext") -> None:
        reason = self._trigger(ctx)
        if reason is None:
            return
        request = self.manual_request or ctx.emit("condensation_request", reason=reason, boundary=len(ctx.log) - 1)
        self.manual_request = None
        ids = list(ctx.view.ids)
        head = min(self.config.keep_first, len(ids))
        while head < len(ids) and _is_tool_result(ctx.view.message(ids[head])):
            head += 1  # results of a call kept in the head stay with it
        tail = self._tail_start(ctx, reason, head)
        while head < tail < len(ids) and _is_tool_result(ctx.view.message(ids[tail])):
            tail -= 1  # the call that produced a kept result is kept too
        forgotten = ids[head:tail]
        if len(forgotten) < max(1, self.config.minimum_progress * len(ids)):
            ctx.log.append("condensation_refused", request_id=request["id"], reason="minimum_progress",
                           forgettable=len(forgotten), view_len=len(ids))
            return
        try:
            summary, attempts = summarize(ctx, self.config.llm_profile_ref, forgotten, self.config, "summary")
        except RecoverableRunError as exc:
            ctx.log.append("condensation_refused", request_id=request["id"], reason="summary_failed", error=str(exc))
            return
        message = ctx.add_message({"role": "user", "content": SUMMARY_HEADER + summary}, origin="strategy",
                                  placement="none", payload={"type": "CondensationSummaryEvent"})
        ctx.emit("condensation", kind="summary", request_id=request["id"], forgotten_ids=forgotten,
                 summary_id=message["id"], summary_offset=head, attempts=attempts,
                 view_ops=[{"op": "set", "ids": ids[:head] + [message["id"]] + ids[tail:]}])

    def after_response(self, ctx: "RunContext", result: "LLMResult") -> None:
        self.hard.after_response()

    def on_context_window_error(self, ctx: "RunContext", error: BaseException) -> bool:
        return self.hard.recover(ctx, error)
