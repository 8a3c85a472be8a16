"""LangChain 1.x agent middleware (langchain.agents.middleware), run by ctxbench: `SummarizationMiddleware` and
`ContextEditingMiddleware` with `ClearToolUsesEdit`.

A LangChain agent (`create_agent`, langchain/agents/factory.py) keeps its conversation in the graph state's
`messages`, the system prompt apart: it is the request's `system_message`, put in front only when the model is
called (factory.py:1053-1059, 1506-1507). Its middleware runs around each model call, and the adapters run it
before every main request the same way. The state is the view after its system prompt, each message as logged:
edits made for a request never reach a LangChain agent's state (so, composed with `langchain.clear_tool_uses`,
the summarization counts and summarizes the uncleared results, as in LangChain).

* `SummarizationMiddleware.before_model(state, runtime)` returns a state update (remove every message, then the
  summary and the kept messages: summarization.py:479-517); LangGraph's own reducer (`add_messages`) applies it,
  and the state it leaves becomes the view after the system prompt. A summary is a `condensation` (kind summary).
* `ContextEditingMiddleware.wrap_model_call(request, handler)` edits a deep copy of the request's messages and
  hands that to the handler (context_editing.py:250-274); the state keeps the originals, so each request is
  edited again from them. The view becomes what the handler received: a cleared result or input is a `replace`,
  one `compaction` (step clear_tool_uses).

Conversion (ours): each ctxbench message is one LangChain message whose `id` is its ctxbench id, converted once:
system -> SystemMessage, user -> HumanMessage, tool -> ToolMessage (its call id and tool name),
assistant -> AIMessage whose tool calls LangChain's own parser reads (`default_tool_parser`: arguments that are
not JSON become invalid tool calls), with the usage the provider reported for its request as `usage_metadata`
and the main model's provider as `response_metadata["model_provider"]`, as a provider's chat model leaves them
(LangChain scales its token estimate by that usage and triggers on it: summarization.py:676-696, langchain_core
messages/utils.py `count_tokens_approximately`). A message LangChain made (the summary) is a new message.

Model seam (ours): the middleware's chat model (`CtxbenchChatModel`) stands for ctxbench's main model: its
window is the run's input budget (`profile["max_input_tokens"]`, what LangChain's fractions are of), its provider
the main model's; its calls are side calls of the `summary` profile (`ctx.call_llm`: counted, cached, faulted,
priced). A side call that failed after ctxbench's own retries is not retried by LangChain's `with_retry` (it is a
non-retryable ModelError); one past the window is LangChain's ContextOverflowError, which LangChain answers with
one retry of a shorter prompt (summarization.py:939-945); what LangChain then gives up on is raised as the side
call raised it.
"""
from __future__ import annotations

import functools
import json
import threading
from typing import TYPE_CHECKING, Any, ClassVar, Mapping, Sequence

from harness.core.errors import ConfigError
from harness.core.tokens import count_message, count_tools
from strategies.adapters import LANGCHAIN, Library, LibraryError, Wanted, apply_view, content_text, warnings_kept
from strategies.base import Strategy
from strategies.thresholds import REFERENCE_BUDGET, default_text, scaled

if TYPE_CHECKING:
    from harness.conversation.context import RunContext
    from harness.conversation.view import Message
    from harness.models.llm import LLMResult
    from harness.models.usage import Usage

