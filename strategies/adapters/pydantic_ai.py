"""pydantic-ai-harness (paf's capabilities), run by ctxbench: TieredCompaction, ToolOutputLimits,
WarnOnCacheBusts.

Each adapter builds the library's own capability from plain config (its validators run in
`from_config`), feeds it the current view as pydantic-ai messages through the hook a live agent
calls (`before_model_request`, `after_tool_execute`, `after_model_request`), and turns what it
returns into view ops or events. The library is imported lazily (`Library.load`), so this module
imports without it; a saved log replays without it (the view ops and the offloaded texts are in
the log).

The one model seam: a pydantic-ai `FunctionModel` standing for ctxbench's main model (its name, its
context window as the profile's window) whose every call is a ctxbench side call of the
`summary_profile` profile (counted, cached, faulted, priced, mocked offline).
"""
from __future__ import annotations

import contextlib
import dataclasses
import json
import threading
import warnings
from typing import TYPE_CHECKING, Any, ClassVar, Iterator, Mapping, Sequence

from harness.core.errors import ConfigError
from strategies.adapters import PYDANTIC_AI_HARNESS, Library, apply_view, run_sync, warnings_kept
from strategies.base import Strategy
from strategies.thresholds import OfBudget, default_text, scaled
from tasks.base import ToolCall, ToolResult, ToolSpec, tool_error

if TYPE_CHECKING:
    from harness.conversation.context import RunContext
    from harness.models.llm import LLMResult
    from harness.models.usage import Usage
    from harness.conversation.view import Message

SUMMARY_PROFILE = "summary"


# ----- loading the library without letting it change ctxbench ------------------------------------
def load(where: str) -> dict[str, Any]:
    """Import the library's modules, restoring the warnings filters its imports add (isolation)."""
    with warnings_kept():
        modules = {name: PYDANTIC_AI_HARNESS.load(where, f"pydantic_ai_harness.{name}")
                   for name in ("compaction", "tool_output_limits", "warn_on_cache_busts")}
        for name in ("pydantic_ai", "pydantic_ai.messages", "pydantic_ai.models", "pydantic_ai.models.function",
                     "pydantic_ai.profiles", "pydantic_ai.tools", "pydantic_ai.usage", "pydantic_ai.exceptions"):
            modules[name] = PYDANTIC_AI_HARNESS.load(where, name)
    return modules


def build(library: Library, where: str, cls: Any, fields: Mapping[str, Any]) -> Any:
    """Construct a library object with its own validators; a refused or unknown field is a ConfigError."""
    known = {f.name for f in dataclasses.fields(cls) if f.init}
    unknown = sorted(set(fields) - known)
    if unknown:
        raise ConfigError(f"{where}: unknown option {unknown[0]!r} for {cls.__name__}; "
                          f"{cls.__name__} takes {', '.join(sorted(known))}")
    with library.configuring(where):
        return cls(**fields)


def mapping(data: Any, where: str) -> dict[str, Any]:
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        raise ConfigError(f"{where}: expected a mapping of options, got {data!r}")
    return dict(data)


# ----- the model seam ----------------------------------------------------------------------------
class SideCallModel:
    """A pydantic-ai model whose calls are ctxbench side calls; bound to a run in `bind`."""

    def __init__(self, lib: dict[str, Any], profile: str, purpose: str):
        self.lib, self.profile, self.purpose = lib, profile, purpose
        self.ctx: "RunContext | None" = None

    def bind(self, ctx: "RunContext") -> Any:
        """The FunctionModel for this run: ctxbench's main model name and window."""
        self.ctx = ctx
        profile = self.lib["pydantic_ai.profiles"].ModelProfile(context_window=ctx.budget())
        return self.lib["pydantic_ai.models.function"].FunctionModel(
            self.respond, model_name=ctx.main.model, profile=profile)

    def respond(self, messages: list[Any], info: Any) -> Any:
        """The library's request, as chat messages, answered by ctx.call_llm."""
        assert self.ctx is not None, "SideCallModel used before bind()"
        result = self.ctx.call_llm(self.profile, chat_messages(self.lib, messages), self.purpose)
        text = result.message.get("content") or ""
        mod = self.lib["pydantic_ai.messages"]
        return mod.ModelResponse(parts=[mod.TextPart(text)], model_name=self.ctx.profiles[self.profile].model)


