"""observation_masking (JetBrains, "The Complexity Trap", arXiv 2508.21433): keep the last N tool results.

Before each request every tool result older than the `keep_last` most recent (10 in the
paper) is replaced by a placeholder; the calls, the agent's own reasoning and the user's
messages stay. No model call. Each request that masks a result records one `compaction`
event with step "mask".
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from harness.core.config import option, require
from harness.core.tokens import count_message
from strategies import history
from strategies.base import Strategy

if TYPE_CHECKING:
    from harness.conversation.context import RunContext


@dataclass
class ObservationMaskingConfig:
    keep_last: int = option(10, "most recent tool results kept as they are; older ones are masked (the paper's N)")

    def __post_init__(self) -> None:
        require(self.keep_last >= 0, f"keep_last must be 0 or more, got {self.keep_last}")


class ObservationMasking(Strategy):
    name = "observation_masking"
    summary = "keep the last N tool results, replace older ones with a placeholder"
    source = "JetBrains, The Complexity Trap (arXiv 2508.21433)"
    Config = ObservationMaskingConfig

    def __init__(self, config: ObservationMaskingConfig | None = None):
        super().__init__(config)
        self._forget()

    def on_run_start(self, ctx: "RunContext") -> None:
        self._forget()

    def _forget(self) -> None:
        self.masked: dict[int, dict[str, Any]] = {}  # message id -> its placeholder
        # The older results known masked: valid while the view has had no edit but this strategy's own.
        self.settled: tuple[list[int] | None, int, int] = (None, 0, 0)  # (view ids, view edits, how many)

    def before_request(self, ctx: "RunContext") -> None:
        view = ctx.view
        results = view.ids_of_role("tool")
        older = max(len(results) - self.config.keep_last, 0)
        ids_seen, edits_seen, settled = self.settled
        start = settled if ids_seen is view.ids and edits_seen == view.edits else 0
        ops, ids, reclaimed = [], [], 0
        for message_id in results[start:older]:
            message = view.message(message_id)
            if message is self.masked.get(message_id) or history.is_placeholder(message):
                continue
            tokens = view.tokens(message_id)
            masked = self.masked[message_id] = history.placeholder(message, "masked", tokens)
            ops.append(history.replace_op(message_id, masked))
            ids.append(message_id)
            reclaimed += tokens - count_message(masked)
        if ops:
            before = ctx.prompt_tokens_estimate()
            ctx.emit("compaction", step="mask", trigger="before_request", tokens_before=before,
                     tokens_after=before - reclaimed, reclaimed_tokens=reclaimed, message_ids=ids, view_ops=ops)
        self.settled = (view.ids, view.edits, older)  # every result before `older` is masked now