SUMMARY_PROFILE = "summary"
MIDDLEWARE = "langchain.agents.middleware"
MESSAGES = "langchain_core.messages"
MODULES = (MIDDLEWARE, MESSAGES, "langchain_core.messages.tool", "langgraph.graph.message")
# Ours, where LangChain has none (its trigger defaults to None: never summarize, summarization.py:286): summarize at
# 0.85 of the window, in LangChain's own fraction form, resolved by LangChain against the model profile's
# max_input_tokens (the run's input budget); LangChain's Deep Agents gives this default to a model with a profile
# (langchain-ai/deepagents, libs/deepagents/deepagents/graph.py).
DEFAULT_TRIGGER = {"fraction": 0.85}
# ClearToolUsesEdit's trigger: LangChain's 100,000 tokens (context_editing.py:61, Anthropic's clear_tool_uses
# default, set for its 200k-token models), as a fraction of the budget: 100,000 at 200k.
CLEAR_TRIGGER_FRACTION = 0.5
# Held around building and editing a ModelRequest: its constructor (run again by `override`) wraps itself in
# warnings.catch_warnings, which is process-wide; two runs' threads inside it at once could leave a filter behind.
_REQUESTS = threading.Lock()
# Keyword arguments the adapter supplies itself, and why.
SUPPLIED = {"token_counter": "LangChain's approximate counter, the default, is kept",
            "summarizer": "the summary is written by the profile named by `model`"}


def load(where: str) -> dict[str, Any]:
    """The library's modules, imported without changing ctxbench's warnings filters."""
    with warnings_kept():
        return {name: LANGCHAIN.load(where, name) for name in MODULES}


def provider_of(model: str) -> str:
    """A model name's provider as LangChain labels messages and models: litellm's prefix ("anthropic/...")."""
    return model.split("/", 1)[0] if "/" in model else model


# ----- the model seam ---------------------------------------------------------------------------
@functools.cache
def chat_model_class() -> type:
    """The LangChain chat model standing for ctxbench's main model; defined once, with the library loaded."""
    from langchain_core.exceptions import ContextOverflowError, ModelError
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import AIMessage, convert_to_openai_messages
    from langchain_core.outputs import ChatGeneration, ChatResult

    class SideCallFailed(ModelError):
        """A side call that failed after ctxbench's own retries (is_retryable False: LangChain does not retry it)."""

    class CtxbenchChatModel(BaseChatModel):
        """ctxbench's main model as LangChain sees it; its calls are side calls of `summary_profile`."""

        main_model: str
        provider: str
        summary_profile: str | None = None
        purpose: str = ""
        run: Any = None  # the RunContext its calls belong to
        failure: Any = None  # what the last failed side call raised

        @property
        def _llm_type(self) -> str:
            # LangChain tunes its approximate counter for its Anthropic models by this (summarization.py:252-260)
            return "anthropic-chat" if self.provider == "anthropic" else "ctxbench"

        def _get_ls_params(self, stop: list[str] | None = None, **kwargs: Any) -> Any:
            params = super()._get_ls_params(stop=stop, **kwargs)
            params.update(ls_provider=self.provider, ls_model_name=self.main_model)
            return params

        def _generate(self, messages: list[Any], stop: list[str] | None = None, run_manager: Any = None,
                      **kwargs: Any) -> Any:
            from harness.models.llm import is_context_window_error

            if self.summary_profile is None:
                raise NotImplementedError("this middleware makes no model calls in ctxbench")
            try:
                result = self.run.call_llm(self.summary_profile, convert_to_openai_messages(messages), self.purpose)
            except Exception as exc:
                self.failure = exc
                raise (ContextOverflowError if is_context_window_error(exc) else SideCallFailed)(str(exc)) from exc
            reply = AIMessage(content=content_text(result.message.get("content")))
            return ChatResult(generations=[ChatGeneration(message=reply)])

        def get_num_tokens_from_messages(self, messages: list[Any], tools: Sequence[Any] | None = None) -> int:
            """The main model's own count (ContextEditingMiddleware's token_count_method "model"): ctxbench's."""
            return sum(count_message(m) for m in convert_to_openai_messages(messages)) + count_tools(list(tools or ()))

    return CtxbenchChatModel


def chat_model(ctx: "RunContext | None", profile: str | None, purpose: str) -> Any:
    """The chat model of a run (None: for validating a config, at the reference budget)."""
    main = ctx.main.model if ctx is not None else "ctxbench"
    budget = (ctx.budget() if ctx is not None else None) or REFERENCE_BUDGET
    return chat_model_class()(main_model=main, provider=provider_of(main), summary_profile=profile, purpose=purpose,
                              run=ctx, profile={"max_input_tokens": budget})


