"""litellm's context-management polyfill (litellm.llms.anthropic.messages.context_management), run by ctxbench.

For a model that is not Anthropic's, litellm's `/v1/messages` applies Anthropic's context edits itself before
it forwards a request: `clear_tool_uses_20250919` clears old tool results, `compact_20260112` has a summary
model (the proxy's general setting `context_management_summary_model`) summarize the conversation once its
input passes the trigger. This adapter runs that code before every main request, through the function
litellm's `/v1/messages` handler calls (adapters/handler.py `prepare_context_managed_request`), and sends
what litellm would forward.

The conversation is kept as litellm's client keeps it:

* The client sends its whole history on every request, never the gateway's edits: each message goes to
  litellm as it was logged (a result litellm cleared before is cleared again from its original), the system
  prompt apart, each ctxbench message one Anthropic message (a tool result a user turn with one
  `tool_result` block; the editors read blocks, so grouping parallel results would decide alike).
* A compaction comes back as a `compaction` block at the head of the response's content
  (adapters/transformation.py); the client keeps it in that assistant message and sends it again. litellm
  drops everything before the latest such block (compact.py `slice_around_compaction_block`) and puts its
  summary in front of the system prompt, so the view from that message on is the client's history as far as
  litellm reads it, and the original system prompt is what the client sends.
* What litellm forwards becomes the view: the system prompt with the summary in front is a new message
  (logged by the strategy) where the system prompt was; a message litellm left as the client sent it keeps
  its identity; a cleared result or input is a `replace` with litellm's own placeholder; litellm's own
  continuation prompt is a new message. A compaction is a `condensation` (kind summary), clearing a
  `compaction` (step clear_tool_uses), and dropping what came before a compaction block on the next request a
  `compaction` (step compaction_slice); each event carries litellm's applied edits.

Seams, ours: outside litellm's proxy there are no general settings and no router, and its caller checks
(caller_model_checks.py) allow a caller with no proxy auth. `_general_settings` stands for the proxy's
`general_settings` during the adapter's own calls alone (a context variable; litellm reads its own
elsewhere), naming the summary profile as `context_management_summary_model`; `SideCallRouter`
(strategies.adapters) stands for `llm_router`, whose `acompletion` litellm calls with that name: a side call of that profile, answered as a
litellm ModelResponse. The summary call's `max_tokens` (4,096) and `timeout` (60 s) are the profile's own
settings here. A summary call that fails is litellm's `summary_call_failed` (it forwards the request
uncompacted), recorded as `condensation_refused`; ctxbench's own errors inside it end the run as elsewhere.
"""
from __future__ import annotations

import contextvars
import json
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, ClassVar, Mapping

from harness.core.config import budget_fraction, build_dataclass, option, require
from harness.core.errors import ConfigError
from strategies import thresholds
from strategies.adapters import LITELLM, Library, SideCallRouter, Wanted, apply_view, content_text, run_sync
from strategies.base import Strategy
from tasks.base import ToolCall

if TYPE_CHECKING:
    from harness.conversation.context import RunContext
    from harness.conversation.view import Message
    from harness.models.llm import LLMResult

TAG = "ctxbench_id"  # an Anthropic message's key: the ctxbench message it stands for (litellm's copies keep it)
HANDLER = "litellm.llms.anthropic.messages.adapters.handler"
COMPACT = "litellm.llms.anthropic.messages.context_management.editors.compact"
CLEAR_EDIT, COMPACT_EDIT = "clear_tool_uses_20250919", "compact_20260112"
CLEAR_STEP = "clear_tool_uses"
SLICE_STEP = "compaction_slice"
_SETTINGS: contextvars.ContextVar[Mapping[str, object] | None] = contextvars.ContextVar(
    "ctxbench_litellm_general_settings", default=None)