def chat_messages(lib: dict[str, Any], messages: list[Any]) -> list["Message"]:
    """pydantic-ai messages (a library's side request) as chat messages: instructions first."""
    mod = lib["pydantic_ai.messages"]
    out: list[Message] = []
    for message in messages:
        if isinstance(message, mod.ModelRequest):
            if message.instructions:
                out.append({"role": "system", "content": message.instructions})
            for part in message.parts:
                role = "system" if isinstance(part, mod.SystemPromptPart) else "user"
                content = part.content if isinstance(part.content, str) else str(part.content)
                out.append({"role": role, "content": content})
        else:
            out.append({"role": "assistant", "content": "".join(
                p.content for p in message.parts if isinstance(p, mod.TextPart))})
    return out


def run_context(lib: dict[str, Any], ctx: "RunContext", model: Any, messages: list[Any]) -> Any:
    """A pydantic-ai RunContext as a live agent passes it to a capability hook."""
    usage = lib["pydantic_ai.usage"].RunUsage(requests=ctx.requests)
    return lib["pydantic_ai.tools"].RunContext(deps=None, model=model, usage=usage, messages=messages,
                                               run_id=ctx.run_id, run_step=ctx.requests + 1)


def request_context(lib: dict[str, Any], model: Any, messages: list[Any], parameters: Any) -> Any:
    """The ModelRequestContext of the next main request: its messages and ctxbench's tool schemas (`parameters`,
    from ToolParameters)."""
    return lib["pydantic_ai.models"].ModelRequestContext(model=model, messages=list(messages), model_settings=None,
                                                         model_request_parameters=parameters)


class ToolParameters:
    """ctxbench's tool schemas as the library's ModelRequestParameters, built once per set of schemas.

    Ours: a run's schemas are set once, before its first request (`RunContext.tools`, hashed
    and counted once there too), and the library only reads the parameters of a request context, so one object
    serves every request of the run; built per request, it was ~15 us of ctxbench's CPU a request.
    """

    def __init__(self, lib: dict[str, Any]):
        self.lib = lib
        self.schemas: list[dict[str, Any]] | None = None  # the schemas `parameters` was built from
        self.parameters: Any = None

    def of(self, ctx: "RunContext") -> Any:
        if ctx.tools is not self.schemas:
            tool_defs = [self.lib["pydantic_ai.tools"].ToolDefinition(
                name=s["function"]["name"], description=s["function"].get("description"),
                parameters_json_schema=s["function"].get("parameters") or {}) for s in ctx.tools]
            self.parameters = self.lib["pydantic_ai.models"].ModelRequestParameters(function_tools=tool_defs)
            self.schemas = ctx.tools
        return self.parameters