def raise_side_call_failure(model: Any) -> None:
    """After LangChain gave up: the side call's own error, as it was raised, when that is what LangChain gave up on."""
    if model.failure is not None:
        raise model.failure


# ----- conversion -------------------------------------------------------------------------------
class Converter:
    """The view after its system prompt as the agent's state: LangChain messages whose `id` is the ctxbench id,
    each message as logged.

    Each message converts once; the state is extended while the view only grows (no view op since
    the last request but the adapter's own, which it adopts), so a request costs O(new messages).
    """

    def __init__(self, lib: dict[str, Any], provider: str):
        self.mod, self.parse_calls = lib[MESSAGES], lib["langchain_core.messages.tool"].default_tool_parser
        self.provider = provider
        self.cache: dict[int, tuple["Message", Any]] = {}  # message id -> (rendering, LangChain message)
        self.usage: dict[int, "Usage"] = {}  # agent message id -> the usage its request reported
        self.ids: list[int] = []  # the state's ctxbench ids
        self.messages: list[Any] = []  # the state
        self.edits = -1  # the view's edits when the state was last brought up to it

    def state(self, ctx: "RunContext", head: int | None) -> list[Any]:
        """A copy of the state for this request: the view after `head`, each message as logged (a request's edits,
        ContextEditingMiddleware's, never reach a LangChain agent's state)."""
        view = ctx.view
        start, known = (head is not None), len(self.ids)
        if view.edits != self.edits or len(view.ids) - start < known or \
                (known and view.ids[start + known - 1] != self.ids[-1]):
            self.ids, self.messages, known = [], [], 0
        for cid in view.ids[start + known:]:
            self.ids.append(cid)
            self.messages.append(self.convert(cid, view.messages[cid]))
        self.edits = view.edits
        return list(self.messages)

    def adopt(self, ctx: "RunContext", head: int | None, messages: list[Any]) -> None:
        """After the adapter's own view op: `messages` is the state, as the view now holds it."""
        self.ids = [cid for cid in ctx.view.ids if cid != head]
        self.messages, self.edits = list(messages), ctx.view.edits

    def convert(self, cid: int, rendering: "Message") -> Any:
        cached = self.cache.get(cid)
        if cached is not None and cached[0] is rendering:
            return cached[1]
        message = self.to_langchain(cid, rendering)
        self.cache[cid] = (rendering, message)
        return message

    def remember(self, cid: int, rendering: "Message", message: Any) -> None:
        """A message LangChain made, now logged as `cid`: the state holds LangChain's own object for it."""
        message.id = str(cid)
        self.cache[cid] = (rendering, message)

    def known(self, message: Any) -> int | None:
        """The ctxbench id of a message converted here and handed back unchanged, else None."""
        cid = int(message.id) if isinstance(message.id, str) and message.id.isdigit() else None
        cached = self.cache.get(cid) if cid is not None else None
        return cid if cached is not None and cached[1] is message else None

    def to_langchain(self, cid: int, message: "Message") -> Any:
        mod, role, tag = self.mod, message.get("role"), str(cid)
        text = content_text(message.get("content"))
        if role == "system":
            return mod.SystemMessage(text, id=tag)
        if role == "tool":
            return mod.ToolMessage(text, tool_call_id=message.get("tool_call_id") or "", name=message.get("name"),
                                   id=tag)
        if role == "assistant":
            calls, invalid = self.parse_calls([dict(call) for call in message.get("tool_calls") or ()])
            usage = self.usage.get(cid)
            metadata = None if usage is None or usage.input_tokens is None else {
                "input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens or 0,
                "total_tokens": usage.input_tokens + (usage.output_tokens or 0)}
            return mod.AIMessage(text, tool_calls=calls, invalid_tool_calls=invalid, usage_metadata=metadata,
                                 response_metadata={"model_provider": self.provider}, id=tag)
        return mod.HumanMessage(text, id=tag)

    def new_message(self, message: Any) -> "Message":
        """A message LangChain made (the summary), as the chat message it sends."""
        converted = self.mod.convert_to_openai_messages(message)
        return {"role": converted["role"], "content": content_text(converted.get("content"))}


