"""OpenHands SDK condensers (openhands-sdk), run by ctxbench: `openhands.llm_summarizing`, `openhands.pipeline`.

The view is kept as OpenHands' own event list (SystemPromptEvent, MessageEvent, one ActionEvent
per tool call sharing the response's llm_response_id, ObservationEvent; and the Condensation and
CondensationRequest events the run produced) and as OpenHands' own incrementally maintained
`View` (`View.append_event`, what ConversationState does). Before each request the condenser's
`condense(view, agent_llm)` runs as the agent's step does (openhands/sdk/agent/agent.py `step`,
`prepare_llm_messages`); a returned Condensation is appended and the next step condenses again,
without a model call, until a View comes back. A context-window error is what the agent makes
of LLMContextWindowExceedError: a CondensationRequest, and the next step condenses.

Event ids are derived from ctxbench message ids, so a view maps back to ctxbench messages; the
summary is a user-role message rendered as CondensationSummaryEvent.to_llm_message(). The
summarizer's calls go through the `summary` profile via an LLM subclass whose transport is
ctx.call_llm; the agent LLM (token counting, its input limit) is the main profile's model with
ctxbench's main budget as max_input_tokens.
"""
from __future__ import annotations

import contextlib
import json
import logging
import os
import warnings
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Iterator, Mapping

from harness.core.config import build_dataclass, option, require
from harness.core.errors import ConfigError
from strategies.adapters import OPENHANDS_SDK, apply_view
from strategies.base import ManualCondensation, Strategy

if TYPE_CHECKING:
    from harness.conversation.context import RunContext
    from harness.conversation.view import Message

WHERE = "strategy openhands"
_sdk: dict[str, Any] = {}  # the SDK's names, loaded once per process (see _load)