# ----- configuration ------------------------------------------------------------------------------
@dataclass
class ClearToolUsesEdit:
    """`clear_tool_uses_20250919`'s fields; defaults litellm's (context_management/constants.py)."""

    trigger: int | None = option(help="clear once the input tokens pass this (litellm's and Anthropic's 100,000 "
                                      "at a 200k window)", of_budget=0.5)
    keep: int = option(3, "most recent tool uses whose results are kept")
    clear_at_least: int | None = option(None, "input tokens each batch of cleared uses must free (null: no "
                                              "minimum, clear every eligible use)", tokens=True)
    exclude_tools: list[str] = option(help="tools whose uses are never cleared", factory=list)
    clear_tool_inputs: bool | list[str] = option(False, "also clear the cleared uses' inputs: true for every "
                                                        "tool, or the tools named")

    def __post_init__(self) -> None:
        # ours, as the native clear_tool_uses: litellm reads a negative keep as its default and a trigger
        # below 1 as "always"
        require(self.trigger is None or self.trigger >= 1,
                f"trigger must be a positive number of input tokens, got {self.trigger}")
        require(self.keep >= 0, f"keep must be 0 or more, got {self.keep}")


@dataclass
class CompactEdit:
    """`compact_20260112`'s fields; defaults litellm's and Anthropic's."""

    trigger: int | None = option(help="summarize once the input tokens pass this (litellm's and Anthropic's "
                                      "150,000 at a 200k window; never under litellm's minimum, 50,000)",
                                 of_budget=0.75)
    instructions: str | None = option(None, "replaces the summary prompt (null: litellm's, Anthropic's default)")
    pause_after_compaction: bool = option(False, "Anthropic's pause after a compaction (litellm ignores it and "
                                                 "says so in its applied edits)")


@dataclass
class LitellmContextManagementConfig:
    clear_tool_uses: ClearToolUsesEdit | None = option(None, "the clear_tool_uses_20250919 edit, sent first "
                                                             "(null: not sent)")
    compact: CompactEdit | None = option(help="the compact_20260112 edit, sent last (default: sent, with its "
                                                 "defaults; null: not sent)", factory=CompactEdit)
    context_management_summary_model: str = option("summary", "the LLM profile that writes compact's "
                                                              "summaries (litellm's general setting)")


TRIGGER_FRACTIONS = {key: budget_fraction(next(field_ for field_ in fields(edit) if field_.name == "trigger"))
                     for key, edit in (("clear_tool_uses", ClearToolUsesEdit), ("compact", CompactEdit))}


# ----- the proxy's seams --------------------------------------------------------------------------
def _install_settings_seam(compact: Any) -> None:
    """Have litellm's compact editor read `_SETTINGS` as the proxy's general settings while it is set
    (during the adapter's calls), and the proxy's own otherwise. Installed once per process."""
    original = compact.proxy_general_settings
    if getattr(original, "ctxbench_seam", False):
        return

    def general_settings() -> Mapping[str, object]:
        settings = _SETTINGS.get()
        return settings if settings is not None else original()

    general_settings.ctxbench_seam = True  # type: ignore[attr-defined]
    compact.proxy_general_settings = general_settings


# ----- conversion ---------------------------------------------------------------------------------
def _tool_input(call: Mapping[str, Any]) -> Any:
    """A tool call's arguments as a `tool_use` input: the object, or the text when it is none."""
    parsed = ToolCall.from_message(dict(call))
    return parsed.args if parsed.args is not None else parsed.arguments


def to_anthropic(message: "Message", cid: int) -> dict[str, Any]:
    """One ctxbench message as the Anthropic message a client sends, tagged with its id."""
    role = message.get("role")
    text = content_text(message.get("content"))
    if role == "tool":
        block = {"type": "tool_result", "tool_use_id": message.get("tool_call_id") or "", "content": text}
        return {"role": "user", "content": [block], TAG: cid}
    if role == "assistant":
        blocks: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
        blocks += [{"type": "tool_use", "id": call.get("id") or "", "name": (call.get("function") or {}).get("name") or "",
                    "input": _tool_input(call)} for call in message.get("tool_calls") or ()]
        return {"role": "assistant", "content": blocks, TAG: cid}
    return {"role": "system" if role == "system" else "user", "content": text, TAG: cid}


def to_ctxbench(message: Mapping[str, Any], original: "Message | None") -> "Message":
    """An Anthropic message litellm forwards as a ctxbench rendering; `original` (the logged message it
    stands for) lends what litellm's editors never change (they clear results and inputs only)."""
    content = message.get("content")
    if original is None:  # litellm's own message (its continuation prompt)
        return {"role": message.get("role"), "content": content_text(content)}
    blocks = [block for block in content if isinstance(block, Mapping)] if isinstance(content, list) else []
    if original.get("role") == "tool":
        result = next((block for block in blocks if block.get("type") == "tool_result"), {})
        return {**original, "content": content_text(result.get("content"))}
    if original.get("role") == "assistant":
        inputs = {block.get("id"): block.get("input") for block in blocks if block.get("type") == "tool_use"}
        calls = [_call(call, inputs) for call in original.get("tool_calls") or ()]
        return {**original, "tool_calls": calls} if calls else original
    return {**original, "content": content_text(content)}