# ----- conversion: ctxbench messages <-> pydantic-ai messages ------------------------------------
class Converter:
    """The view as pydantic-ai messages, kept incrementally.

    Each ctxbench message converts once per rendering (keyed by message id and the identity of its
    current rendering) to one request part or one ModelResponse; consecutive request parts share a
    ModelRequest, as pydantic-ai builds them. While the view only grows, the mirrored list is extended;
    after a compaction the library's own list is kept (as a live agent keeps `ctx.messages`).
    """

    def __init__(self, lib: dict[str, Any]):
        self.lib = lib
        self.mod = lib["pydantic_ai.messages"]
        self.cache: dict[int, tuple[Any, Any]] = {}  # message id -> (rendering, part or ModelResponse)
        self.owner: dict[int, tuple[Any, int]] = {}  # id(part or response) -> (it, message id)
        self.usage: dict[int, "Usage"] = {}  # agent message id -> the usage its request reported
        self.messages: list[Any] = []
        self.ids: list[int] = []
        self.edits = -1

    def history(self, ctx: "RunContext") -> list[Any]:
        view = ctx.view
        grows = view.edits == self.edits and len(self.ids) <= len(view.ids) and \
            (not self.ids or view.ids[len(self.ids) - 1] == self.ids[-1])
        if not grows:
            self.messages, self.ids = [], []
        for message_id in view.ids[len(self.ids):]:
            self.append(message_id, self.convert(ctx, message_id))
        self.edits = view.edits
        return self.messages

    def append(self, message_id: int, item: Any) -> None:
        self.ids.append(message_id)
        if isinstance(item, self.mod.ModelResponse):
            self.messages.append(item)
        elif self.messages and isinstance(self.messages[-1], self.mod.ModelRequest):
            last = self.messages[-1]
            self.messages[-1] = dataclasses.replace(last, parts=[*last.parts, item])
        else:
            self.messages.append(self.mod.ModelRequest(parts=[item]))

    def convert(self, ctx: "RunContext", message_id: int) -> Any:
        rendering = ctx.view.message(message_id)
        cached = self.cache.get(message_id)
        if cached is not None and cached[0] is rendering:
            return cached[1]
        item = self.to_library(ctx, message_id, rendering)
        self.remember(message_id, rendering, item)
        return item

    def remember(self, message_id: int, rendering: "Message", item: Any) -> None:
        self.cache[message_id] = (rendering, item)
        self.owner[id(item)] = (item, message_id)

    def to_library(self, ctx: "RunContext", message_id: int, message: "Message") -> Any:
        mod, role = self.mod, message.get("role")
        content = message.get("content")
        text = content if isinstance(content, str) else json.dumps(content) if content is not None else ""
        if role == "system":
            return mod.SystemPromptPart(text)
        if role == "tool":
            return mod.ToolReturnPart(tool_name=message.get("name") or "", content=text,
                                      tool_call_id=message.get("tool_call_id") or "")
        if role == "assistant":
            parts: list[Any] = [mod.TextPart(text)] if text else []
            for call in message.get("tool_calls") or ():
                function = call.get("function") or {}
                parts.append(mod.ToolCallPart(function.get("name") or "", function.get("arguments") or "{}",
                                              tool_call_id=call.get("id") or ""))
            return mod.ModelResponse(parts=parts, usage=self.request_usage(message_id),
                                     model_name=ctx.main.model, provider_response_id=f"ctxbench:{message_id}")
        return mod.UserPromptPart(text)

    def request_usage(self, message_id: int) -> Any:
        """The usage the provider reported for the request that produced this reply (the library's anchor)."""
        usage = self.usage.get(message_id)
        RequestUsage = self.lib["pydantic_ai.usage"].RequestUsage
        if usage is None:
            return RequestUsage()
        return RequestUsage(input_tokens=usage.input_tokens or 0, output_tokens=usage.output_tokens or 0,
                            cache_read_tokens=usage.cached_tokens or 0,
                            cache_write_tokens=usage.cache_write_tokens or 0)

    def wanted(self, ctx: "RunContext", compacted: list[Any]) -> list[tuple[int | None, "Message | None"]]:
        """The library's history as (message id or None, new rendering or None) entries, in its order."""
        out: list[tuple[int | None, Message | None]] = []
        seen: set[int] = set()
        for message in compacted:
            if isinstance(message, self.mod.ModelResponse):
                entries = [self.response_entry(ctx, message)]
            else:
                entries = [self.part_entry(ctx, part) for part in message.parts]
            for message_id, rendering, item in entries:
                if message_id is not None and message_id in seen:
                    continue
                if message_id is not None:
                    seen.add(message_id)
                out.append((message_id, rendering))
        return out

    def known(self, item: Any) -> int | None:
        entry = self.owner.get(id(item))
        return entry[1] if entry is not None and entry[0] is item else None

    def part_entry(self, ctx: "RunContext", part: Any) -> tuple[int | None, "Message | None", Any]:
        message_id = self.known(part)
        if message_id is not None:
            return message_id, None, part
        if isinstance(part, self.mod.ToolReturnPart):
            message_id = self.tool_message(ctx, part.tool_call_id)
            if message_id is not None:
                rendering = {**ctx.view.message(message_id), "content": str(part.content)}
                return message_id, rendering, part
        role = "system" if isinstance(part, self.mod.SystemPromptPart) else "user"
        content = part.content if isinstance(getattr(part, "content", None), str) else str(part.content)
        return None, {"role": role, "content": content}, part

    def response_entry(self, ctx: "RunContext", response: Any) -> tuple[int | None, "Message | None", Any]:
        message_id = self.known(response)
        if message_id is not None:
            return message_id, None, response
        tag = response.provider_response_id or ""
        message_id = int(tag.split(":", 1)[1]) if tag.startswith("ctxbench:") else None
        text = "".join(p.content for p in response.parts if isinstance(p, self.mod.TextPart))
        calls = [{"id": p.tool_call_id, "type": "function",
                  "function": {"name": p.tool_name, "arguments": p.args_as_json_str()}}
                 for p in response.parts if isinstance(p, self.mod.ToolCallPart)]
        base = ctx.view.message(message_id) if message_id is not None else {"role": "assistant"}
        rendering = {**base, "content": text or None}
        if calls:
            rendering["tool_calls"] = calls
        return message_id, rendering, response

    def tool_message(self, ctx: "RunContext", tool_call_id: str) -> int | None:
        for message_id in ctx.view.ids:
            message = ctx.view.message(message_id)
            if message.get("role") == "tool" and message.get("tool_call_id") == tool_call_id:
                return message_id
        return None

    def adopt(self, ctx: "RunContext", compacted: list[Any], wanted: Sequence[tuple[int | None, Any]]) -> None:
        """After the view became the library's history: keep its list and its objects as the mirror."""
        ids = ctx.view.ids
        for message in compacted:
            items = [message] if isinstance(message, self.mod.ModelResponse) else message.parts
            for item in items:
                message_id = self.known(item)
                if message_id is None:
                    message_id = self.identify(ctx, item)
                if message_id is not None:
                    self.remember(message_id, ctx.view.message(message_id), item)
        self.messages, self.ids, self.edits = list(compacted), list(ids), ctx.view.edits
        if len({i for i in self.ids}) != sum(len(m.parts) if isinstance(m, self.mod.ModelRequest) else 1
                                             for m in compacted):
            self.edits = -1  # the library's list does not map one to one: rebuild from the view next time

    def identify(self, ctx: "RunContext", item: Any) -> int | None:
        if isinstance(item, self.mod.ModelResponse):
            tag = item.provider_response_id or ""
            return int(tag.split(":", 1)[1]) if tag.startswith("ctxbench:") else None
        if isinstance(item, self.mod.ToolReturnPart):
            return self.tool_message(ctx, item.tool_call_id)
        return None