@contextlib.contextmanager
def _contained() -> Iterator[None]:
    """Import the SDK without its global side effects on ctxbench: the banner (suppressed by the
    SDK's own env switch), litellm flags, root logging and warnings filters (restored)."""
    import litellm

    root = logging.getLogger()
    saved_env = os.environ.get("OPENHANDS_SUPPRESS_BANNER")
    saved = (litellm.modify_params, litellm.suppress_debug_info, list(root.handlers), root.level)
    levels = {name: logging.getLogger(name).level for name in ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy")}
    os.environ["OPENHANDS_SUPPRESS_BANNER"] = "1"
    try:
        with warnings.catch_warnings():
            yield
    finally:
        litellm.modify_params, litellm.suppress_debug_info = saved[0], saved[1]
        root.handlers[:] = saved[2]
        root.setLevel(saved[3])
        for name, level in levels.items():
            logging.getLogger(name).setLevel(level)
        # ours: the SDK's warnings (e.g. one per tool text over its 50,000-character limit, each
        # request) would reach stderr through logging's last resort; its errors still do.
        logging.getLogger("openhands").setLevel(logging.ERROR)
        if saved_env is None:
            os.environ.pop("OPENHANDS_SUPPRESS_BANNER", None)
        else:
            os.environ["OPENHANDS_SUPPRESS_BANNER"] = saved_env


def _load(where: str) -> dict[str, Any]:
    """The SDK's classes this adapter uses, imported once (contained), or a ConfigError naming the extra."""
    if _sdk:
        OPENHANDS_SDK.load(where)  # still installed (already imported: no side effects again)
    else:
        with _contained():
            sdk = OPENHANDS_SDK.load(where)
            condenser = OPENHANDS_SDK.load(where, "openhands.sdk.context.condenser")
            event = OPENHANDS_SDK.load(where, "openhands.sdk.event")
            view = OPENHANDS_SDK.load(where, "openhands.sdk.context.view")
            client_tool = OPENHANDS_SDK.load(where, "openhands.sdk.tool.client_tool")
            llm = OPENHANDS_SDK.load(where, "openhands.sdk.llm")
            import litellm
        _sdk.update(sdk=sdk, condenser=condenser, event=event, View=view.View, client_tool=client_tool, llm=llm,
                    litellm=litellm, SideCallLLM=_side_call_llm_class(llm.LLM, litellm))
    return _sdk


def _side_call_llm_class(base: type, litellm: Any) -> type:
    """An OpenHands LLM whose transport (the litellm call, `LLM._transport_call`) is a ctxbench side
    call: OpenHands formats the messages, ctxbench counts, caches, faults and prices the call."""

    class SideCallLLM(base):  # type: ignore[misc, valid-type]
        _profile: str = "summary"
        _ctx: Any = None

        def _transport_call(self, *, messages: list[dict[str, Any]], **_: Any) -> Any:
            ctx = self._ctx
            result = ctx.call_llm(self._profile, [_plain(m) for m in messages], purpose="summary")
            usage = result.usage
            response = litellm.ModelResponse(
                id=f"ctxbench-{ctx.run_id}-{len(ctx.log)}", model=self.model,
                choices=[{"index": 0, "finish_reason": "stop",
                          "message": {"role": "assistant", "content": result.message.get("content") or ""}}],
                usage=litellm.Usage(prompt_tokens=usage.input_tokens or 0, completion_tokens=usage.output_tokens or 0,
                                    total_tokens=(usage.input_tokens or 0) + (usage.output_tokens or 0)))
            # ctxbench's price, read by OpenHands' telemetry as a provider's response-cost header
            response._hidden_params = {"additional_headers": {
                "llm_provider-x-litellm-response-cost": result.cost_usd or 0.0}}
            return response

        async def _atransport_call(self, **kwargs: Any) -> Any:
            return self._transport_call(**kwargs)

    return SideCallLLM


def _plain(message: Mapping[str, Any]) -> "Message":
    """An OpenHands-formatted chat message as ctxbench sends it: text content joined."""
    content = message.get("content")
    if isinstance(content, list):
        content = "\n".join(part.get("text", "") for part in content if isinstance(part, Mapping))
    return {"role": message["role"], "content": content or ""}


# ----- configuration

@dataclass
class LLMSummarizingConfig:
    """LLMSummarizingCondenser's own fields and defaults (openhands/sdk/context/condenser/
    llm_summarizing_condenser.py); its validators run in from_config. max_tokens None: the agent
    LLM's input limit (ctxbench's main budget) alone applies."""

    max_size: int = option(240, "condense when the view holds more than this many events")
    max_tokens: int | None = option(None, "condense when the view's tokens pass this (null: the main budget)",
                                    tokens=True)
    keep_first: int = option(2, "events at the start never forgotten")
    minimum_progress: float = option(0.1, "refuse a condensation forgetting less than this fraction of the view")
    hard_context_reset_max_retries: int = option(5, "summary attempts of a hard context reset")
    hard_context_reset_context_scaling: float = option(0.8, "each further attempt shrinks the previews by this")
    llm_profile_ref: str = option("summary", "ours: the ctxbench profile the summarizer LLM calls")

    def __post_init__(self) -> None:
        require(bool(self.llm_profile_ref), "llm_profile_ref must name an LLM profile")

    def library_fields(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in ("max_size", "max_tokens", "keep_first", "minimum_progress",
                                                       "hard_context_reset_max_retries",
                                                       "hard_context_reset_context_scaling")}


CONDENSER_KINDS = ("llm_summarizing", "no_op")


@dataclass
class PipelineConfig:
    """PipelineCondenser(condensers=[...]): each entry {"kind": "llm_summarizing" | "no_op", ...fields}."""

    condensers: list[dict[str, Any]] = option(help="the pipeline's condensers in order, each {kind: llm_summarizing "
                                                   "| no_op, ...that condenser's keys}",
                                              factory=lambda: [{"kind": "llm_summarizing"}])

    def __post_init__(self) -> None:
        require(isinstance(self.condensers, list) and len(self.condensers) > 0,
                "condensers must be a non-empty list of {kind, ...} entries")
        for index, entry in enumerate(self.condensers):
            require(isinstance(entry, dict) and entry.get("kind") in CONDENSER_KINDS,
                    f"condensers[{index}].kind must be one of {', '.join(CONDENSER_KINDS)}, got {entry!r}")


def _build_condenser(kind: str, fields: Mapping[str, Any], where: str) -> tuple[Any, list[Any]]:
    """One SDK condenser from plain data (its own validators run); returns it and its summarizer LLMs."""
    sdk = _load(where)
    if kind == "no_op":
        require_empty = {k for k in fields if k != "kind"}
        if require_empty:
            raise ConfigError(f"{where}: no_op takes no fields, got {', '.join(sorted(require_empty))}")
        return sdk["condenser"].NoOpCondenser(), []
    config = build_dataclass(LLMSummarizingConfig, {k: v for k, v in fields.items() if k != "kind"}, where)
    llm = sdk["SideCallLLM"](model=f"ctxbench/{config.llm_profile_ref}", usage_id=f"condenser-{config.llm_profile_ref}",
                             num_retries=0)  # ours: the profile's own retries, not twice
    llm._profile = config.llm_profile_ref
    with OPENHANDS_SDK.configuring(where):
        condenser = sdk["condenser"].LLMSummarizingCondenser(llm=llm, **config.library_fields())
    return condenser, [condenser.llm]


# ----- events from ctxbench messages

class _History:
    """OpenHands' event list and View for one run, extended with each new ctxbench message."""

    def __init__(self, sdk: dict[str, Any]):
        self.sdk = sdk
        self.events: list[Any] = []
        self.view = sdk["View"]()
        self.message_of: dict[str, int] = {}  # event id -> ctxbench message id
        self.action_of_call: dict[str, str] = {}  # tool_call_id -> ActionEvent id
        self.tools: dict[str, Any] = {}
        self.synced_len = 0
        self.synced_edits = -1

    def set_tools(self, schemas: list[dict[str, Any]]) -> None:
        """ctxbench's tools as OpenHands client tools (ClientTool: schema verbatim, executed outside)."""
        client_tool = self.sdk["client_tool"]
        for schema in schemas:
            function = schema.get("function", schema)
            spec = client_tool.ClientToolSpec(name=function["name"], description=function.get("description", ""),
                                              parameters=function.get("parameters") or {"type": "object",
                                                                                        "properties": {}})
            try:
                self.tools[spec.name] = client_tool.ClientTool.from_spec(spec)
            except client_tool.ClientToolSchemaConflictError:
                # The SDK keeps one action type per tool name per process (a live agent process has one
                # schema per name); another task's tool of this name registered first. Register this
                # run's schema afresh, so a run's events do not depend on what ran before it here.
                with client_tool._client_action_lock:
                    client_tool._client_action_types.pop(spec.name, None)
                    client_tool._client_action_schemas.pop(spec.name, None)
                self.tools[spec.name] = client_tool.ClientTool.from_spec(spec)

    def append(self, event: Any, message_id: int | None) -> None:
        self.events.append(event)
        self.view.append_event(event)
        if message_id is not None:
            self.message_of[event.id] = message_id

    def sync(self, ctx: "RunContext") -> None:
        """Append events for the messages ctxbench added since the last sync: O(new messages).
        A view edited by something else (another strategy of a stack) is converted afresh."""
        view = ctx.view
        if view.edits != self.synced_edits and self.synced_edits != -1:
            self.__init__(self.sdk)  # type: ignore[misc]
            self.set_tools(ctx.tools)
        for message_id in view.ids[self.synced_len:]:
            for event in self.convert(message_id, view.message(message_id)):
                self.append(event, message_id)
        self.mark_synced(ctx)

    def mark_synced(self, ctx: "RunContext") -> None:
        self.synced_len, self.synced_edits = len(ctx.view.ids), ctx.view.edits

    def convert(self, message_id: int, message: "Message") -> list[Any]:
        """One ctxbench message as the events the OpenHands agent would have logged for it."""
        llm, event = self.sdk["llm"], self.sdk["event"]
        role, text = message.get("role"), _text(message)
        content = [llm.TextContent(text=text)] if text else []
        if role == "system":
            return [event.SystemPromptEvent(id=f"m{message_id}", system_prompt=llm.TextContent(text=text),
                                            tools=list(self.tools.values()))]
        if role == "tool":
            call_id = message.get("tool_call_id", "")
            observation = self.sdk["client_tool"].ClientToolObservation(content=content)
            return [event.ObservationEvent(id=f"m{message_id}", observation=observation,
                                           action_id=self.action_of_call.get(call_id, ""),
                                           tool_name=message.get("name") or "", tool_call_id=call_id)]
        calls = message.get("tool_calls") or []
        if role == "assistant" and calls:
            return [self._action(message_id, index, call, content if index == 0 else [])
                    for index, call in enumerate(calls)]
        source = "agent" if role == "assistant" else "user"
        return [event.MessageEvent(id=f"m{message_id}", source=source,
                                   llm_response_id=f"r{message_id}" if source == "agent" else None,
                                   llm_message=llm.Message(role=role if role in ("user", "assistant") else "user",
                                                           content=content))]

    def _action(self, message_id: int, index: int, call: Mapping[str, Any], thought: list[Any]) -> Any:
        function = call.get("function", {})
        tool_call = self.sdk["llm"].MessageToolCall(id=call.get("id", ""), name=function.get("name", ""),
                                                    arguments=function.get("arguments") or "{}", origin="completion")
        event_id = f"m{message_id}.{index}"
        self.action_of_call[tool_call.id] = event_id
        return self.sdk["event"].ActionEvent(id=event_id, thought=thought, tool_name=tool_call.name,
                                             tool_call_id=tool_call.id, tool_call=tool_call,
                                             llm_response_id=f"r{message_id}",
                                             action=self._action_value(tool_call))

    def _action_value(self, tool_call: Any) -> Any:
        """The tool's Action from the call's arguments (as the agent's _get_action_event); None when the
        tool is unknown or the arguments do not validate (the SDK's "not executed" action)."""
        tool = self.tools.get(tool_call.name)
        if tool is None:
            return None
        try:
            arguments = json.loads(tool_call.arguments)
            return tool.action_from_arguments(arguments) if isinstance(arguments, dict) else None
        except ValueError:  # JSON and pydantic validation errors
            return None

    def wanted(self, events: list[Any]) -> list[tuple[int | None, "Message | None"]]:
        """ctxbench's view for OpenHands' view events: known messages as they are, summaries new."""
        wanted: list[tuple[int | None, "Message | None"]] = []
        seen: set[int] = set()
        for event in events:
            message_id = self.message_of.get(event.id)
            if message_id is None:
                wanted.append((None, _plain(event.to_llm_message().model_dump())))
            elif message_id not in seen:
                seen.add(message_id)
                wanted.append((message_id, None))
        return wanted


def _is_hard_reset(view: Any, condensation: Any) -> bool:
    """hard_context_reset()'s shape: everything after the leading system prompt forgotten
    (LLMSummarizingCondenser.hard_context_reset; a rolling condensation keeps a tail)."""
    head = 1 if view.events and type(view.events[0]).__name__ == "SystemPromptEvent" else 0
    return len(view.events) > head and all(e.id in condensation.forgotten_event_ids for e in view.events[head:])


def _text(message: "Message") -> str:
    content = message.get("content")
    if isinstance(content, list):
        return "\n".join(part.get("text", "") for part in content if isinstance(part, Mapping))
    return content or ""


# ----- the strategies

MAX_STEPS_PER_REQUEST = 8  # ours: condensation steps before one request (the agent loop is unbounded)


class _CondenserAdapter(Strategy, ABC):
    """What both adapters share: build the condenser in from_config, run it before each request."""

    library: ClassVar = OPENHANDS_SDK

    def __init__(self, config: Any, condenser: Any, summarizers: list[Any]):
        super().__init__(config)
        self.condenser = condenser
        self.summarizers = summarizers
        self.history: _History | None = None
        self.agent_llm: Any = None
        self.pending_request: int | None = None  # our condensation_request the library has not handled yet

    @classmethod
    @abstractmethod
    def build(cls, config: Any, where: str) -> tuple[Any, list[Any]]:
        """The library's condenser for this config, and the summarizing condensers in it (their LLMs are routed)."""

    @classmethod
    def from_config(cls, data: Mapping[str, Any] | None, where: str | None = None) -> "Strategy":
        where = where or f"strategy {cls.name}"
        config = build_dataclass(cls.Config, data or {}, where)
        condenser, summarizers = cls.build(config, where)
        return cls(config, condenser, summarizers)

    def on_run_start(self, ctx: "RunContext") -> None:
        sdk = _load(f"strategy {self.name}")
        for llm in self.summarizers:
            if llm._profile not in ctx.profiles:
                raise ConfigError(f"strategy {self.name}: llm_profile_ref {llm._profile!r} is not among the run's "
                                  f"profiles ({', '.join(sorted(ctx.profiles))})")
            llm._ctx = ctx
        with OPENHANDS_SDK.calling("LLM (agent)", ctx):
            self.agent_llm = sdk["llm"].LLM(model=ctx.main.model, usage_id="agent", max_input_tokens=ctx.budget())
        self.history = _History(sdk)
        self.history.set_tools(ctx.tools)

    def before_request(self, ctx: "RunContext") -> None:
        history = self.history
        assert history is not None
        history.sync(ctx)
        condensation_type = _sdk["event"].Condensation
        for _ in range(MAX_STEPS_PER_REQUEST):
            view = history.view
            with OPENHANDS_SDK.calling(f"{type(self.condenser).__name__}.condense", ctx):
                result = self.condenser.condense(view, agent_llm=self.agent_llm)
            if not isinstance(result, condensation_type):
                if result is not view and result.events != view.events:
                    apply_view(ctx, history.wanted(result.events), "compaction", step="condenser",
                               library=OPENHANDS_SDK.label)
                    history.mark_synced(ctx)
                return
            self._apply(ctx, view, result)

    def _apply(self, ctx: "RunContext", view: Any, condensation: Any) -> None:
        """A Condensation: logged in OpenHands' history, and the resulting view as one ctxbench event."""
        history = self.history
        assert history is not None
        forgotten = sorted({history.message_of[e.id] for e in view.events if e.id in condensation.forgotten_event_ids
                            and e.id in history.message_of})
        request_id = self.pending_request
        if request_id is None:
            request_id = ctx.emit("condensation_request", reason=self._reason(ctx, view), boundary=len(ctx.log) - 1,
                                  library=OPENHANDS_SDK.label)["id"]
        self.pending_request = None
        summary_id = None
        if condensation.has_summary_metadata:
            rendering = _plain(condensation.summary_event.to_llm_message().model_dump())
            summary_id = ctx.add_message(rendering, origin="strategy", placement="none",
                                         payload={"type": "CondensationSummaryEvent"})["id"]
            history.message_of[condensation.summary_event.id] = summary_id
        history.append(condensation, None)
        apply_view(ctx, history.wanted(history.view.events), "condensation",
                   kind="hard_reset" if _is_hard_reset(view, condensation) else "summary",
                   library=OPENHANDS_SDK.label, request_id=request_id, forgotten_ids=forgotten, summary_id=summary_id,
                   summary_offset=condensation.summary_offset)
        history.mark_synced(ctx)

    def _reason(self, ctx: "RunContext", view: Any) -> str:
        """Why the library condensed, in the native strategy's words (get_condensation_reasons)."""
        parts = getattr(self.condenser, "condensers", [self.condenser])
        reasons = set()
        for part in parts:
            if hasattr(part, "get_condensation_reasons"):
                with OPENHANDS_SDK.calling(f"{type(part).__name__}.get_condensation_reasons", ctx):
                    reasons |= {reason.value for reason in part.get_condensation_reasons(view, self.agent_llm)}
        names = {"request": "manual", "tokens": "tokens", "events": "size"}
        return "+".join(names[r] for r in sorted(reasons)) or "condenser"

    def _request(self, ctx: "RunContext", reason: str, **fields: Any) -> bool:
        """What the agent does when it needs a condensation: a CondensationRequest in its history."""
        if not self.condenser.handles_condensation_requests() or self.history is None:
            return False
        self.history.sync(ctx)
        self.history.append(_sdk["event"].CondensationRequest(), None)
        self.pending_request = ctx.emit("condensation_request", reason=reason, boundary=len(ctx.log) - 1,
                                        library=OPENHANDS_SDK.label, **fields)["id"]
        return True

    def on_context_window_error(self, ctx: "RunContext", error: BaseException) -> bool:
        """agent.py step(): LLMContextWindowExceedError -> CondensationRequest when the condenser
        handles requests (the next step condenses); otherwise the error stands."""
        from harness.models.llm import is_context_window_error

        return is_context_window_error(error) and self._request(ctx, "context_window_error", error=str(error)[:500])

    def request_condensation(self, ctx: "RunContext") -> ManualCondensation:
        if self._request(ctx, "manual"):
            return ManualCondensation(True, 202, "condensation_requested",
                                      "the history is condensed before the next request")
        return ManualCondensation(False, 409, "condensation_unsupported",
                                  "no condenser of this pipeline handles condensation requests")


class LLMSummarizingAdapter(_CondenserAdapter):
    """The real LLMSummarizingCondenser."""

    name = "openhands.llm_summarizing"
    summary = "the SDK's LLMSummarizingCondenser"
    source = "OpenHands SDK llm_summarizing_condenser.py (the library's code)"
    Config = LLMSummarizingConfig

    @classmethod
    def build(cls, config: LLMSummarizingConfig, where: str) -> tuple[Any, list[Any]]:
        return _build_condenser("llm_summarizing", {**vars(config), "kind": "llm_summarizing"}, where)


class PipelineAdapter(_CondenserAdapter):
    """The real PipelineCondenser over the SDK's condensers."""

    name = "openhands.pipeline"
    summary = "the SDK's PipelineCondenser over its condensers"
    source = "OpenHands SDK pipeline condenser (the library's code)"
    Config = PipelineConfig

    @classmethod
    def build(cls, config: PipelineConfig, where: str) -> tuple[Any, list[Any]]:
        parts, summarizers = [], []
        for index, entry in enumerate(config.condensers):
            condenser, llms = _build_condenser(entry["kind"], entry, f"{where}.condensers[{index}]")
            parts.append(condenser)
            summarizers.extend(llms)
        with OPENHANDS_SDK.configuring(where):
            return _load(where)["condenser"].PipelineCondenser(condensers=parts), summarizers
