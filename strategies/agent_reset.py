"""agent_reset (seed 000): the agent decides when to start over with a fresh context.

The environment warns it as the context fills (advisory warnings at stages of the input
budget); the agent saves notes with its own tools and calls `condense`. The condense
call's message event (the agent's action) carries the typed CondenseAction, its tool result
the typed CondenseObservation. The reset is recorded in two steps: the call's handling logs a
`condensation_request` (intent and the input boundary); before the next request a
`condensation` event (kind "agent_reset") commits the new view:

    fixed context (system prompt), the user-role notice "The agent triggered context
    condensation.", the agent's actual condense call, its tool result (recovery
    instructions and the optional message), then genuine user messages that arrived
    after the request which produced the call.

Warnings are delivered as user-role environment messages appended to the view (logged as
`message` events, origin "environment") plus a `warning` event with the stage. An optional
`hard_condenser` (strategies.hard_summarize) handles context-window errors.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from harness.core.config import option, require
from harness.models.profiles import MAIN_PROFILE
from strategies.base import ManualCondensation, Strategy
from strategies.hard_summarize import HardCondenser, HardCondenserConfig
from strategies.summaries import fixed_ids, pending_user_ids
from tasks.base import ToolCall, ToolResult, ToolSpec, require_args, tool_error

if TYPE_CHECKING:
    from harness.conversation.context import RunContext
    from harness.models.llm import LLMResult

DEFAULT_WARNING_THRESHOLDS = (0.75, 0.80, 0.85, 0.90)
MAX_MESSAGE_UTF16 = 16_384
CONDENSE = "condense"
RESET_NOTICE = "The agent triggered context condensation."
RECOVERY_TEXT = (
    "Context condensation complete: your earlier conversation history has been cleared from your context. "
    "Your files and saved notes are unchanged. Take a deep breath. Read your notes to recover where you were, "
    "then continue the user's work. The user may not know that a reset happened, so do not ask them to repeat "
    "anything; rely on your notes and files."
)
PAST_SELF_HEADER = "\n\nMessage from your past self:\n"
WARNING_TEXT = (
    "Context usage warning ({stage}% stage): your context holds about {tokens:,} tokens of your {budget:,}-token "
    "input budget. When you are ready, save what you need to continue (the task and your progress) to notes with "
    "your file tools, wait for the write to succeed, then call condense as the only tool call of its response to "
    "continue with a fresh context. You may also keep working; this is advisory."
)
CONDENSE_SPEC = ToolSpec(
    CONDENSE,
    "Clear your conversation history and continue with a fresh context. Before calling it, save everything you "
    "will need (the user's task, your progress, next steps) to notes with your file tools and wait for the write "
    "to succeed: this tool writes no notes. It must be the only tool call of its response. Optionally leave a "
    "message to your future self (for example which notes file to read).",
    {"type": "object", "properties": {"message_to_future_self": {
        "type": "string", "description": f"Optional, at most {MAX_MESSAGE_UTF16} UTF-16 code units, kept verbatim."}}},
)


def utf16_length(text: str) -> int:
    """Length in UTF-16 code units: a character outside the BMP counts two."""
    return len(text.encode("utf-16-le")) // 2


def message_problem(message: str) -> str | None:
    """Why a message_to_future_self cannot be kept verbatim, or None.

    A lone surrogate (valid JSON: "\\ud800") is no text: it has no UTF-16 or UTF-8 encoding,
    so it can be neither measured in UTF-16 code units nor preserved verbatim."""
    try:
        length = utf16_length(message)
    except UnicodeEncodeError as exc:
        return (f"condense: message_to_future_self has a lone surrogate (U+{ord(message[exc.start]):04X} at index "
                f"{exc.start}), which is not text. No reset happened. Remove it and call again.")
    if length > MAX_MESSAGE_UTF16:
        return (f"condense: message_to_future_self is {length} UTF-16 code units; the limit is {MAX_MESSAGE_UTF16}. "
                "No reset happened. Shorten it and call again.")
    return None


def parse_condense(call: ToolCall) -> tuple[str | None, ToolResult | None]:
    """(message, refusal) of a condense call. The message is optional: an explicit null is the
    message absent, as an omitted key is."""
    if call.args is not None and call.args.get("message_to_future_self", "") is None:
        call = replace(call, args={k: v for k, v in call.args.items() if k != "message_to_future_self"})
    problem = require_args(call, CONDENSE_SPEC)
    if problem is not None:
        return None, ToolResult(problem.content + ". No reset happened.", is_error=True)
    message = (call.args or {}).get("message_to_future_self")
    refusal = message_problem(message) if message is not None else None
    return (None, tool_error(refusal)) if refusal else (message, None)


@dataclass
class AgentResetCondenserConfig:
    """Seed 000's `condenser` object."""

    condenser_kind: str = option("agent_reset", "must be agent_reset (seed 000's condenser object names its kind)")
    warning_thresholds: list[float] = option(help="fractions of the input budget at which the agent is warned, "
                                                  "strictly ascending in (0, 1)",
                                             factory=lambda: list(DEFAULT_WARNING_THRESHOLDS))

    def __post_init__(self) -> None:
        require(self.condenser_kind == "agent_reset",
                f"condenser_kind must be 'agent_reset', got {self.condenser_kind!r}")
        require(bool(self.warning_thresholds), "The agent-reset condenser needs warning thresholds: "
                "warning_thresholds must not be empty")
        for index, value in enumerate(self.warning_thresholds):
            require(0.0 < value < 1.0, f"warning_thresholds[{index}] must be in (0, 1), got {value}")
        for index in range(1, len(self.warning_thresholds)):
            require(self.warning_thresholds[index] > self.warning_thresholds[index - 1],
                    f"warning_thresholds must be strictly ascending, got {self.warning_thresholds}")