# ----- TieredCompaction ----------------------------------------------------------------------------
TIER_CLASSES = {"clamp_oversized_messages": "ClampOversizedMessages", "clear_tool_results": "ClearToolResults",
                "sliding_window": "SlidingWindowCompaction"}
# Ours (the library has no default): triggers mirroring compaction_ladder's defaults (seed 002's
# `compact:` block), used for a tier given without any trigger field of its own. Token values are
# fractions of the run's input budget (strategies.thresholds), the ladder's at a 200k window.
TIER_TRIGGERS: dict[str, dict[str, Any]] = {
    "clamp_oversized_messages": {"max_part_tokens": OfBudget(0.25)},  # the ladder: over half the 0.5 target
    "clear_tool_results": {"max_fraction": 0.5},  # bypassed inside TieredCompaction; required to build
    "sliding_window": {"max_messages": 100},
}
TRIGGER_FIELDS = {"clamp_oversized_messages": ("max_part_tokens", "max_part_chars"),
                  "clear_tool_results": ("max_messages", "max_tokens", "max_fraction"),
                  "sliding_window": ("max_messages", "max_tokens", "max_fraction")}
# Ours: the default tier list and target, mirroring compaction_ladder (target 0.5 of the window; keep 6
# pairs; clear at least 0.05 of the window; window 100 messages down to 20).
DEFAULT_TIERS: list[dict[str, Any]] = [
    {"kind": "clamp_oversized_messages"},
    {"kind": "clear_tool_results", "keep_pairs": 6, "min_clear_tokens": OfBudget(0.05)},
    {"kind": "sliding_window", "keep_messages": 20},
]
DEFAULT_TARGET_FRACTION = 0.5