def system_head(ctx: "RunContext") -> int | None:
    """The view's leading system message (the agent's `system_prompt`, apart from the state), if any."""
    ids = ctx.view.ids
    return ids[0] if ids and ctx.view.message(ids[0]).get("role") == "system" else None


def never_acting(triggers: Mapping[str, int], budget: int | None, label: str, acting: str) -> list[str]:
    """A line per trigger at or above the input budget: it never acts before the context overflows."""
    return [f"strategy {label}: {key} {value:,} is at or above the {budget:,}-token input budget, so it never acts "
            f"before the context overflows; {acting} would act" for key, value in triggers.items()
            if budget and value >= budget]


def context_pair(value: Any) -> Any:
    """JSON's [kind, value] as the (kind, value) tuple LangChain's ContextSize is; anything else as it is."""
    if isinstance(value, list) and len(value) == 2 and isinstance(value[0], str):
        return tuple(value)
    return value


class _LangChainAdapter(Strategy):
    """What both adapters share: the library loaded, a run's chat model and converter, the usage of each reply."""

    library: ClassVar[Library] = LANGCHAIN

    def __init__(self, config: Any, lib: dict[str, Any], where: str):
        super().__init__(config)
        self.lib, self.where = lib, where
        self._ctx: "RunContext | None" = None
        self.model: Any = None
        self.converter = Converter(lib, "")

    def profile(self) -> str | None:
        """The profile the middleware's model calls go to (None: it makes none)."""
        return None

    def start(self, ctx: "RunContext") -> None:
        """The middleware for this run: its model bound to the run, at the run's budget."""

    def on_run_start(self, ctx: "RunContext") -> None:
        self._ctx = ctx
        self.model = chat_model(ctx, self.profile(), self.name)
        self.converter = Converter(self.lib, self.model.provider)
        self.start(ctx)

    def after_response(self, ctx: "RunContext", result: "LLMResult") -> None:
        self.converter.usage[ctx.last_message_id("agent")] = result.usage

    def bound(self, ctx: "RunContext") -> None:
        if self._ctx is not ctx:
            self.on_run_start(ctx)