def _call(call: Mapping[str, Any], inputs: Mapping[Any, Any]) -> Mapping[str, Any]:
    """A logged tool call with the input litellm forwards for it: itself when unchanged (litellm clears an
    input to {} at most)."""
    forwarded = inputs.get(call.get("id"))
    if forwarded is None or _tool_input(call) == forwarded:
        return call
    return {**call, "function": {**(call.get("function") or {}), "arguments": json.dumps(forwarded)}}


def _anthropic_tools(schemas: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The run's tool schemas as Anthropic tools (litellm counts them, and its summary prompt asks for
    no tool calls when there are any)."""
    tools = []
    for schema in schemas:
        function = schema.get("function", schema)
        tools.append({"name": function["name"], "description": function.get("description") or "",
                      "input_schema": function.get("parameters") or {"type": "object", "properties": {}}})
    return tools


# ----- the adapter --------------------------------------------------------------------------------
class LitellmContextManagementAdapter(Strategy):
    """litellm's in-gateway context editing for a non-Anthropic model: clear_tool_uses_20250919 and
    compact_20260112, run before every main request as litellm's `/v1/messages` runs them."""

    name = "litellm.context_management"
    summary = "litellm's in-gateway polyfill of Anthropic's context edits (clear tool uses, compact)"
    source = "litellm llms/anthropic/messages/context_management (the library's code)"
    Config = LitellmContextManagementConfig
    library: ClassVar[Library] = LITELLM

    def __init__(self, config: LitellmContextManagementConfig, where: str):
        super().__init__(config)
        LITELLM.load(where)
        self.handler = LITELLM.load(where, HANDLER)
        self.compact = LITELLM.load(where, COMPACT)
        _install_settings_seam(self.compact)
        self.spec = self.spec_at(None)
        self._check(where)
        self._ctx: "RunContext | None" = None

    @classmethod
    def from_config(cls, data: Mapping[str, Any] | None, where: str | None = None) -> "Strategy":
        where = where or f"strategy {cls.name}"
        return cls(build_dataclass(cls.Config, data or {}, where), where)

    # -- configuration
    def _check(self, where: str) -> None:
        """litellm's own checks of the edits, before any model call: clear_tool_uses by the dispatcher's
        check_clear_tool_uses_spec, compact's trigger by the editor's own (its documented minimum)."""
        from litellm.llms.anthropic.messages.context_management import AnthropicContextManagementError
        from litellm.llms.anthropic.messages.context_management.editors import check_clear_tool_uses_spec

        for index, edit in enumerate(self.spec["edits"]):
            error = check_clear_tool_uses_spec(edit, index).error if edit["type"] == CLEAR_EDIT else None
            if error is not None:
                raise ConfigError(f"{where}.clear_tool_uses: {LITELLM.label} refuses it: {error.message}")
        compact = self.config.compact
        if compact is not None and compact.trigger is not None:
            try:
                self.compact._resolve_trigger_tokens({"trigger": {"type": "input_tokens", "value": compact.trigger}})
            except AnthropicContextManagementError as exc:
                raise ConfigError(f"{where}.compact.trigger: {LITELLM.label} refuses {compact.trigger:,}: "
                                  f"{exc.message} (compact_20260112's minimum, as Anthropic's)") from exc

    def edits(self) -> list[tuple[str, Any]]:
        """The configured edits, in the order sent, by their config key."""
        return [(key, edit) for key in ("clear_tool_uses", "compact")
                if (edit := getattr(self.config, key)) is not None]

    def minimum_compact_trigger(self) -> int:
        return self.compact.COMPACT_MIN_TRIGGER_TOKENS

    def default_trigger(self, key: str, budget: int | None) -> int:
        """An edit's default trigger: its fraction of the input budget; ours: compact's is raised to litellm's
        minimum, under which litellm refuses a trigger."""
        fraction = TRIGGER_FRACTIONS[key]
        value = thresholds.scaled(fraction, budget)
        return max(value, self.minimum_compact_trigger()) if key == "compact" else value

    def trigger_at(self, key: str, budget: int | None) -> int:
        """An edit's trigger at this input budget: the value given, else its default."""
        value = getattr(self.config, key).trigger
        return value if value is not None else self.default_trigger(key, budget)

    def spec_at(self, budget: int | None) -> dict[str, Any]:
        """The `context_management` of a request, in Anthropic's shape, at this input budget."""
        edits: list[dict[str, Any]] = []
        for key, edit in self.edits():
            trigger = {"type": "input_tokens", "value": self.trigger_at(key, budget)}
            if key == "clear_tool_uses":
                fields_ = {"type": CLEAR_EDIT, "trigger": trigger,
                           "keep": {"type": "tool_uses", "value": edit.keep}}
                if edit.clear_at_least is not None:
                    fields_["clear_at_least"] = {"type": "input_tokens", "value": edit.clear_at_least}
                if edit.exclude_tools:
                    fields_["exclude_tools"] = list(edit.exclude_tools)
                if edit.clear_tool_inputs:
                    fields_["clear_tool_inputs"] = edit.clear_tool_inputs
            else:
                fields_ = {"type": COMPACT_EDIT, "trigger": trigger}
                if edit.instructions is not None:
                    fields_["instructions"] = edit.instructions
                if edit.pause_after_compaction:
                    fields_["pause_after_compaction"] = True
            edits.append(fields_)
        return {"edits": edits}

    def threshold_values(self, budget: int | None) -> dict[str, int]:
        return {f"{key}.trigger": self.trigger_at(key, budget) for key, _ in self.edits()}

    def threshold_warnings(self, budget: int | None, label: str) -> list[str]:
        """An edit whose trigger is at or above the input budget never acts; compact's cannot go under litellm's
        minimum, so at a budget at or under it compaction never acts whatever the trigger."""
        lines = []
        for key, _ in self.edits() if budget else ():
            value, acting = self.trigger_at(key, budget), self.default_trigger(key, budget)
            if value < budget:
                continue
            if acting >= budget:
                lines.append(f"strategy {label}: {key}.trigger is {value:,} tokens, at or above the {budget:,}-token "
                             f"input budget, and {LITELLM.label} refuses a compact trigger under {acting:,} tokens "
                             "(compact_20260112's minimum), so it never compacts before the context overflows")
            else:
                lines.append(f"strategy {label}: {key}.trigger {value:,} is at or above the {budget:,}-token input "
                             f"budget, so it never acts before the context overflows; {acting:,} "
                             f"({TRIGGER_FRACTIONS[key]:g} x budget, its default) would act")
        return lines

    def profiles_needed(self) -> list[str]:
        return [self.config.context_management_summary_model] if self.config.compact is not None else []

    # -- per run
    def on_run_start(self, ctx: "RunContext") -> None:
        """The edits at this run's budget, and the client's own system prompt (the run's, logged first)."""
        self._ctx = ctx
        self.spec = self.spec_at(ctx.budget())
        view = ctx.view
        first = view.message(view.ids[0]) if view.ids else {}
        self.system: str | None = content_text(first.get("content")) if first.get("role") == "system" else None
        self.converted: dict[int, dict[str, Any]] = {}  # message id -> its logged message as the client sends it
        self.carrier: tuple[int, dict[str, Any]] | None = None  # (message id, compaction block it carries)
        self.pending: dict[str, Any] | None = None  # a compaction block for the next response
        self.tools_of: tuple[Any, list[dict[str, Any]]] = (None, [])

    def before_request(self, ctx: "RunContext") -> None:
        if self._ctx is not ctx:
            self.on_run_start(ctx)
        view = ctx.view
        head = view.ids[0] if view.ids and view.message(view.ids[0]).get("role") == "system" else None
        history = [self.client_message(ctx, cid) for cid in view.ids if cid != head]
        router = SideCallRouter(ctx, self.config.context_management_summary_model, "litellm.compact_20260112")
        token = _SETTINGS.set({self.compact.COMPACT_SUMMARY_MODEL_SETTING_KEY: router.profile})
        try:
            with LITELLM.calling("prepare_context_managed_request", ctx):
                result = run_sync(self.handler.prepare_context_managed_request(
                    model=ctx.main.model, messages=history, tools=self.anthropic_tools(ctx), system=self.system,
                    context_management_spec=self.spec, litellm_metadata=None, additional_drop_params=None,
                    llm_router=router))
        finally:
            _SETTINGS.reset(token)
        router.raise_own()
        if result is None:  # nothing to apply, or litellm skipped a failing compact-only spec: sent as is
            system, messages, applied, block = self.system, history, [], None
        else:
            system, messages, block = result.system, result.messages, result.compaction_block
            applied = result.applied_edits_for_response() or []
        self.record_refusals(ctx, applied)
        wanted: list[Wanted] = []
        if system:
            text = content_text(system)
            kept = head is not None and content_text(view.message(head).get("content")) == text
            wanted.append((head, None) if kept else (None, {"role": "system", "content": text}))
        wanted += [self.entry(ctx, message) for message in messages]
        self.apply(ctx, wanted, applied, block)

    def after_response(self, ctx: "RunContext", result: "LLMResult") -> None:
        """The response litellm prepended a compaction block to: the client keeps the block in it."""
        if self.pending is not None:
            self.carrier = (ctx.last_message_id("agent"), self.pending)
            self.pending = None

    # -- conversion
    def client_message(self, ctx: "RunContext", cid: int) -> dict[str, Any]:
        """The message as the client sends it: as logged (converted once), with the compaction block it carries."""
        converted = self.converted.get(cid)
        if converted is None:
            converted = self.converted[cid] = to_anthropic(ctx.view.messages[cid], cid)
        if self.carrier is not None and self.carrier[0] == cid:
            return {**converted, "content": [self.carrier[1], *converted["content"]]}
        return converted

    def entry(self, ctx: "RunContext", message: Mapping[str, Any]) -> Wanted:
        """A message litellm forwards as a view entry: the logged message where litellm left it as sent."""
        cid = message.get(TAG)
        if cid is None:
            return None, to_ctxbench(message, None)
        original = ctx.view.messages[cid]
        return cid, original if message == self.converted[cid] else to_ctxbench(message, original)

    def anthropic_tools(self, ctx: "RunContext") -> list[dict[str, Any]]:
        if self.tools_of[0] is not ctx.tools:
            self.tools_of = (ctx.tools, _anthropic_tools(ctx.tools))
        return self.tools_of[1]

    # -- back to view ops
    def apply(self, ctx: "RunContext", wanted: list[Wanted], applied: list[dict[str, Any]],
              block: Mapping[str, Any] | None) -> None:
        """Make the view what litellm forwards: one condensation (a compaction block), else one compaction."""
        view = ctx.view
        kept = {cid for cid, _ in wanted if cid is not None}
        dropped = [cid for cid in view.ids if cid not in kept]
        changed = [cid for cid, rendering in wanted if cid is not None and rendering is not None
                   and rendering is not view.message(cid) and rendering != view.message(cid)]
        common = {"library": LITELLM.label, "applied_edits": applied, "message_ids": changed,
                  "cleared_ids": [cid for cid in changed if view.messages[cid].get("role") == "tool"]}
        if block is None:  # litellm cleared results, or (the request after a compaction) dropped what preceded it
            cleared = any(edit.get("type") == CLEAR_EDIT for edit in applied)
            apply_view(ctx, wanted, "compaction", step=CLEAR_STEP if cleared else SLICE_STEP,
                       trigger="input_tokens" if cleared else "compaction_block", dropped_ids=dropped, **common)
            return
        trigger = self.spec["edits"][-1]["trigger"]["value"]  # compact's, sent last
        request = ctx.emit("condensation_request", reason="tokens", boundary=len(ctx.log) - 1, library=LITELLM.label,
                           trigger_tokens=trigger)
        # apply_view logs the messages litellm made first, in order: the system prompt with the summary first
        summary_id = len(ctx.log) if wanted and wanted[0][0] is None else None
        apply_view(ctx, wanted, "condensation", kind="summary", trigger="input_tokens", trigger_tokens=trigger,
                   request_id=request["id"], forgotten_ids=dropped, summary_id=summary_id, **common)
        self.pending = dict(block)

    @staticmethod
    def record_refusals(ctx: "RunContext", applied: list[dict[str, Any]]) -> None:
        """A compaction litellm asked for but could not make (its summary call failed, or held no summary)."""
        for edit in applied:
            if edit.get("type") == COMPACT_EDIT and edit.get("error"):
                ctx.emit("condensation_refused", reason=edit["error"], library=LITELLM.label, applied_edit=edit)