class TieredCompactionAdapter(Strategy):
    """pydantic-ai-harness's `TieredCompaction` over `ClampOversizedMessages`, `ClearToolResults`,
    `SlidingWindowCompaction`, run before every main request as its `before_model_request` does.

    Config: TieredCompaction's fields (`target_tokens` | `target_fraction`, `context_window`,
    `fallback_context_window`) and `tiers`, a list of {"kind": clamp_oversized_messages |
    clear_tool_results | sliding_window, <the tier's own fields>}. Ours, where the library has no
    default: `target_fraction` 0.5 (when no `target_tokens`: 100,000 at a 200k window), the tier list
    DEFAULT_TIERS and each tier's trigger TIER_TRIGGERS, mirroring compaction_ladder's defaults; their
    token values are fractions of the run's input budget, so the capability is rebuilt at run start.
    """

    name = "pai.tiered_compaction"
    other_keys = {"target_tokens": "token target (absolute)",
                  "target_fraction": f"target as a fraction of context_window (ours when no target_tokens: "
                                     f"{default_text(DEFAULT_TARGET_FRACTION)})",
                  "context_window": "the window the fraction is of (default: the run's input budget)",
                  "fallback_context_window": "when none is known",
                  "tiers": "list of {kind: clamp_oversized_messages | clear_tool_results | sliding_window, "
                           "<the tier's fields>} (default: clamp over "
                           f"{default_text(0.25)} tokens a part, clear keeping 6 pairs and at least "
                           f"{default_text(0.05)} tokens, window of 100 messages down to 20)"}
    summary = "the library's TieredCompaction (clamp, clear tool results, sliding window)"
    source = "pydantic-ai-harness compaction (the library's code)"
    library: ClassVar[Library] = PYDANTIC_AI_HARNESS

    def __init__(self, lib: dict[str, Any], fields: dict[str, Any], tiers: list[Any], where: str):
        self.lib, self.fields, self.tier_data, self.where = lib, fields, tiers, where
        self.scaled: dict[str, int] = {}
        super().__init__(self.capability_at(None))  # built (so validated) now, at the reference budget
        self.capability = self.config
        self.converter = Converter(lib)
        self.parameters = ToolParameters(lib)
        self.model_seam = SideCallModel(lib, SUMMARY_PROFILE, "pai.tiered_compaction")
        self.model: Any = None

    @classmethod
    def from_config(cls, data: Mapping[str, Any] | None, where: str | None = None) -> "TieredCompactionAdapter":
        where = where or f"strategy {cls.name}"
        lib = load(where)
        fields = mapping(data, where)
        tiers = fields.pop("tiers", DEFAULT_TIERS)
        if not isinstance(tiers, list):
            raise ConfigError(f"{where}.tiers: expected a list of {{kind, ...}} tiers, got {tiers!r}")
        if "target_tokens" not in fields and fields.get("target_fraction") is None:
            fields["target_fraction"] = DEFAULT_TARGET_FRACTION
        return cls(lib, fields, tiers, where)

    def capability_at(self, budget: int | None) -> Any:
        """The library's TieredCompaction with our budget-scaled defaults resolved at `budget`."""
        compaction, scaled = self.lib["compaction"], {}
        tiers = [build_tier(compaction, tier, f"{self.where}.tiers[{i}]", budget, scaled.setdefault(f"tiers[{i}]", {}))
                 for i, tier in enumerate(self.tier_data)]
        self.scaled = {f"{tier}.{key}": value for tier, values in scaled.items() for key, value in values.items()}
        return build(self.library, self.where, compaction.TieredCompaction, {**self.fields, "tiers": tiers})

    def target(self, budget: int | None) -> int:
        """The token target TieredCompaction works to at this budget (as the library resolves a fraction)."""
        capability = self.capability
        if capability.target_tokens is not None:
            return capability.target_tokens
        return scaled(capability.target_fraction, capability.context_window or budget)

    def threshold_values(self, budget: int | None) -> dict[str, int]:
        self.capability_at(budget)
        return {"target_tokens": self.target(budget), **self.scaled}

    def threshold_warnings(self, budget: int | None, label: str) -> list[str]:
        target = self.fields.get("target_tokens")
        if not budget or not isinstance(target, int) or target < budget:
            return []
        return [f"strategy {label}: target_tokens {target:,} is at or above the {budget:,}-token input budget, so "
                f"it never acts before the context overflows; target_fraction {DEFAULT_TARGET_FRACTION:g} "
                f"({scaled(DEFAULT_TARGET_FRACTION, budget):,} tokens) would act"]

    def on_run_start(self, ctx: "RunContext") -> None:
        self.capability = self.capability_at(ctx.budget())
        self.converter = Converter(self.lib)
        self.model = self.model_seam.bind(ctx)

    def after_response(self, ctx: "RunContext", result: "LLMResult") -> None:
        self.converter.usage[ctx.last_message_id("agent")] = result.usage

    def before_request(self, ctx: "RunContext") -> None:
        history = self.converter.history(ctx)
        pctx = run_context(self.lib, ctx, self.model, list(history))  # the library rewrites it in place
        request = request_context(self.lib, self.model, history, self.parameters.of(ctx))  # ours: outside its timer
        with self.library.calling("TieredCompaction.before_model_request", ctx):
            run_sync(self.capability.before_model_request(pctx, request))
        compacted = pctx.messages
        if compacted == history:
            return
        wanted = self.converter.wanted(ctx, compacted)
        before_ids = list(ctx.view.ids)
        event = apply_view(ctx, wanted, "compaction", step="tiered", trigger="per_request", library=self.library.label,
                           target_tokens=self.target(ctx.budget()), **describe(wanted, before_ids))
        if event is not None:
            self.converter.adopt(ctx, compacted, wanted)


def build_tier(compaction: Any, data: Any, where: str, budget: int | None, scaled_values: dict[str, int]) -> Any:
    """One tier from {"kind": ..., fields}: the library's class and validators, our trigger if none given;
    our budget-scaled defaults resolved at `budget` and put in `scaled_values`."""
    fields = mapping(data, where)
    kind = fields.pop("kind", None)
    if kind not in TIER_CLASSES:
        raise ConfigError(f"{where}.kind: expected one of {', '.join(TIER_CLASSES)}, got {kind!r}")
    if not any(fields.get(name) is not None for name in TRIGGER_FIELDS[kind]):
        fields = {**TIER_TRIGGERS[kind], **fields}
    for name, value in fields.items():
        if isinstance(value, OfBudget):
            fields[name] = scaled_values[name] = scaled(value.fraction, budget)
    if "exclude_tools" in fields:
        if not isinstance(fields["exclude_tools"], (list, tuple, set, frozenset)):
            raise ConfigError(f"{where}.exclude_tools: expected a list of tool names")
        fields["exclude_tools"] = frozenset(fields["exclude_tools"])
    return build(PYDANTIC_AI_HARNESS, where, getattr(compaction, TIER_CLASSES[kind]), fields)


