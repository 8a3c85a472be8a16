"""Inspect AI's compaction (inspect-ai `inspect_ai.model._compaction`), run by ctxbench's runner.

Each adapter drives Inspect's own `compaction()` handler exactly as `react(compaction=...)`
does (inspect_ai/agent/_react.py `_model_generate`): before every main request it hands the
handler the agent's full history (`compact_input`), sends what the handler returns, appends
the handler's extra message (a summary) to the history, and after the response calibrates the
handler with the provider's input tokens (`record_output`). On a context-window error it forces
one compaction (`compact_input(force=True)`, as `_handle_overflow`) and retries once.

Conversion: each ctxbench message becomes one Inspect ChatMessage whose `id` is the ctxbench
message id (the id is also kept in `metadata`, which Inspect's copies carry over while giving
them a fresh id). A message the handler returns as the very object it was given keeps its
ctxbench identity; a copy Inspect edited is a `replace`; a message Inspect made (a summary) is
a new message. The history grows by converting only the messages appended since the last
request; after a request without compaction the view is already Inspect's input.

Model seam: the handler's target model is an Inspect `Model` over a ctxbench `ModelAPI`
(registered as the `ctxbench` model API): its `generate` is a side call of the adapter's
summary profile (`ctx.call_llm`), and Inspect's model-info registry gives it ctxbench's main
budget as its context window, so a fractional `threshold` resolves to `ctx.budget()`. Token
counting is Inspect's own default (`ModelAPI.count_tokens`: tiktoken o200k_base + 10%).
"""
from __future__ import annotations

import contextlib
import json
import sys
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Iterator, Mapping

from harness.core.config import build_dataclass, option, require
from harness.core.errors import StrategyFailed
from strategies.adapters import INSPECT_AI, LibraryError, Wanted, apply_view, content_text, run_sync
from strategies.base import Strategy

if TYPE_CHECKING:
    from harness.conversation.context import RunContext
    from harness.models.llm import LLMResult
    from harness.conversation.view import Message

CID = "ctxbench_id"  # metadata key: the ctxbench message id an Inspect message (or its copy) stands for
API_NAME = "ctxbench"


@dataclass
class _Common:
    """Parameters every Inspect CompactionStrategy takes (types.py CompactionStrategy.__init__)."""

    threshold: int | float = option(0.9, "compact when the input passes this: tokens, or a fraction (<= 1.0) "
                                         "of the context window", tokens=True)
    memory: bool = option(True, "Inspect's memory warning: before compacting, tell the model to save what it "
                                "needs to its memory tool")

    def __post_init__(self) -> None:
        # ours: Inspect accepts any number, and one <= 0 makes every request fail to compact enough
        require(self.threshold > 0, f"threshold must be a positive token count or fraction, got {self.threshold}")


@dataclass
class CompactionEditConfig(_Common):
    keep_thinking_turns: int | str = option(1, "recent turns whose thinking is kept, or \"all\"")
    keep_tool_uses: int = option(3, "most recent tool uses whose results are kept")
    keep_tool_inputs: bool = option(True, "keep the cleared calls' arguments")
    exclude_tools: list[str] | None = option(None, "tools whose results are never cleared")

    def __post_init__(self) -> None:
        super().__post_init__()
        require(self.keep_thinking_turns == "all" or isinstance(self.keep_thinking_turns, int),
                f"keep_thinking_turns must be an integer or 'all', got {self.keep_thinking_turns!r}")


@dataclass
class CompactionTrimConfig(_Common):
    preserve: float = option(0.8, "fraction of the messages after the input that is kept (the most recent)")


@dataclass
class CompactionSummaryConfig(_Common):
    # Inspect's `model` (which model writes the summary; None: the compaction target model). In
    # ctxbench it names an LLM profile; None means the `summary` profile, the target model's seam.
    model: str | None = option(None, "LLM profile that writes the summary (null: the summary profile)")
    instructions: str | None = option(None, "extra instructions appended to Inspect's summary prompt")
    prompt: str | None = option(None, "replaces Inspect's summary prompt (null: Inspect's own)")


SUMMARY_PROFILE = "summary"


# ----- conversion, ctxbench -> Inspect

