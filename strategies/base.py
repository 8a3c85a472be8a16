"""The Strategy interface: hooks the runner calls, and nothing else.

A strategy never edits the event log. It decides the view by emitting events that carry
`view_ops` (harness.conversation.view), and records every decision as an event. Configuration is a
dataclass `Config` built from plain data; unknown keys and impossible values fail before
any model call.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Mapping

from harness.core.config import build_dataclass
from harness.core.errors import StrategyFailed
from strategies import thresholds
from tasks.base import ToolCall, ToolResult, ToolSpec

if TYPE_CHECKING:
    from harness.conversation.context import RunContext
    from strategies.adapters import Library
    from harness.models.llm import LLMProfile, LLMResult


@dataclass
class NoOptions:
    """A strategy without options."""


@dataclass(frozen=True)
class ManualCondensation:
    """A strategy's answer to a manual condense request (a server's `/condense` route).

    status is HTTP-like: 202 accepted (condensed before the next request), 409 refused,
    501 not supported by this strategy.
    """

    accepted: bool
    status: int
    code: str
    message: str


UNSUPPORTED = ManualCondensation(False, 501, "condensation_unsupported",
                                 "this strategy does not condense on request")


class Strategy:
    name: ClassVar[str] = ""
    Config: ClassVar[type] = NoOptions
    # False for observe-only add-ons, which alone behave exactly like `none`: left out of "all".
    standalone: ClassVar[bool] = True
    # The real library an adapter runs (strategies.adapters); None for ctxbench's own strategies.
    library: ClassVar["Library | None"] = None
    # The provider whose own context management the strategy switches on (it needs that provider's API, or the mock).
    provider: ClassVar[str | None] = None
    # What `ctxbench strategies` shows: one line on what it does, and where its rules come from
    # (a seed, a library file, a paper). Empty for a user's strategy: its docstring stands in.
    summary: ClassVar[str] = ""
    source: ClassVar[str] = ""
    # Keys its from_config takes beyond Config's fields (name -> meaning), e.g. a preset name, or an
    # adapter's options that the library's own constructor validates.
    other_keys: ClassVar[dict[str, str]] = {}

    def __init__(self, config: Any = None):
        self.config = config if config is not None else self.Config()
        # The config with its budget-scaled thresholds resolved: at the reference budget until a run's
        # on_run_start resolves them against its own (strategies.thresholds).
        self.limits = thresholds.resolved(self.config, None)

    @classmethod
    def from_config(cls, data: Mapping[str, Any] | None, where: str | None = None) -> "Strategy":
        return cls(build_dataclass(cls.Config, data or {}, where or f"strategy {cls.name or cls.__name__}"))

    def libraries(self) -> list[str]:
        """The real libraries (name and version) whose code decides for this strategy: runs.jsonl's
        `libraries`, so a result says which release of the code it measured."""
        return [self.library.label] if self.library is not None else []

    def threshold_values(self, budget: int | None) -> dict[str, int]:
        """Each budget-scaled token threshold's effective value at this input budget (rows and config.json)."""
        return thresholds.threshold_values(self.config, budget)

    def threshold_warnings(self, budget: int | None, label: str) -> list[str]:
        """What of the configuration cannot act at this input budget, said before the run."""
        return thresholds.warnings(self.config, budget, label)

    def tools(self) -> list[ToolSpec]:
        """Tools this strategy adds to the task's own (e.g. `condense`, `read_tool_result`)."""
        return []

    def on_run_start(self, ctx: "RunContext") -> None:
        """After the fixed context (system prompt) is logged, before the first user message."""

    def before_request(self, ctx: "RunContext") -> None:
        """Before every main-model request; `ctx.turn_start` says whether a turn begins."""

    def after_response(self, ctx: "RunContext", result: "LLMResult") -> None:
        """After a successful main-model response has been logged."""

    def request_options(self, ctx: "RunContext") -> dict[str, Any]:
        """Provider parameters the next main-model request carries for this strategy (a provider's own context
        management, e.g. Anthropic's `context_management`): the provider, not the view, does the forgetting."""
        return {}

    def profiles_needed(self) -> list[str]:
        """LLM profiles this strategy will call (e.g. a summarizer's), checked before any model call."""
        return []

    def check_main(self, profile: "LLMProfile", where: str) -> None:
        """Refuse, with a ConfigError naming `where`, a main model this strategy cannot run with (a provider's own
        compaction needs that provider's API); checked before any model call."""

    def action_payload(self, calls: list[ToolCall]) -> dict[str, Any] | None:
        """A typed action to record on the agent's message event, for a response calling this
        strategy's own tools (e.g. CondenseAction); None for none."""
        return None

    def handle_tool_call(self, ctx: "RunContext", call: ToolCall) -> ToolResult | None:
        """Answer a call to one of this strategy's own tools; None leaves it to others."""
        return None

    def transform_tool_result(self, ctx: "RunContext", call: ToolCall, result: ToolResult) -> ToolResult:
        """Change a tool result before it is logged and shown (e.g. offload an oversized one)."""
        return result

    def on_context_window_error(self, ctx: "RunContext", error: BaseException) -> bool:
        """Recover from a recognized context-window error; True means retry the request."""
        return False

    def request_condensation(self, ctx: "RunContext") -> ManualCondensation:
        """Answer a manual condense request made from outside the agent (e.g. by a user)."""
        return UNSUPPORTED