# ----- SummarizationMiddleware ------------------------------------------------------------------
class SummarizationAdapter(_LangChainAdapter):
    """LangChain's `SummarizationMiddleware`, its `before_model` run before every main request.

    Config: the middleware's keyword arguments `trigger`, `keep`, `trim_tokens_to_summarize`, `summary_prompt`
    (and the deprecated `max_tokens_before_summary`, `messages_to_keep`), validated by its own constructor; a
    [kind, value] pair is LangChain's (kind, value) tuple. Defaults LangChain's (keep the last 20 messages, show
    the summary call the last 4,000 tokens of what it summarizes), but the trigger, which LangChain leaves unset
    (never summarize): ours, {"fraction": 0.85} of the run's input budget. `model` names the ctxbench profile
    that writes the summaries (default `summary`).
    """

    name = "langchain.summarization"
    summary = "LangChain's SummarizationMiddleware: past its trigger, older messages replaced by a summary"
    source = "langchain agents/middleware/summarization.py (the library's code)"
    other_keys = {
        "trigger": "when to summarize: {tokens: N, messages: N, fraction: F} (all must hold), [kind, value], or a "
                   f"list of those (any); ours when absent: {{fraction: 0.85}}, {default_text(0.85)} "
                   "(LangChain sets none: it never summarizes)",
        "keep": "what stays after a summary: [\"messages\", N], [\"tokens\", N] or [\"fraction\", F] (LangChain's "
                "default [\"messages\", 20])",
        "trim_tokens_to_summarize": "the summary call is shown the last this many tokens of what it summarizes, "
                                    "from a user message on (LangChain's default 4000; null: all of it)",
        "summary_prompt": "the summary prompt, {messages} where the messages go (LangChain's own by default)",
        "max_tokens_before_summary": "deprecated by LangChain: trigger [\"tokens\", N]",
        "messages_to_keep": "deprecated by LangChain: keep [\"messages\", N]",
        "model": "ours: the profile that writes the summaries (default summary)",
    }

    def __init__(self, fields: dict[str, Any], profile: str, lib: dict[str, Any], where: str):
        self.fields, self.summary_profile = fields, profile
        super().__init__(self.middleware(lib, chat_model(None, None, self.name), where), lib, where)
        self.instance: Any = self.config

    @classmethod
    def from_config(cls, data: Mapping[str, Any] | None, where: str | None = None) -> "SummarizationAdapter":
        where = where or f"strategy {cls.name}"
        lib = load(where)
        fields = dict(data or {})
        profile = fields.pop("model", SUMMARY_PROFILE)
        if not isinstance(profile, str):
            raise ConfigError(f"{where}.model: expected a profile name, got {profile!r}")
        for key, why in SUPPLIED.items():
            if key in fields:
                raise ConfigError(f"{where}.{key}: not configurable here ({why})")
        known = {"trigger", "keep", "trim_tokens_to_summarize", "summary_prompt", "max_tokens_before_summary",
                 "messages_to_keep"}  # the constructor takes any other keyword silently (**deprecated_kwargs)
        unknown = sorted(set(fields) - known)
        if unknown:
            raise ConfigError(f"{where}: unknown option {unknown[0]!r} for SummarizationMiddleware; it takes "
                              f"{', '.join(sorted(known | {'model'}))}")
        if isinstance(fields.get("keep"), Mapping):
            raise ConfigError(f"{where}.keep: {LANGCHAIN.label} takes keep as a [kind, value] pair, such as "
                              "[\"messages\", 20], not a mapping (summarization.py:821 unpacks it)")
        trim = fields.get("trim_tokens_to_summarize")
        if trim is not None and (not isinstance(trim, int) or isinstance(trim, bool) or trim < 1):
            raise ConfigError(f"{where}.trim_tokens_to_summarize: expected a positive number of tokens or null, "
                              f"got {trim!r}")  # ours: LangChain would fail its trim and fall back to 15 messages
        if "trigger" in fields:
            trigger = context_pair(fields["trigger"])
            fields["trigger"] = [context_pair(item) for item in trigger] if isinstance(trigger, list) else trigger
        elif fields.get("max_tokens_before_summary") is None:
            fields["trigger"] = dict(DEFAULT_TRIGGER)
        if "keep" in fields:
            fields["keep"] = context_pair(fields["keep"])
        return cls(fields, profile, lib, where)

    def middleware(self, lib: dict[str, Any], model: Any, where: str) -> Any:
        """The library's middleware over `model`, built (and so checked) by its own constructor."""
        with LANGCHAIN.configuring(where):
            return lib[MIDDLEWARE].SummarizationMiddleware(model, **self.fields)

    def profile(self) -> str | None:
        return self.summary_profile

    def profiles_needed(self) -> list[str]:
        return [self.summary_profile]

    def clauses(self) -> list[Mapping[str, Any]]:
        """The trigger as LangChain reads it: clauses all of whose thresholds must hold, any clause acting."""
        return self.instance._trigger_clauses

    def threshold_values(self, budget: int | None) -> dict[str, int]:
        """Each token threshold of the trigger at this budget, a fraction resolved as LangChain resolves it
        (int(max_input_tokens x fraction), at least 1: summarization.py:720-728)."""
        clauses = self.clauses()
        values = {}
        for index, clause in enumerate(clauses):
            prefix = "trigger" if len(clauses) == 1 else f"trigger[{index}]"
            if "tokens" in clause:
                values[f"{prefix}.tokens"] = clause["tokens"]
            if "fraction" in clause:
                values[f"{prefix}.fraction"] = max(1, int((budget or REFERENCE_BUDGET) * clause["fraction"]))
        kind, value = self.instance.keep
        if kind == "fraction":  # the tokens kept after a summary (summarization.py:757-762)
            values["keep.fraction"] = max(1, int((budget or REFERENCE_BUDGET) * value))
        return values

    def threshold_warnings(self, budget: int | None, label: str) -> list[str]:
        triggers = {key: value for key, value in self.threshold_values(budget).items() if key.startswith("trigger")}
        fraction = DEFAULT_TRIGGER["fraction"]
        return never_acting(triggers, budget, label, f"{{\"fraction\": {fraction}}} ({scaled(fraction, budget):,} "
                                                     "tokens, ours by default)")

    def start(self, ctx: "RunContext") -> None:
        self.instance = self.middleware(self.lib, self.model, self.where)

    def before_request(self, ctx: "RunContext") -> None:
        self.bound(ctx)
        head = system_head(ctx)
        view = ctx.view
        state = self.converter.state(ctx, head)
        self.model.failure = None
        try:
            with LANGCHAIN.calling("SummarizationMiddleware.before_model", ctx):
                update = self.instance.before_model({"messages": state}, None)  # its runtime is not read
                if update is None:
                    return
                tokens = self.instance.token_counter(state)  # the count its trigger read, for the record
                after = self.lib["langgraph.graph.message"].add_messages(state, update["messages"])
        except LibraryError:
            raise_side_call_failure(self.model)
            raise
        wanted: list[Wanted] = [(head, None)] if head is not None else []
        made = []
        for message in after:
            cid = self.converter.known(message)
            if cid is None:
                made.append(message)
            wanted.append((cid, None if cid is not None else self.converter.new_message(message)))
        kept = {cid for cid, _ in wanted if cid is not None}
        request = ctx.emit("condensation_request", reason="tokens", boundary=len(ctx.log) - 1,
                           library=LANGCHAIN.label, langchain_tokens=tokens)
        summary_id = len(ctx.log) if made else None  # apply_view logs LangChain's messages first
        event = apply_view(ctx, wanted, "condensation", kind="summary", trigger="tokens", library=LANGCHAIN.label,
                           request_id=request["id"], forgotten_ids=[i for i in view.ids if i not in kept],
                           summary_id=summary_id, langchain_tokens=tokens)
        for message, cid in zip(made, event["new_ids"] if event is not None else ()):
            self.converter.remember(cid, ctx.view.message(cid), message)
        self.converter.adopt(ctx, head, after)