def _arguments(raw: Any) -> tuple[dict[str, Any], str | None]:
    """Tool-call arguments as Inspect holds them: a dict, or {} with the parse error."""
    if isinstance(raw, dict):
        return raw, None
    try:
        parsed = json.loads(raw or "{}")
    except (TypeError, ValueError) as exc:
        return {}, f"arguments are not JSON: {exc}"
    return (parsed, None) if isinstance(parsed, dict) else ({"value": parsed}, None)


def to_inspect(message: "Message", cid: int | None) -> Any:
    """One ctxbench message as an Inspect ChatMessage carrying its ctxbench id."""
    from inspect_ai.model import ChatMessageAssistant, ChatMessageSystem, ChatMessageTool, ChatMessageUser
    from inspect_ai.tool import ToolCall

    tags: dict[str, Any] = {"id": str(cid), "metadata": {CID: cid}} if cid is not None else {}
    role = message.get("role")
    content = content_text(message.get("content"))
    if role == "system":
        return ChatMessageSystem(content=content, **tags)
    if role == "tool":
        return ChatMessageTool(content=content, tool_call_id=message.get("tool_call_id"),
                               function=message.get("name"), **tags)
    if role == "assistant":
        calls = []
        for call in message.get("tool_calls") or ():
            function = call.get("function", {})
            arguments, error = _arguments(function.get("arguments"))
            calls.append(ToolCall(id=call.get("id", ""), function=function.get("name", ""), arguments=arguments,
                                  parse_error=error))
        return ChatMessageAssistant(content=content, tool_calls=calls or None, **tags)
    return ChatMessageUser(content=content, **tags)


# ----- conversion, Inspect -> ctxbench

def _inspect_text(message: Any) -> str:
    """An Inspect message's text (its `text` property joins its text parts)."""
    return message.content if isinstance(message.content, str) else message.text


def to_ctxbench(message: Any, original: "Message | None") -> "Message":
    """An Inspect message as a ctxbench message; `original` (the logged one it is a copy of) lends
    the fields Inspect does not hold and its tool calls' own argument texts where Inspect kept them."""
    base: dict[str, Any] = dict(original) if original is not None else {}
    base["role"] = message.role
    base["content"] = _inspect_text(message)
    if message.role == "tool":
        base["tool_call_id"] = message.tool_call_id
        if message.function is not None:
            base["name"] = message.function
    if message.role == "assistant":
        known = {call.get("id"): call for call in (original or {}).get("tool_calls") or ()}
        calls = [_call(call, known.get(call.id)) for call in message.tool_calls or ()]
        if calls:
            base["tool_calls"] = calls
        else:
            base.pop("tool_calls", None)
    return base


def _call(call: Any, original: dict[str, Any] | None) -> dict[str, Any]:
    if original is not None and _arguments(original.get("function", {}).get("arguments"))[0] == call.arguments:
        return original
    return {"id": call.id, "type": "function", "function": {"name": call.function, "arguments": json.dumps(call.arguments)}}


# ----- the model seam

_registered: list[type] = []


def _model_api_class() -> type:
    """ctxbench's Inspect ModelAPI, defined and registered once (`ctxbench/<profile>`)."""
    if _registered:
        return _registered[0]
    from inspect_ai.model import GenerateConfig, ModelAPI, ModelOutput, ModelUsage, modelapi

    class CtxbenchModelAPI(ModelAPI):
        """Inspect's model calls as ctxbench side calls of one profile (counted, cached, faulted, priced)."""

        def __init__(self, model_name: str, base_url: str | None = None, api_key: str | None = None,
                     config: GenerateConfig = GenerateConfig(), *, adapter: "_InspectCompaction",
                     window: int | None = None, **_: Any) -> None:
            super().__init__(model_name, base_url, api_key, [], config)
            self.adapter = adapter
            self.window = window

        def canonical_name(self) -> str:
            # keyed by window so runs with different budgets never share an entry of Inspect's registry
            return f"{API_NAME}-window-{self.window}" if self.window else self.model_name

        async def generate(self, input: list[Any], tools: list[Any], tool_choice: Any,
                           config: GenerateConfig) -> ModelOutput:
            result = self.adapter.side_call(self.model_name, input)
            usage = result.usage
            return ModelOutput.from_content(
                model=self.model_name, content=content_text(result.message.get("content")),
            ).model_copy(update={"usage": ModelUsage(input_tokens=usage.input_tokens or 0,
                                                     output_tokens=usage.output_tokens or 0)})

    _registered.append(modelapi(name=API_NAME)(CtxbenchModelAPI))
    return _registered[0]


