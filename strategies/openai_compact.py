"""openai.compact: the client compacts through OpenAI's standalone `POST /responses/compact`.

Before a main request, once the provider reported more input tokens than `compact_threshold` for the last one, the
client sends its whole context to `/responses/compact` on the main model and carries on from what comes back, "a list
of all user messages, followed by a single compaction item" (openai SDK types/responses/compacted_response.py:28-31):
the view becomes the system prompt (the client's instructions, which the window leaves out) and that window; the next
request sends it, and the provider reads the opaque item. The call is a side call, counted like a summary
(`summarizer_requests`, logged under the profile `main/compact`), billed by the pass's own usage (lines 34-37).

Every main request goes through the Responses API, which alone reads compaction items: the strategy asks for
`truncation: "disabled"`, the API's default (an input past the window is refused, never cut: openai SDK
types/responses/response_create_params.py:337-346), a parameter only the Responses API takes
(harness.models.responses_api).

When to compact is the client's choice (the guide leaves it to the caller). Ours: 0.75 x the run's input budget,
150,000 at a 200k window, the threshold of openai.compaction; at most one compaction per main request (a request
retried after an error does not compact twice); a window still over the threshold is compacted again at the next
request. A context too large for the compaction pass itself (a tool's output arrived after the last request) is
trimmed from its oldest history item and sent again, as Codex does with its own compaction (codex-rs
core/src/codex/compact.rs: on a context-window error it removes the oldest item and retries); ours: instructions and
user messages are never trimmed (the window keeps the user messages anyway), and a call leaves with its results.
Nothing left to trim: the strategy gives up (`strategy_failed`).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harness.core.errors import StrategyFailed
from harness.models.llm import is_context_window_error
from harness.models.provider_compaction import INSTRUCTION_ROLES, compaction_items
from strategies.adapters import apply_view
from strategies.openai_compaction import OpenAIThreshold

if TYPE_CHECKING:
    from harness.conversation.context import RunContext


class OpenAICompact(OpenAIThreshold):
    name = "openai.compact"
    summary = "the client calls OpenAI's /responses/compact past a token threshold and carries on from its window"
    source = "OpenAI compaction guide (POST /responses/compact); openai SDK 3.63 compacted_response.py"
    what = "/responses/compact"

    def on_run_start(self, ctx: "RunContext") -> None:
        super().on_run_start(ctx)
        self.compacted_at = -1  # ctx.requests when the last compaction was made

    def request_options(self, ctx: "RunContext") -> dict[str, Any]:
        return {"truncation": "disabled"}

    def before_request(self, ctx: "RunContext") -> None:
        reported = ctx.last_usage.input_tokens if ctx.last_usage is not None else None
        if reported is None or reported <= self.limits.compact_threshold or ctx.requests == self.compacted_at:
            return
        self.compacted_at = ctx.requests
        messages: list[Any] | None = ctx.view.to_messages()
        trimmed = 0
        while True:
            try:
                result = ctx.call_compact(messages, purpose="compact")
                break
            except Exception as exc:
                if not is_context_window_error(exc):
                    raise
                messages = _without_oldest(messages)
                if messages is None:
                    raise StrategyFailed("the context does not fit the compaction request even with every history "
                                         "item but the instructions and user messages trimmed") from exc
                trimmed += 1
        apply_view(ctx, self._wanted(ctx, result.window or []), "condensation", kind="summary", by="provider",
                   endpoint="/responses/compact", reported_input_tokens=reported, trimmed_items=trimmed,
                   item_ids=[item.get("id") for item in compaction_items(result.message)])

    @staticmethod
    def _wanted(ctx: "RunContext", window: list[dict[str, Any]]) -> list[tuple[int | None, Any]]:
        """The view the window makes: the instructions, then the window; a user message it kept is the logged one
        (its identity kept: the provider's cache and the agent see no change), the compaction item a new message."""
        view = ctx.view
        wanted: list[tuple[int | None, Any]] = [(i, None) for i in view.ids
                                                 if view.message(i).get("role") in INSTRUCTION_ROLES]
        users = [i for i in view.ids if view.message(i).get("role") == "user"]
        for message in window:
            match = next((i for i in users if view.message(i) == message), None)
            if match is not None:
                users = users[users.index(match) + 1:]
            wanted.append((match, None if match is not None else message))
        return wanted



def _without_oldest(messages: list[Any]) -> list[Any] | None:
    """The messages without their oldest history item (an assistant turn leaves with its tool results), or None
    when only instructions and user messages are left."""
    at = next((index for index, message in enumerate(messages)
               if message.get("role") not in (*INSTRUCTION_ROLES, "user")), None)
    if at is None:
        return None
    calls = {call.get("id") for call in messages[at].get("tool_calls") or ()}
    return [message for index, message in enumerate(messages)
            if index != at and not (message.get("role") == "tool" and message.get("tool_call_id") in calls)]