# ----- ContextEditingMiddleware -----------------------------------------------------------------
EDITED = "context_editing"  # the response_metadata key ClearToolUsesEdit marks a message it changed with
TOKEN_COUNT_METHODS = ("approximate", "model")


class ClearToolUsesAdapter(_LangChainAdapter):
    """LangChain's `ContextEditingMiddleware` with its `ClearToolUsesEdit`s, its `wrap_model_call` run before every
    main request.

    Config: `edits`, a list of ClearToolUsesEdit fields (`trigger`, `clear_at_least`, `keep`, `clear_tool_inputs`,
    `exclude_tools`, `placeholder`; default: one edit, LangChain's default), and `token_count_method`
    ("approximate", LangChain's default, or "model": the main model's count, ctxbench's here). Defaults
    LangChain's, but an edit's trigger: 0.5 x the run's input budget (LangChain's 100,000 at 200k).
    """

    name = "langchain.clear_tool_uses"
    summary = "LangChain's ContextEditingMiddleware (ClearToolUsesEdit): past its trigger, old tool results cleared"
    source = "langchain agents/middleware/context_editing.py (the library's code)"
    other_keys = {
        "edits": "list of ClearToolUsesEdit fields: trigger (tokens; ours when absent: "
                 f"{default_text(CLEAR_TRIGGER_FRACTION)}), clear_at_least (0), keep (3 results), "
                 "clear_tool_inputs (false), exclude_tools ([]), placeholder (\"[cleared]\"); default: one edit",
        "token_count_method": "approximate (LangChain's estimate, the default) | model (the main model's count: "
                              "ctxbench's)",
    }

    def __init__(self, edits: list[dict[str, Any]], method: str, lib: dict[str, Any], where: str):
        self.edit_fields, self.method = edits, method
        super().__init__(self.middleware(lib, None, where), lib, where)
        self.instance: Any = self.config
        self.cleared: set[int] = set()  # the messages the view shows as LangChain edited them

    @classmethod
    def from_config(cls, data: Mapping[str, Any] | None, where: str | None = None) -> "ClearToolUsesAdapter":
        where = where or f"strategy {cls.name}"
        lib = load(where)
        fields = dict(data or {})
        edits = fields.pop("edits", [{}])
        method = fields.pop("token_count_method", "approximate")
        if fields:
            raise ConfigError(f"{where}: unknown option {sorted(fields)[0]!r} for ContextEditingMiddleware; it takes "
                              "edits, token_count_method")
        if method not in TOKEN_COUNT_METHODS:  # ours: LangChain does not check its Literal
            raise ConfigError(f"{where}.token_count_method: expected one of {', '.join(TOKEN_COUNT_METHODS)}, "
                              f"got {method!r}")
        if not isinstance(edits, list):
            raise ConfigError(f"{where}.edits: expected a list of ClearToolUsesEdit fields, got {edits!r}")
        for index, edit in enumerate(edits):
            check_edit(edit, f"{where}.edits[{index}]")
        return cls([dict(edit) for edit in edits], method, lib, where)

    def edits_at(self, budget: int | None) -> list[dict[str, Any]]:
        """Each edit's fields, our default trigger resolved at this budget."""
        return [{"trigger": scaled(CLEAR_TRIGGER_FRACTION, budget), **edit} for edit in self.edit_fields]

    def middleware(self, lib: dict[str, Any], budget: int | None, where: str) -> Any:
        """The library's middleware at this budget, each edit built by ClearToolUsesEdit's own constructor."""
        mod = lib[MIDDLEWARE]
        edits = []
        for index, fields in enumerate(self.edits_at(budget)):
            with LANGCHAIN.configuring(f"{where}.edits[{index}]"):
                edits.append(mod.ClearToolUsesEdit(**fields))
        with LANGCHAIN.configuring(where):
            return mod.ContextEditingMiddleware(edits=edits, token_count_method=self.method)

    def threshold_values(self, budget: int | None) -> dict[str, int]:
        return {f"edits[{index}].trigger": edit["trigger"] for index, edit in enumerate(self.edits_at(budget))}

    def threshold_warnings(self, budget: int | None, label: str) -> list[str]:
        return never_acting(self.threshold_values(budget), budget, label,
                            f"{scaled(CLEAR_TRIGGER_FRACTION, budget):,} ({CLEAR_TRIGGER_FRACTION:g} x budget, its default)")

    def start(self, ctx: "RunContext") -> None:
        self.instance = self.middleware(self.lib, ctx.budget(), self.where)
        self.cleared = set()

    def before_request(self, ctx: "RunContext") -> None:
        self.bound(ctx)
        view = ctx.view
        head = system_head(ctx)
        state = self.converter.state(ctx, head)
        system = self.converter.convert(head, view.message(head)) if head is not None else None
        edited: dict[int, Any] = {}
        with _REQUESTS, LANGCHAIN.calling("ContextEditingMiddleware.wrap_model_call", ctx):
            request = self.lib[MIDDLEWARE].ModelRequest(model=self.model, messages=state, system_message=system,
                                                        tools=list(ctx.tools), state={"messages": state})
            # the handler keeps what LangChain marked as edited (context_editing.py:133-138, 171-177); its copies of
            # the rest are freed inside its call, their cost LangChain's
            self.instance.wrap_model_call(request, lambda sent: edited.update(
                (cid, message) for cid, message in zip(self.converter.ids, sent.messages)
                if EDITED in message.response_metadata))
        if not edited and not self.cleared:  # the rest is sent as the state holds it: as logged (again, if cleared)
            return
        wanted: list[Wanted] = [(head, None)] if head is not None else []
        for cid in self.converter.ids:
            message = edited.get(cid)
            logged = view.messages[cid]
            wanted.append((cid, edited_message(message, logged) if message is not None else
                           logged if cid in self.cleared else None))
        self.cleared = set(edited)
        changed = [cid for cid, rendering in wanted if rendering is not None and rendering != view.message(cid)]
        if not changed:
            return
        with LANGCHAIN.calling("ContextEditingMiddleware token count", ctx):
            tokens = self.instance._resolve_token_counter(request)(state)  # the count its trigger read
        apply_view(ctx, wanted, "compaction", step="clear_tool_uses", trigger="input_tokens", library=LANGCHAIN.label,
                   langchain_tokens=tokens, message_ids=changed,
                   cleared_ids=[cid for cid in changed if view.messages[cid].get("role") == "tool"])
        self.converter.edits = view.edits  # its own replaces: the state, the logged messages, is the same