def describe(wanted: Sequence[tuple[int | None, Any]], before_ids: list[int]) -> dict[str, Any]:
    """What changed, by kind: tool results cleared, assistant messages clamped, messages dropped or added."""
    replaced = [(i, r) for i, r in wanted if i is not None and r is not None]
    kept = {i for i, _ in wanted if i is not None}
    return {"cleared_ids": [i for i, r in replaced if r.get("role") == "tool"],
            "clamped_ids": [i for i, r in replaced if r.get("role") == "assistant"],
            "dropped_ids": [i for i in before_ids if i not in kept],
            "message_ids": [i for i, _ in replaced]}


# ----- ToolOutputLimits ----------------------------------------------------------------------------
class RunStore:
    """The library's `OverflowStore` backed by the run: spills kept in memory and, through the
    `tool_output_offloaded` event, in the log (so replay needs no files and none are left behind)."""

    def __init__(self) -> None:
        self.data: dict[str, bytes] = {}

    async def write(self, key: str, data: bytes) -> str:
        self.data[key] = data
        return key

    async def read(self, handle: str) -> bytes:
        if handle not in self.data:
            raise FileNotFoundError(handle)
        return self.data[handle]


ACTION_KINDS = {"spill": "Spill", "truncate": "Truncate", "summarize": "Summarize", "passthrough": "Passthrough"}


