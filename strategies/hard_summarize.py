"""hard_summarize: seed 000's emergency hard condenser, alone or as agent_reset's fallback.

Only a recognized context-window error of the main provider selects it. It summarizes the
whole eligible view (offset zero, no head, no tail) from OpenHands' event previews with its own LLM
profile, with bounded retries (`strategies.summaries.hard_reset_summary`). Pending user input is kept
verbatim after the summary. After a hard reset no further automatic one happens until a
later main-model response succeeds; new input does not lift that block.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from harness.core.config import option, require
from harness.models.llm import is_context_window_error
from strategies.base import Strategy
from strategies.summaries import (EMERGENCY_NOTICE, SUMMARY_HEADER, HardResetConfig, RecoverableRunError,
                                  fixed_ids, hard_reset_summary, pending_user_ids, view_events)

if TYPE_CHECKING:
    from harness.conversation.context import RunContext
    from harness.models.llm import LLMResult

HARD_CONDENSER_KINDS = ("llm_summarizing",)


@dataclass
class HardCondenserConfig(HardResetConfig):
    """Seed 000's `hard_condenser` object."""

    condenser_kind: str = option("llm_summarizing", "the kind of hard condenser; seed 000 names one, "
                                                    "llm_summarizing")
    llm_profile_ref: str = option("summary", "LLM profile that writes the summary (`summary`: the mock "
                                             "summarizer with a mock agent, else the main model)")

    def __post_init__(self) -> None:
        super().__post_init__()
        require(self.condenser_kind in HARD_CONDENSER_KINDS,
                f"condenser_kind must be one of {', '.join(HARD_CONDENSER_KINDS)}, got {self.condenser_kind!r}")
        require(bool(self.llm_profile_ref), "llm_profile_ref must name an LLM profile")


class HardCondenser:
    """The emergency path and its loop block; owned by a strategy, which forwards two hooks."""

    def __init__(self, config: HardCondenserConfig):
        self.config = config
        self.blocked = False

    def after_response(self) -> None:
        """A main-model response succeeded: automatic hard resets are allowed again."""
        self.blocked = False

    def recover(self, ctx: "RunContext", error: BaseException) -> bool:
        """Summarize the eligible view after a context-window error; True = retry the request."""
        if not is_context_window_error(error):
            return False
        if self.blocked:
            ctx.log.append("hard_reset_blocked", reason="no main-model response has succeeded since the last hard reset")
            raise RecoverableRunError("context window exceeded again before any main-model response succeeded "
                                      "after a hard reset; another automatic hard reset is blocked; history kept")
        boundary = ctx.last_request_id
        fixed = fixed_ids(ctx)
        pending = pending_user_ids(ctx, boundary)
        eligible = [i for i in ctx.view.ids if i not in fixed and i not in pending]
        if not eligible:
            raise RecoverableRunError("context window exceeded with no history to condense: the fixed context "
                                      "(system prompt and tools) and pending input alone do not fit; history kept")
        request = ctx.emit("condensation_request", reason="context_window_error", boundary=boundary,
                           error=str(error)[:500])
        events = view_events(ctx.view, eligible)
        try:
            summary, attempts = hard_reset_summary(ctx, self.config.llm_profile_ref, events, self.config, "hard_reset")
        except RecoverableRunError as exc:
            ctx.log.append("hard_reset_failed", request_id=request["id"], error=str(exc), recoverable=True)
            raise
        notice = ctx.add_message({"role": "user", "content": EMERGENCY_NOTICE}, origin="environment",
                                 placement="none")
        summary_message = ctx.add_message({"role": "user", "content": SUMMARY_HEADER + summary}, origin="strategy",
                                          placement="none", payload={"type": "CondensationSummaryEvent"})
        ctx.emit("condensation", kind="hard_reset", request_id=request["id"], forgotten_ids=eligible,
                 notice_id=notice["id"], summary_id=summary_message["id"], pending_user_ids=pending,
                 attempts=attempts, view_ops=[{"op": "set", "ids": fixed + [notice["id"], summary_message["id"]]
                                               + pending}])
        self.blocked = True
        return True


class HardSummarize(Strategy):
    name = "hard_summarize"
    summary = "only after a context-window error: summarize the whole view from event previews, retrying smaller"
    source = "seed 000; OpenHands hard_context_reset()"
    Config = HardCondenserConfig

    def __init__(self, config: HardCondenserConfig | None = None):
        super().__init__(config)
        self.hard = HardCondenser(self.config)

    def profiles_needed(self) -> list[str]:
        return [self.config.llm_profile_ref]

    def after_response(self, ctx: "RunContext", result: "LLMResult") -> None:
        self.hard.after_response()

    def on_context_window_error(self, ctx: "RunContext", error: BaseException) -> bool:
        return self.hard.recover(ctx, error)