@contextlib.contextmanager
def _contained() -> Iterator[None]:
    """Undo what running Inspect changes in the process: it installs its own sys.excepthook
    (inspect_ai/_util/error.py set_exception_hook, from Model.__init__ -> platform_init)."""
    hook = sys.excepthook
    try:
        yield
    finally:
        sys.excepthook = hook


# ----- the adapters

class _InspectCompaction(Strategy):
    """Drives one Inspect CompactionStrategy through Inspect's compaction() handler, as react() does."""

    library = INSPECT_AI
    inspect_class: ClassVar[str] = ""
    event_type: ClassVar[str] = "compaction"

    def __init__(self, config: Any = None, where: str | None = None):
        super().__init__(config)
        where = where or f"strategy {self.name}"
        module = INSPECT_AI.load(where, "inspect_ai.model")
        with INSPECT_AI.configuring(where), _contained():
            self.compaction = self.build(module, self.config)
        self._handler: Any = None
        self._ctx: "RunContext | None" = None

    @classmethod
    def from_config(cls, data: Mapping[str, Any] | None, where: str | None = None) -> "Strategy":
        where = where or f"strategy {cls.name}"
        return cls(build_dataclass(cls.Config, data or {}, where), where)

    def build(self, module: Any, config: Any) -> Any:
        """The library's strategy object from the config (its own constructor and validators)."""
        return getattr(module, self.inspect_class)(**asdict(config))

    # -- per run
    def _start(self, ctx: "RunContext") -> None:
        """Create the handler as react() does at agent start: prefix = system + sample input."""
        from inspect_ai.model._compaction import compaction
        from inspect_ai.model._trim import partition_messages

        self._ctx = ctx
        self._history: list[Any] = []  # the agent's full history (react's state.messages)
        self._shown: dict[int, Any] = {}  # ctxbench id -> the Inspect message its current rendering is
        self._cid_of: dict[str, int] = {}  # Inspect id of a message Inspect made -> its ctxbench id
        self._last_id = -1  # the newest ctxbench message id folded into the history
        self._input: list[Any] = []  # what the handler returned for the request under way
        self._overflow_compacted = False
        model = self.model = self.target_model(ctx)
        self._sync(ctx)
        parts = partition_messages(self._history)
        with self._inspect("compaction", ctx):
            self._handler = compaction(self.compaction, prefix=parts.system + parts.input, tools=self._tool_infos(ctx),
                                       model=model)

    def target_model(self, ctx: "RunContext") -> Any:
        """The handler's target model: an Inspect `Model` over ctxbench's ModelAPI (its calls side calls of
        `profile()`), whose context window Inspect reads as the run's input budget."""
        from inspect_ai.model import Model, ModelInfo, set_model_info

        window = ctx.budget()
        with _contained():
            model = Model(_model_api_class()(self.profile(), adapter=self, window=window), self._generate_config())
        if window:
            set_model_info(model.canonical_name(), ModelInfo(context_length=window, input_tokens=window))
        return model

    def profile(self) -> str:
        return SUMMARY_PROFILE

    def convert_in(self, message: "Message", cid: int | None) -> Any:
        """A ctxbench message as the Inspect message the handler is given."""
        return to_inspect(message, cid)

    def convert_out(self, message: Any, original: "Message | None") -> "Message":
        """An Inspect message as the ctxbench message it stands for."""
        return to_ctxbench(message, original)

    @staticmethod
    def is_summary(message: Any) -> bool:
        """Whether a message Inspect made is the summary a condensation names."""
        return "summary" in (message.metadata or {})

    @staticmethod
    def _generate_config() -> Any:
        from inspect_ai.model import GenerateConfig
        return GenerateConfig(max_retries=0)  # ctxbench's LLM layer retries its side calls itself

    @staticmethod
    def _tool_infos(ctx: "RunContext") -> list[Any]:
        """The run's tool schemas as Inspect ToolInfo (counted by Inspect as part of the context)."""
        from inspect_ai.tool import ToolInfo
        infos = []
        for schema in ctx.tools:
            function = schema.get("function", schema)
            infos.append(ToolInfo.model_validate({"name": function["name"], "description": function.get("description", ""),
                                                  "parameters": function.get("parameters") or {}}))
        return infos

    @contextlib.contextmanager
    def _inspect(self, what: str, ctx: "RunContext") -> Iterator[Any]:
        """Around a call into Inspect: its errors named, a transcript of this call alone (yielded:
        the handler logs its CompactionEvent there), its process-wide changes undone."""
        from inspect_ai.log._transcript import Transcript, _transcript
        with INSPECT_AI.calling(what, ctx), _contained():  # the Transcript is Inspect's own time too
            transcript = Transcript()
            token = _transcript.set(transcript)
            try:
                yield transcript
            finally:
                _transcript.reset(token)

    def _sync(self, ctx: "RunContext") -> None:
        """Fold the messages appended to the view since the last request into the history: O(new)."""
        ids = ctx.view.ids
        start = len(ids)
        while start > 0 and ids[start - 1] > self._last_id:
            start -= 1
        for cid in ids[start:]:
            message = self.convert_in(ctx.view.message(cid), cid)
            self._shown[cid] = message
            self._history.append(message)
        if start < len(ids):
            self._last_id = ids[-1]

    def _cid(self, message: Any) -> int | None:
        cid = self._cid_of.get(message.id)
        return cid if cid is not None else (message.metadata or {}).get(CID)

    # -- hooks
    def before_request(self, ctx: "RunContext") -> None:
        if self._handler is None or self._ctx is not ctx:
            self._start(ctx)
        else:
            self._sync(ctx)
        self._compact(ctx, force=False)

    def after_response(self, ctx: "RunContext", result: "LLMResult") -> None:
        """Calibrate the handler with the provider's input tokens (react: record_output)."""
        from inspect_ai.model import ModelOutput, ModelUsage
        self._overflow_compacted = False
        if ctx.last_usage is None or ctx.last_usage.input_tokens is None or self._handler is None:
            return
        output = ModelOutput(model=self.profile(), usage=ModelUsage(input_tokens=ctx.last_usage.input_tokens))
        with self._inspect("record_output", ctx):
            run_sync(self._handler.record_output(self._input, output))

    def on_context_window_error(self, ctx: "RunContext", error: BaseException) -> bool:
        """One forced compaction, then retry (react _handle_overflow); a failure there ends the run."""
        if self._handler is None or self._overflow_compacted:
            return False
        self._overflow_compacted = True
        try:
            self._compact(ctx, force=True)
        except (LibraryError, StrategyFailed) as exc:  # react falls back to its overflow filter: here, none
            ctx.log.append("compaction_failed", library=INSPECT_AI.label, trigger="forced", error=str(exc)[:2000])
            return False
        return True

    def _compact(self, ctx: "RunContext", force: bool) -> None:
        with self._inspect("compact_input", ctx) as transcript:
            self._input, extra = run_sync(self._handler.compact_input(self._history, force=force))
        if extra is not None:
            self._history.append(extra)
        compactions = [e for e in transcript.events if type(e).__name__ == "CompactionEvent"]
        if compactions:
            self._apply(ctx, compactions[-1], self.event_type)
        elif len(self._input) != len(ctx.view.ids):
            self._apply(ctx, None, "memory_warning")  # Inspect added its memory warning without compacting
        self._last_id = len(ctx.log) - 1  # every message logged so far is in the history or was Inspect's

    def _apply(self, ctx: "RunContext", event: Any, event_type: str) -> None:
        """Make the view Inspect's input: one event of view ops (O(view), on a compaction only)."""
        view = ctx.view
        before = list(view.ids)
        wanted: list[Wanted] = []
        made: list[Any] = []
        summary: tuple[int | None, int] | None = None  # (the kept message it is, or None; its place among the made)
        for message in self._input:
            cid = self._cid(message)
            if cid is None or cid not in view.messages:
                wanted.append((None, self.convert_out(message, None)))
                made.append(message)
            elif message is self._shown.get(cid):
                wanted.append((cid, None))
            else:  # a copy Inspect edited; a summary Inspect merged into a kept message (for its provider) too
                wanted.append((cid, self.convert_out(message, view.messages[cid])))
                self._shown[cid] = message
            if self.is_summary(message):
                summary = (wanted[-1][0], len(made) - 1)
        fields = self._event_fields(event)
        if event_type == "condensation":
            request = ctx.emit("condensation_request", reason=fields["trigger"], boundary=len(ctx.log) - 1,
                               library=INSPECT_AI.label)
            kept = {cid for cid, _ in wanted if cid is not None}
            upcoming = len(ctx.log)  # apply_view logs the new messages first, in order
            summary_id = None if summary is None else summary[0] if summary[0] is not None else upcoming + summary[1]
            fields.update(request_id=request["id"], forgotten_ids=[i for i in before if i not in kept],
                          summary_id=summary_id)
        logged = apply_view(ctx, wanted, event_type, **fields)
        if logged is None:
            return
        for message, cid in zip(made, logged["new_ids"]):
            self._cid_of[message.id] = cid
            self._shown[cid] = message

    def _event_fields(self, event: Any) -> dict[str, Any]:
        if event is None:
            return {"library": INSPECT_AI.label}
        meta = event.metadata or {}
        return {"step": event.type, "trigger": meta.get("trigger", "threshold"), "library": INSPECT_AI.label,
                "inspect_strategy": meta.get("strategy"), "inspect_tokens_before": event.tokens_before,
                "inspect_tokens_after": event.tokens_after, "messages_before": meta.get("messages_before"),
                "messages_after": meta.get("messages_after")}

    # -- the model seam
    def side_call(self, profile: str, messages: list[Any]) -> "LLMResult":
        """A call Inspect's model makes, as a ctxbench side call; unchanged messages are sent as logged."""
        ctx = self._ctx
        assert ctx is not None
        sent = []
        for message in messages:
            cid = self._cid(message)
            if cid is not None and message is self._shown.get(cid):
                sent.append(ctx.view.message(cid))  # the rendering this very Inspect message stands for
            else:
                sent.append(self.convert_out(message, ctx.view.messages.get(cid) if cid is not None else None))
        return ctx.call_llm(profile, sent, purpose=self.inspect_class)