class ToolOutputLimitsAdapter(Strategy):
    """pydantic-ai-harness's `ToolOutputLimits`: its bands reduce a tool result as it is produced
    (`after_tool_execute`), its `read_tool_result` tool pages spills back.

    Config: ToolOutputLimits' fields `bands` ([{"over": N, "action": {"kind": spill | truncate |
    summarize | passthrough, <the action's fields>, "then": {...}}}]; the library's default band when
    absent), `per_tool` ({tool: bands}), `tool_filter` ("all" or tool names), `over_tokens`,
    `strip_ansi`, `summary_prompt`, `serializer` ("indented_json" | "json_lines"); and ours,
    `summary_profile` (default "summary"): the ctxbench profile a `summarize` band's model calls go to.
    """

    name = "pai.tool_output_limits"
    other_keys = {"bands": "[{over: N, action: {kind: spill | truncate | summarize | passthrough, ...}}]",
                  "per_tool": "{tool: bands}: replaces the band list for these tools",
                  "tool_filter": "\"all\" or the tool names it touches", "over_tokens": "measure sizes in tokens",
                  "strip_ansi": "strip ANSI escapes first", "summary_prompt": "a summarize band's prompt",
                  "serializer": "indented_json | json_lines",
                  "summary_profile": "ours: the profile a summarize band calls (default summary)"}
    summary = "the library's ToolOutputLimits bands (spill, truncate, summarize) and read_tool_result"
    source = "pydantic-ai-harness tool_output_limits (the library's code)"
    library: ClassVar[Library] = PYDANTIC_AI_HARNESS

    def __init__(self, capability: Any, lib: dict[str, Any], store: RunStore, model_seam: SideCallModel):
        super().__init__(capability)
        self.capability, self.lib, self.store, self.model_seam = capability, lib, store, model_seam
        self.model: Any = None
        self.read_tool = capability.get_toolset().tools[lib["tool_output_limits"].READ_TOOL_NAME]
        self.read_name = self.read_tool.name  # asked per tool result: Tool.tool_def builds a definition per read

    @classmethod
    def from_config(cls, data: Mapping[str, Any] | None, where: str | None = None) -> "ToolOutputLimitsAdapter":
        where = where or f"strategy {cls.name}"
        lib = load(where)
        tol = lib["tool_output_limits"]
        fields = mapping(data, where)
        profile = fields.pop("summary_profile", SUMMARY_PROFILE)
        if not isinstance(profile, str):
            raise ConfigError(f"{where}.summary_profile: expected a profile name, got {profile!r}")
        seam = SideCallModel(lib, profile, "pai.tool_output_limits")
        if "bands" in fields:
            fields["bands"] = build_bands(tol, fields["bands"], f"{where}.bands")
        if "per_tool" in fields:
            per_tool = mapping(fields["per_tool"], f"{where}.per_tool")
            fields["per_tool"] = {name: build_bands(tol, bands, f"{where}.per_tool.{name}")
                                  for name, bands in per_tool.items()}
        if "serializer" in fields:
            presets = {"indented_json": tol.indented_json, "json_lines": tol.json_lines}
            if fields["serializer"] not in presets:
                raise ConfigError(f"{where}.serializer: expected one of {', '.join(presets)}, got {fields['serializer']!r}")
            fields["serializer"] = presets[fields["serializer"]]
        if isinstance(fields.get("tool_filter"), list):
            fields["tool_filter"] = list(fields["tool_filter"])
        for name in ("store", "tokenizer", "id"):
            if name in fields:
                raise ConfigError(f"{where}.{name}: not configurable here (the adapter supplies it)")
        store = RunStore()
        capability = build(cls.library, where, tol.ToolOutputLimits, {**fields, "store": store})
        return cls(capability, lib, store, seam)

    def tools(self) -> list[ToolSpec]:
        definition = self.read_tool.tool_def
        return [ToolSpec(definition.name, definition.description or "", definition.parameters_json_schema)]

    def on_run_start(self, ctx: "RunContext") -> None:
        self.store.data.clear()
        self.model = self.model_seam.bind(ctx)
        with self.library.calling("ToolOutputLimits.before_run", ctx):
            run_sync(self.capability.before_run(run_context(self.lib, ctx, self.model, [])))

    def transform_tool_result(self, ctx: "RunContext", call: ToolCall, result: ToolResult) -> ToolResult:
        if call.name == self.read_name or result.is_error:
            return result  # the library exempts its own reader; errors are raised, never returned, live
        mod = self.lib["pydantic_ai.messages"]
        part = mod.ToolCallPart(call.name, call.arguments or "{}", tool_call_id=call.id)
        tool_def = self.lib["pydantic_ai.tools"].ToolDefinition(name=call.name)
        pctx = run_context(self.lib, ctx, self.model, [])
        with self.library.calling("ToolOutputLimits.after_tool_execute", ctx):
            reduced = run_sync(self.capability.after_tool_execute(
                pctx, call=part, tool_def=tool_def, args=call.args or {}, result=result.content))
        if reduced is result.content:
            return result
        shown = reduced.return_value if isinstance(reduced, mod.ToolReturn) else reduced
        shown = shown if isinstance(shown, str) else json.dumps(shown)
        metadata = reduced.metadata if isinstance(reduced, mod.ToolReturn) else None
        handle = (metadata or {}).get("overflow_handle")
        ctx.emit("tool_output_offloaded" if handle else "tool_output_reduced", result_id=handle, tool=call.name,
                 tool_call_id=call.id, total_chars=len(result.content), shown_chars=len(shown),
                 library=self.library.label, content=result.content)
        return ToolResult(shown, is_error=result.is_error)

    def handle_tool_call(self, ctx: "RunContext", call: ToolCall) -> ToolResult | None:
        if call.name != self.read_name:
            return None
        if call.parse_error is not None:
            return tool_error(f"{call.name}: {call.parse_error}")
        pctx = run_context(self.lib, ctx, self.model, [])
        schema = self.read_tool.function_schema
        retry = self.lib["pydantic_ai.exceptions"].ModelRetry
        try:
            args = schema.validator.validate_python(call.args or {})
        except ValueError as exc:
            return tool_error(f"{call.name}: {exc}")
        try:
            with self.library.calling("ToolOutputLimits.read_tool_result", ctx):
                text = run_sync(schema.call(args, pctx))
        except Exception as exc:
            cause = exc.__cause__ if isinstance(exc.__cause__, retry) else exc
            if isinstance(cause, retry):
                return tool_error(f"{call.name}: {cause.message}")
            raise
        return ToolResult(text)


def build_bands(tol: Any, data: Any, where: str) -> list[Any]:
    if not isinstance(data, list):
        raise ConfigError(f"{where}: expected a list of {{over, action}} bands, got {data!r}")
    bands = []
    for index, band in enumerate(data):
        band_where = f"{where}[{index}]"
        fields = mapping(band, band_where)
        if "action" not in fields:
            raise ConfigError(f"{band_where}.action: a band needs an action")
        fields["action"] = build_action(tol, fields["action"], f"{band_where}.action")
        band = build(PYDANTIC_AI_HARNESS, band_where, tol.Band, fields)
        with PYDANTIC_AI_HARNESS.configuring(band_where):
            tol.ToolOutputLimits._prepare_bands([band])  # the library checks a band's `over` there
        bands.append(band)
    return bands


