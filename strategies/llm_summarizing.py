"""llm_summarizing: OpenHands' proactive LLMSummarizingCondenser (openhands/sdk/context/condenser/
llm_summarizing_condenser.py), counting and cutting OpenHands' events (strategies.summaries).

Reasons, checked before each request: an unhandled condensation request (a manual one, or the
one a context-window error emits, as the agent loop does) and tokens over the limit are hard;
more than `max_size` events is soft. The kept tail is the smallest of `len(view)//2 - keep_first
- 1` (request), `max_size//2 - keep_first - 1` (size) and what a cut at half the token limit
leaves (tokens); the forgotten range starts after `keep_first` events (never before the system
prompt) and both its ends move forward to the next point that splits no tool call from its result
and no batch. Under `minimum_progress` of the view it refuses (NoCondensationAvailableException).
The summary is one attempt from event previews; an empty summary inserts nothing. A hard reason
that finds no condensation falls back to `hard_context_reset()` (everything after the system prompt).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from harness.core.config import option, require
from harness.models.llm import is_context_window_error
from strategies.base import ManualCondensation, Strategy
from strategies.summaries import (SUMMARY_HEADER, Event, HardResetConfig, NoCondensationAvailable,
                                  RecoverableRunError, check_profile, cut_points, event_preview, hard_reset_summary,
                                  next_cut, summarize_once, ViewEvents)

if TYPE_CHECKING:
    from harness.conversation.context import RunContext
    from harness.models.llm import LLMResult


@dataclass
class LLMSummarizingConfig(HardResetConfig):
    max_size: int = option(240, "condense when the view holds more than this many OpenHands events")
    max_tokens: int | None = option(None, "condense when the view's tokens pass this (null: only the main "
                                          "model's input budget)", tokens=True)
    keep_first: int = option(2, "events at the start (after the system prompt) never forgotten")
    minimum_progress: float = option(0.1, "refuse a condensation that would forget less than this fraction "
                                          "of the view")
    llm_profile_ref: str = option("summary", "LLM profile that writes the summaries")
    # ours: stop the run at a context-window error that follows a hard reset before any main response
    # succeeded. Off by default, as OpenHands: its agent requests another condensation every time
    # (the condensation loops users report, #8630), bounded here by the run's request limit.
    stop_after_failed_hard_reset: bool = option(False, "ours: end the run when the context overflows again "
                                                       "right after a hard reset (OpenHands keeps looping)")

    def __post_init__(self) -> None:
        super().__post_init__()
        require(self.max_size > 0, f"max_size must be positive, got {self.max_size}")
        require(self.max_tokens is None or self.max_tokens > 0, f"max_tokens must be positive, got {self.max_tokens}")
        require(self.keep_first >= 0, f"keep_first must be 0 or more, got {self.keep_first}")
        require(self.max_size // 2 - self.keep_first - 1 > 0,  # the SDK's validate_keep_first_vs_max_size
                f"keep_first must be less than max_size // 2 to leave room for condensation, got {self.keep_first}")
        require(0.0 < self.minimum_progress < 1.0, f"minimum_progress must be in (0, 1), got {self.minimum_progress}")
        require(bool(self.llm_profile_ref), "llm_profile_ref must name an LLM profile")


class LLMSummarizing(Strategy):
    name = "llm_summarizing"
    summary = "proactive summarizing condenser: past max_size events or max_tokens, summarize the middle"
    source = "OpenHands SDK llm_summarizing_condenser.py"
    Config = LLMSummarizingConfig

    def __init__(self, config: LLMSummarizingConfig | None = None):
        super().__init__(config)
        self.request: dict[str, Any] | None = None  # the unhandled condensation request, if any
        self.blocked = False  # a hard reset was done and no main response has succeeded since
        self.events = ViewEvents()

    def request_condensation(self, ctx: "RunContext") -> ManualCondensation:
        self.request = self.request or ctx.emit("condensation_request", reason="manual", boundary=len(ctx.log) - 1)
        return ManualCondensation(True, 202, "condensation_requested", "the history is condensed before the next request")

    def _limit(self, ctx: "RunContext") -> int | None:
        """min(max_tokens, the agent's input limit), as `_effective_max_tokens`."""
        limits = [limit for limit in (self.config.max_tokens, ctx.budget()) if limit]
        return min(limits) if limits else None

    def _reasons(self, ctx: "RunContext", size: int) -> set[str]:
        reasons = set()
        if self.request is not None:
            reasons.add("manual")
        limit = self._limit(ctx)
        if limit and ctx.prompt_tokens_estimate() > limit:
            reasons.add("tokens")
        if size > self.config.max_size:
            reasons.add("size")
        return reasons

    def _token_tail(self, ctx: "RunContext", events: list[Event], limit: int) -> int:
        """Events kept from the tail so that at least total - limit//2 tokens go
        (`get_suffix_length_for_token_reduction`: the shortest prefix after keep_first above the reduction)."""
        reduction = ctx.prompt_tokens_estimate() - limit // 2
        body = events[self.config.keep_first:]
        if not body or reduction <= 0:
            return len(body)
        removed = 0
        for length, event in enumerate(body, 1):
            if event.call in (None, 0):  # a message's tokens count once, with its first event
                removed += ctx.view.tokens(event.message_id)
            if removed > reduction:
                return len(body) - length
        return 0

    def _forgotten(self, ctx: "RunContext", events: list[Event], reasons: set[str]) -> tuple[int, int]:
        """(start, end) event indices of the forgotten range; raises NoCondensationAvailable."""
        keep, tails = self.config.keep_first, []
        if "manual" in reasons:
            tails.append(len(events) // 2 - keep - 1)
        if "size" in reasons:
            tails.append(self.config.max_size // 2 - keep - 1)
        if "tokens" in reasons:
            tails.append(self._token_tail(ctx, events, self._limit(ctx) or 0))
        protected = keep
        system = next((i for i, e in enumerate(events) if e.kind == "SystemPromptEvent"), None)
        if system is not None:
            protected = max(protected, system + 1)
        allowed = cut_points(events)
        start, end = next_cut(allowed, protected), next_cut(allowed, len(events) - min(tails))
        if end <= start:
            raise NoCondensationAvailable("cannot condense 0 events")
        if end - start < len(events) * self.config.minimum_progress:
            raise NoCondensationAvailable("events forgotten below the minimum progress threshold")
        return start, end

    def before_request(self, ctx: "RunContext") -> None:
        events = self.events.of(ctx.view)
        reasons = self._reasons(ctx, len(events))
        if not reasons:
            return
        hard = bool(reasons & {"manual", "tokens"})
        request = self.request or ctx.emit("condensation_request", reason="+".join(sorted(reasons)),
                                           boundary=len(ctx.log) - 1)
        try:
            self._condense(ctx, events, reasons, request)
        except NoCondensationAvailable as exc:
            ctx.log.append("condensation_refused", request_id=request["id"], reason=str(exc), hard=hard,
                           view_len=len(events))
            if hard:
                self._hard_reset(ctx, events, request)
        self.request = None if hard or self.request is None else self.request

    def _condense(self, ctx: "RunContext", events: list[Event], reasons: set[str], request: dict[str, Any]) -> None:
        """One rolling condensation: one summary attempt over the forgotten events' previews."""
        start, end = self._forgotten(ctx, events, reasons)
        check_profile(ctx, self.config.llm_profile_ref)
        previews = [event_preview(ctx.view, event, len(ctx.tools)) for event in events[start:end]]
        try:
            summary = summarize_once(ctx, self.config.llm_profile_ref, previews, "summary")
        except Exception as exc:  # the SDK turns any failure of the summary call into NoCondensationAvailable
            raise NoCondensationAvailable(f"summarization LLM call failed: {type(exc).__name__}: {str(exc)[:200]}")
        self._commit(ctx, events, start, end, summary, request, "summary", attempts=1)

    def _hard_reset(self, ctx: "RunContext", events: list[Event], request: dict[str, Any]) -> None:
        """hard_context_reset(): summarize every event after the leading system prompt, with bounded retries."""
        system = next((i for i, e in enumerate(events) if e.kind == "SystemPromptEvent"), None)
        start = 0 if system is None else system + 1
        if start >= len(events):
            raise RecoverableRunError("a condensation is required but the view holds nothing after the system "
                                      "prompt to condense; history kept")
        summary, attempts = hard_reset_summary(ctx, self.config.llm_profile_ref, events[start:], self.config,
                                               "hard_reset")
        self._commit(ctx, events, start, len(events), summary, request, "hard_reset", attempts)
        self.blocked = True

    def _commit(self, ctx: "RunContext", events: list[Event], start: int, end: int, summary: str,
                request: dict[str, Any], kind: str, attempts: int) -> None:
        """Apply a Condensation: drop events[start:end]'s messages, put the summary (if any) at `start`."""
        forgotten = list(dict.fromkeys(e.message_id for e in events[start:end]))
        head = list(dict.fromkeys(e.message_id for e in events[:start]))
        tail = list(dict.fromkeys(e.message_id for e in events[end:]))
        inserted = []
        summary_id = None
        if summary:
            message = ctx.add_message({"role": "user", "content": SUMMARY_HEADER + summary}, origin="strategy",
                                      placement="none", payload={"type": "CondensationSummaryEvent"})
            summary_id = message["id"]
            inserted = [summary_id]
        ctx.emit("condensation", kind=kind, request_id=request["id"], forgotten_ids=forgotten, summary_id=summary_id,
                 summary_offset=start, attempts=attempts, view_ops=[{"op": "set", "ids": head + inserted + tail}])

    def after_response(self, ctx: "RunContext", result: "LLMResult") -> None:
        self.blocked = False

    def on_context_window_error(self, ctx: "RunContext", error: BaseException) -> bool:
        """As the agent loop: a CondensationRequest, and the next request condenses (a rolling condensation)."""
        if not is_context_window_error(error):
            return False
        if self.blocked and self.config.stop_after_failed_hard_reset:
            ctx.log.append("hard_reset_blocked", reason="no main-model response has succeeded since the last hard reset")
            raise RecoverableRunError("context window exceeded again before any main-model response succeeded "
                                      "after a hard reset; another automatic hard reset is blocked; history kept")
        self.request = self.request or ctx.emit("condensation_request", reason="context_window_error",
                                                boundary=len(ctx.log) - 1, error=str(error)[:500])
        return True