class CompactionEditAdapter(_InspectCompaction):
    """Inspect's CompactionEdit: clears old tool results (and thinking), keeps the last `keep_tool_uses`."""

    name = "inspect.compaction_edit"
    summary = "Inspect's CompactionEdit: clear old tool results (and thinking), keep the last few"
    source = "Inspect AI inspect_ai.model._compaction (the library's code)"
    Config = CompactionEditConfig
    inspect_class = "CompactionEdit"


class CompactionTrimAdapter(_InspectCompaction):
    """Inspect's CompactionTrim: keeps system and input messages and the last `preserve` of the rest."""

    name = "inspect.compaction_trim"
    summary = "Inspect's CompactionTrim: keep system and input messages and the last part of the rest"
    source = "Inspect AI inspect_ai.model._compaction (the library's code)"
    Config = CompactionTrimConfig
    inspect_class = "CompactionTrim"

    def build(self, module: Any, config: Any) -> Any:
        from inspect_ai.model._trim import trim_messages
        run_sync(trim_messages([], preserve=config.preserve))  # Inspect's own check of `preserve`
        return super().build(module, config)


class CompactionSummaryAdapter(_InspectCompaction):
    """Inspect's CompactionSummary: the conversation after the input replaced by a model-written summary."""

    name = "inspect.compaction_summary"
    summary = "Inspect's CompactionSummary: replace the conversation after the input by a summary"
    source = "Inspect AI inspect_ai.model._compaction (the library's code)"
    Config = CompactionSummaryConfig
    inspect_class = "CompactionSummary"
    event_type = "condensation"

    def build(self, module: Any, config: Any) -> Any:
        options = asdict(config)
        options.pop("model")  # the summary model is the handler's target model (our profile seam)
        return module.CompactionSummary(**options)

    def profile(self) -> str:
        return self.config.model or SUMMARY_PROFILE

    def _event_fields(self, event: Any) -> dict[str, Any]:
        fields = super()._event_fields(event)
        if event is not None:
            fields["kind"] = "summary"
        return fields