def build_action(tol: Any, data: Any, where: str) -> Any:
    fields = mapping(data, where)
    kind = fields.pop("kind", None)
    if kind not in ACTION_KINDS:
        raise ConfigError(f"{where}.kind: expected one of {', '.join(ACTION_KINDS)}, got {kind!r}")
    if fields.get("then") is not None:
        fields["then"] = build_action(tol, fields["then"], f"{where}.then")
    if "strategy" in fields:
        try:
            fields["strategy"] = tol.TruncationStrategy(fields["strategy"])
        except ValueError as exc:
            raise ConfigError(f"{where}.strategy: {exc}") from exc
    if kind == "summarize" and ("model" in fields or "summarize" in fields):
        raise ConfigError(f"{where}: a summarize band's model is ctxbench's summary profile "
                          "(set summary_profile on the strategy)")
    return build(PYDANTIC_AI_HARNESS, where, getattr(tol, ACTION_KINDS[kind]), fields)


# ----- WarnOnCacheBusts ----------------------------------------------------------------------------
_WARNINGS_LOCK = threading.Lock()


@contextlib.contextmanager
def captured_warnings() -> Iterator[list[warnings.WarningMessage]]:
    """The library's warnings, caught (one thread at a time: catch_warnings is process-wide)."""
    with _WARNINGS_LOCK, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield caught


class WarnOnCacheBustsAdapter(Strategy):
    """pydantic-ai-harness's `WarnOnCacheBusts`, observe-only: fed each main response's usage through
    `after_model_request`; each CacheBustWarning it gives becomes a `cache_bust_warning` event.

    Config: the library's fields (`min_missed_ratio`, `min_missed_tokens`, and the deprecated
    `collapse_ratio`, `min_prefix_tokens`, `cache_ttl_seconds`), its defaults.
    """

    name = "pai.warn_on_cache_busts"
    other_keys = {"min_missed_ratio": "warn when a request falls short of the established prefix by more "
                                      "than this fraction of it (library default 0.05)",
                  "min_missed_tokens": "... and by at least this many tokens (library default 2000)",
                  "collapse_ratio": "deprecated", "min_prefix_tokens": "deprecated", "cache_ttl_seconds": "deprecated"}
    summary = "observe-only: the library's WarnOnCacheBusts fed each response's usage"
    source = "pydantic-ai-harness warn_on_cache_busts (the library's code)"
    standalone = False
    library: ClassVar[Library] = PYDANTIC_AI_HARNESS

    def __init__(self, capability: Any, lib: dict[str, Any]):
        super().__init__(capability)
        self.capability, self.lib = capability, lib
        self.parameters = ToolParameters(lib)
        self.run_capability: Any = None
        self.model: Any = None

    @classmethod
    def from_config(cls, data: Mapping[str, Any] | None, where: str | None = None) -> "WarnOnCacheBustsAdapter":
        where = where or f"strategy {cls.name}"
        lib = load(where)
        with captured_warnings():  # its deprecation warnings for deprecated fields stay its own
            capability = build(cls.library, where, lib["warn_on_cache_busts"].WarnOnCacheBusts, mapping(data, where))
        return cls(capability, lib)

    def on_run_start(self, ctx: "RunContext") -> None:
        self.model = SideCallModel(self.lib, SUMMARY_PROFILE, "pai.warn_on_cache_busts").bind(ctx)
        with self.library.calling("WarnOnCacheBusts.for_run", ctx):
            self.run_capability = run_sync(self.capability.for_run(run_context(self.lib, ctx, self.model, [])))

    def after_response(self, ctx: "RunContext", result: "LLMResult") -> None:
        mod = self.lib["pydantic_ai.messages"]
        usage = self.lib["pydantic_ai.usage"].RequestUsage(
            input_tokens=result.usage.input_tokens or 0, output_tokens=result.usage.output_tokens or 0,
            cache_read_tokens=result.usage.cached_tokens or 0, cache_write_tokens=result.usage.cache_write_tokens or 0)
        response = mod.ModelResponse(parts=[], usage=usage, model_name=ctx.main.model, provider_name="ctxbench")
        pctx = run_context(self.lib, ctx, self.model, [])
        request = request_context(self.lib, self.model, [], self.parameters.of(ctx))  # ours: outside its timer
        with captured_warnings() as caught, self.library.calling("WarnOnCacheBusts.after_model_request", ctx):
            run_sync(self.run_capability.after_model_request(pctx, request_context=request, response=response))
        bust = self.lib["warn_on_cache_busts"].CacheBustWarning
        for item in caught:
            warning = item.message
            if isinstance(warning, bust):
                ctx.emit("cache_bust_warning", request=ctx.requests, cached_tokens=warning.cache_read_tokens,
                         established_prefix_tokens=warning.established_tokens, missed_tokens=warning.missed_tokens,
                         likely_cause=warning.reason, library=self.library.label, message=str(warning))
            else:
                ctx.emit("library_warning", request=ctx.requests, category=type(warning).__name__,
                         library=self.library.label, message=str(warning))