class Stack(Strategy):
    """Strategies composed in order: every hook runs on each; the first to answer a tool call wins."""

    name = "stack"

    def __init__(self, parts: list[Strategy]):
        super().__init__(NoOptions())
        self.parts = parts

    def libraries(self) -> list[str]:
        return list(dict.fromkeys(label for part in self.parts for label in part.libraries()))

    def threshold_values(self, budget: int | None) -> dict[str, int]:
        """The first part's keys as they are, a composed part's prefixed with its name."""
        return {(key if index == 0 else f"{part.name}.{key}"): value
                for index, part in enumerate(self.parts) for key, value in part.threshold_values(budget).items()}

    def threshold_warnings(self, budget: int | None, label: str) -> list[str]:
        return [line for part in self.parts for line in part.threshold_warnings(budget, label)]

    def tools(self) -> list[ToolSpec]:
        return [tool for part in self.parts for tool in part.tools()]

    def on_run_start(self, ctx: "RunContext") -> None:
        for part in self.parts:
            part.on_run_start(ctx)

    def before_request(self, ctx: "RunContext") -> None:
        for part in self.parts:
            part.before_request(ctx)

    def after_response(self, ctx: "RunContext", result: "LLMResult") -> None:
        for part in self.parts:
            part.after_response(ctx, result)

    def request_options(self, ctx: "RunContext") -> dict[str, Any]:
        """Every part's; two parts asking for the same parameter cannot both be sent: the run fails naming them."""
        options: dict[str, Any] = {}
        owners: dict[str, str] = {}
        for part in self.parts:
            for key, value in part.request_options(ctx).items():
                if key in options and options[key] != value:
                    raise StrategyFailed(f"{owners[key]} and {part.name} both set the request's {key!r}")
                options[key], owners[key] = value, part.name
        return options

    def profiles_needed(self) -> list[str]:
        return list(dict.fromkeys(name for part in self.parts for name in part.profiles_needed()))

    def check_main(self, profile: "LLMProfile", where: str) -> None:
        for part in self.parts:
            part.check_main(profile, where)

    def action_payload(self, calls: list[ToolCall]) -> dict[str, Any] | None:
        return next((payload for part in self.parts if (payload := part.action_payload(calls)) is not None), None)

    def handle_tool_call(self, ctx: "RunContext", call: ToolCall) -> ToolResult | None:
        for part in self.parts:
            result = part.handle_tool_call(ctx, call)
            if result is not None:
                return result
        return None

    def transform_tool_result(self, ctx: "RunContext", call: ToolCall, result: ToolResult) -> ToolResult:
        for part in self.parts:
            result = part.transform_tool_result(ctx, call, result)
        return result

    def on_context_window_error(self, ctx: "RunContext", error: BaseException) -> bool:
        return any(part.on_context_window_error(ctx, error) for part in self.parts)

    def request_condensation(self, ctx: "RunContext") -> ManualCondensation:
        """The first part that has an answer (accepts or refuses) decides."""
        for part in self.parts:
            answer = part.request_condensation(ctx)
            if answer != UNSUPPORTED:
                return answer
        return UNSUPPORTED