@dataclass
class AgentResetConfig:
    """Seed 000's agent settings: the main profile, the condenser, the optional hard condenser."""

    llm_profile_ref: str = option(MAIN_PROFILE, "the profile the agent runs on: the run's main profile")
    condenser: AgentResetCondenserConfig = option(help="the warnings that prompt the agent to save notes and "
                                                       "condense", factory=AgentResetCondenserConfig)
    # None first: an explicit null must stay null (omitted or null disables emergency recovery).
    hard_condenser: None | HardCondenserConfig = option(None, "emergency summary after a context-window error "
                                                              "(hard_summarize's keys); null: the run ends on overflow")

    def __post_init__(self) -> None:
        require(self.llm_profile_ref == MAIN_PROFILE,
                f"llm_profile_ref must name the run's main profile {MAIN_PROFILE!r}, got {self.llm_profile_ref!r}")


class AgentReset(Strategy):
    name = "agent_reset"
    summary = "warnings as the context fills; the agent saves notes and calls condense to start afresh"
    source = "seed 000"
    Config = AgentResetConfig

    def __init__(self, config: AgentResetConfig | None = None):
        super().__init__(config)
        self.thresholds = list(self.config.condenser.warning_thresholds)
        self.hard = HardCondenser(self.config.hard_condenser) if self.config.hard_condenser else None
        self.request: dict[str, Any] | None = None  # a condensation_request awaiting its commit
        self._rearm()

    def _rearm(self) -> None:
        """A new reset cycle: every stage can warn again; measure by estimate until a success."""
        self.delivered = -1  # index of the highest stage delivered in this cycle
        self.pending: int | None = None  # index of a warning sent but not yet consumed by a success
        self.cycle_success = False
        self.measured: int | None = None

    # ----- tools
    def tools(self) -> list[ToolSpec]:
        return [CONDENSE_SPEC]

    def handle_tool_call(self, ctx: "RunContext", call: ToolCall) -> ToolResult | None:
        if call.name != CONDENSE:
            return None
        action_id = ctx.last_message_id("agent")  # the response that made this call
        count = len(ctx.view.messages[action_id].get("tool_calls") or ())
        if count != 1:
            return tool_error(f"condense must be the only tool call of its response; this response made {count} tool "
                              "calls. No reset happened. Finish the other calls, then call condense alone.")
        message, refusal = parse_condense(call)
        if refusal is not None:
            return refusal
        self.request = ctx.emit("condensation_request", reason="agent", boundary=ctx.last_request_id,  # made the call
                                action_id=action_id, tool_call_id=call.id)
        text = RECOVERY_TEXT + (PAST_SELF_HEADER + message if message else "")
        return ToolResult(text, payload={"type": "CondenseObservation", "request_id": self.request["id"],
                                         "message_to_future_self": message})

    def action_payload(self, calls: list[ToolCall]) -> dict[str, Any] | None:
        """The typed CondenseAction of a response's condense call whose arguments are valid (seed: typed
        payloads inside the existing ActionEvent envelope, the agent's message event)."""
        call = next((c for c in calls if c.name == CONDENSE), None)
        if call is None:
            return None
        message, refusal = parse_condense(call)
        return None if refusal else {"type": "CondenseAction", "tool_call_id": call.id,
                                     "message_to_future_self": message}

    def profiles_needed(self) -> list[str]:
        return [self.hard.config.llm_profile_ref] if self.hard else []

    # ----- the reset and the warnings
    def before_request(self, ctx: "RunContext") -> None:
        if self.request is not None:
            self._commit(ctx, self.request)
            self.request = None
        self._warn(ctx)

    def _commit(self, ctx: "RunContext", request: dict[str, Any]) -> None:
        observation_id = next(i for i, message in ctx.view.messages.items()
                              if i > request["id"] and message.get("tool_call_id") == request["tool_call_id"])
        notice = ctx.add_message({"role": "user", "content": RESET_NOTICE}, origin="environment", placement="none")
        fixed = fixed_ids(ctx)
        pending = pending_user_ids(ctx, request["boundary"])
        kept = fixed + [notice["id"], request["action_id"], observation_id] + pending
        forgotten = [i for i in ctx.view.ids if i not in kept]
        ctx.emit("condensation", kind="agent_reset", request_id=request["id"], action_id=request["action_id"],
                 observation_id=observation_id, notice_id=notice["id"], pending_user_ids=pending,
                 forgotten_ids=forgotten, view_ops=[{"op": "set", "ids": kept}])
        self._rearm()

    def _warn(self, ctx: "RunContext") -> None:
        if self.pending is not None:
            return  # sent with a request that failed: it is still in the view, still pending
        budget = ctx.budget()
        tokens = self.measured if self.cycle_success else ctx.prompt_tokens_estimate()
        if not budget or tokens is None:
            return
        crossed = [index for index, level in enumerate(self.thresholds) if tokens >= level * budget]
        if not crossed or crossed[-1] <= self.delivered:
            return
        stage = crossed[-1]  # a jump delivers only the highest stage crossed
        level = self.thresholds[stage]
        message = ctx.add_message({"role": "user", "content": WARNING_TEXT.format(
            stage=round(level * 100), tokens=tokens, budget=budget)}, origin="environment")
        ctx.log.append("warning", level=level, stage=stage, tokens=tokens, budget=budget,
                       measured="usage" if self.cycle_success else "estimate", message_id=message["id"])
        self.pending = stage

    def after_response(self, ctx: "RunContext", result: "LLMResult") -> None:
        self.cycle_success = True
        self.measured = result.usage.input_tokens
        if self.pending is not None:
            self.delivered, self.pending = self.pending, None
        if self.hard is not None:
            self.hard.after_response()

    def on_context_window_error(self, ctx: "RunContext", error: BaseException) -> bool:
        if self.hard is None:
            return False  # no hard condenser: the overflow ends the run
        recovered = self.hard.recover(ctx, error)
        if recovered:
            self._rearm()
        return recovered

    def request_condensation(self, ctx: "RunContext") -> ManualCondensation:
        return ManualCondensation(False, 409, "agent_controlled_condensation",
                                  "this run uses agent-controlled condensation: ask the agent to save its notes "
                                  "and call its condense tool instead")