def check_edit(edit: Any, where: str) -> None:
    """Ours: ClearToolUsesEdit is a plain dataclass that checks no value (context_editing.py:57-77); what would
    make it clear nothing, always, or fail mid-run is refused here, naming the field. Unknown fields are its
    constructor's to refuse."""
    if not isinstance(edit, Mapping):
        raise ConfigError(f"{where}: expected a mapping of ClearToolUsesEdit fields, got {edit!r}")
    counts = {"trigger": 1, "clear_at_least": 0, "keep": 0}
    for name, least in counts.items():
        value = edit.get(name, least)
        if not isinstance(value, int) or isinstance(value, bool) or value < least:
            raise ConfigError(f"{where}.{name}: expected a whole number of at least {least}, got {value!r}")
    if not isinstance(edit.get("clear_tool_inputs", False), bool):
        raise ConfigError(f"{where}.clear_tool_inputs: expected true or false, got {edit['clear_tool_inputs']!r}")
    excluded = edit.get("exclude_tools", [])
    if not isinstance(excluded, list) or not all(isinstance(name, str) for name in excluded):
        raise ConfigError(f"{where}.exclude_tools: expected a list of tool names, got {excluded!r}")
    if not isinstance(edit.get("placeholder", ""), str):
        raise ConfigError(f"{where}.placeholder: expected a text, got {edit['placeholder']!r}")


def edited_message(edited: Any, logged: "Message") -> "Message":
    """A message ClearToolUsesEdit changed, as a rendering of the logged one: a result's content (the
    placeholder), or the calls whose input it cleared (`args` {}: context_editing.py:157-184)."""
    if logged.get("role") == "tool":
        return {**logged, "content": content_text(edited.content)}
    args = {call["id"]: call["args"] for call in edited.tool_calls}
    calls = [call if (call.get("id") not in args or _arguments(call) == args[call.get("id")]) else
             {**call, "function": {**call["function"], "arguments": json.dumps(args[call.get("id")])}}
             for call in logged.get("tool_calls") or ()]
    return {**logged, "tool_calls": calls}


def _arguments(call: Mapping[str, Any]) -> Any:
    """A logged call's arguments as LangChain parsed them (unparseable ones are never edited)."""
    try:
        return json.loads((call.get("function") or {}).get("arguments") or "{}")
    except ValueError:
        return None

