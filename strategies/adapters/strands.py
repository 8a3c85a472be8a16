"""Strands Agents' conversation managers (strands-agents `strands.agent.conversation_manager`), run by ctxbench:
`strands.sliding_window` (SlidingWindowConversationManager) and `strands.summarizing`
(SummarizingConversationManager).

The manager is the library's own object, registered on a real Strands `Agent` whose `messages` mirror the
view, and it is driven at the moments Strands' agent loop drives it (paths under strands/):

* before each model call (event_loop/event_loop.py:520-535 `_handle_model_execution`): the agent estimates the
  input (`_estimate_input_tokens`, :126-166) and fires `BeforeModelCallEvent` through its hook registry, which
  runs the manager's proactive compression (agent/conversation_manager/conversation_manager.py:112-144) and the
  sliding window's `per_turn` (sliding_window_conversation_manager.py:97-125). Here: `before_request`.
* at the end of an invocation (agent/agent.py:1766, `_run_loop`'s finally): `apply_management`. Here: after a
  response without tool calls (the agent's turn ended).
* on a context-window overflow (agent/agent.py:1913-1921 `_execute_event_loop_cycle`): `reduce_context(e=...)`
  and the cycle again. Here: `on_context_window_error`, then the runner retries; the manager raising
  ContextWindowOverflowException (it cannot reduce) ends the run `context_overflow`, as the agent raises it.

Conversion (ours, Strands' message format, types/content.py): the view's leading system messages are the agent's
system prompt (never managed); a user message is a user message with one text block; an assistant message holds
a text block and one toolUse block per tool call (its input the parsed arguments), with the usage its request
reported as `metadata.usage` (what the agent attaches, event_loop.py:648, and its estimate reads); consecutive
tool results are one user message of toolResult blocks, as the agent appends them. Each Strands message carries a
`tracking_id` naming the ctxbench messages it stands for. After the manager acts, a message whose content list is
the one it was given keeps its ctxbench identity; a toolResult block the sliding window truncated is a `replace`
of its tool message; a message Strands made (a summary) is a new message.

Model seam: the agent's model is a Strands `Model` standing for ctxbench's main model (its `context_window_limit`
the run's input budget, which proactive compression's ratio is of) whose every call is a side call of the
`summary_profile` profile. Strands runs the summary in a worker thread (strands/_async.py `run_async`).
"""
from __future__ import annotations

import functools
import json
import logging
import threading
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, AsyncIterator, ClassVar, Mapping

from harness.core.config import build_dataclass, option
from harness.core.errors import ConfigError
from harness.models.llm import is_context_window_error
from strategies.adapters import STRANDS, Wanted, apply_view, content_text, run_sync
from strategies.base import Strategy

if TYPE_CHECKING:
    from harness.conversation.context import RunContext
    from harness.conversation.view import Message
    from harness.models.llm import LLMResult
    from harness.models.usage import Usage

SUMMARY_PROFILE = "summary"


# ----- configuration: the library's names and defaults, then its own constructor ------------------
@dataclass
class _Common:
    """Parameters both managers take (conversation_manager.py:65-94, and each manager's `pin_first`)."""

    pin_first: int | None = option(None, "messages at the start pinned: never trimmed or summarized")
    proactive_compression: bool | dict[str, float] | None = option(
        None, "reduce before a model call whose projected input reaches this share of the window: true (0.7), "
              "{compression_threshold: F}, or null/false (off: only on overflow)")


@dataclass
class SlidingWindowConfig(_Common):
    window_size: int = option(40, "messages kept (Strands counts a turn's tool results as one message)")
    should_truncate_results: bool = option(True, "on overflow, first cut the oldest tool results to their first "
                                                 "and last 200 characters")
    per_turn: bool | int = option(False, "also apply the window before every model call (true) or every N calls; "
                                         "false: at the end of each invocation only")


@dataclass
class SummarizationAgentConfig:
    """Ours: the summarization agent, a Strands Agent whose model is the adapter's summary profile."""

    system_prompt: str | None = option(None, "its system prompt (Agent's default: none)")


@dataclass
class SummarizingConfig(_Common):
    summary_ratio: float = option(0.3, "share of the oldest messages summarized on overflow (Strands clamps it to "
                                       "0.1-0.8)")
    preserve_recent_messages: int = option(10, "most recent messages never summarized")
    summarization_system_prompt: str | None = option(None, "replaces Strands' summarization prompt (null: its own)")
    summarization_agent: SummarizationAgentConfig | None = option(
        None, "summarize through a Strands Agent instead of the model (its own system prompt); {} for its defaults")
    summary_profile: str = option(SUMMARY_PROFILE, "ours: the ctxbench profile the manager's model calls go to")


@functools.cache
def quiet_library() -> None:
    """Strands' loggers get a NullHandler, as a library's should: its error log before it re-raises (e.g. "Summarization
    failed", summarizing_conversation_manager.py:142) would otherwise reach stderr through logging's last resort. A
    process that configures logging still receives them."""
    logging.getLogger("strands").addHandler(logging.NullHandler())


# ----- conversion: ctxbench messages <-> Strands messages ----------------------------------------
def tracking_id(message_id: int) -> str:
    """A Strands tracking id (a UUID v4, as the agent's) naming a ctxbench message id."""
    return str(uuid.UUID(int=message_id, version=4))


def strands_usage(usage: "Usage") -> dict[str, int]:
    """ctxbench usage as Strands' (types/event_loop.py Usage): input includes the cached reads and writes, so
    input + output = total (what telemetry/metrics.py `_total_prompt_tokens` reads as the whole prompt)."""
    fields = {"inputTokens": usage.input_tokens or 0, "outputTokens": usage.output_tokens or 0}
    fields["totalTokens"] = fields["inputTokens"] + fields["outputTokens"]
    if usage.cached_tokens:
        fields["cacheReadInputTokens"] = usage.cached_tokens
    if usage.cache_write_tokens:
        fields["cacheWriteInputTokens"] = usage.cache_write_tokens
    return fields


def tool_use(call: Mapping[str, Any]) -> dict[str, Any]:
    """A chat tool call as a Strands toolUse block; arguments that are not a JSON object stay their text."""
    function = call.get("function") or {}
    raw = function.get("arguments")
    try:
        parsed = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        parsed = raw
    return {"toolUse": {"toolUseId": call.get("id") or "", "name": function.get("name") or "",
                        "input": parsed if isinstance(parsed, dict) else raw}}


def tool_result(message: "Message") -> dict[str, Any]:
    """A ctxbench tool message as a toolResult block (the managers never read its status)."""
    return {"toolResult": {"toolUseId": message.get("tool_call_id") or "", "status": "success",
                           "content": [{"text": content_text(message.get("content"))}]}}


def block_text(block: Mapping[str, Any]) -> str:
    """The text a block shows: its own, or a toolResult's text items."""
    if "toolResult" in block:
        return "".join(item.get("text", "") for item in block["toolResult"].get("content", ()))
    return block.get("text", "")


def to_chat(message: Mapping[str, Any], originals: Mapping[str, "Message"]) -> list["Message"]:
    """A Strands message as chat messages: toolResult blocks each a tool message, the rest one message.
    `originals` (tool call id -> the logged tool message) lends a tool message its other fields."""
    blocks = message.get("content", ())
    text = "".join(block["text"] for block in blocks if "text" in block)
    out: list[Message] = []
    if message["role"] == "assistant":
        calls = [{"id": b["toolUse"]["toolUseId"], "type": "function",
                  "function": {"name": b["toolUse"]["name"], "arguments": b["toolUse"]["input"]
                               if isinstance(b["toolUse"]["input"], str) else json.dumps(b["toolUse"]["input"])}}
                 for b in blocks if "toolUse" in b]
        out.append({"role": "assistant", "content": text or None, **({"tool_calls": calls} if calls else {})})
        return out
    for block in blocks:
        if "toolResult" in block:
            call_id = block["toolResult"]["toolUseId"]
            base = originals.get(call_id) or {"role": "tool", "tool_call_id": call_id}
            out.append({**base, "content": block_text(block)})
    if text or not out:
        out.append({"role": "user", "content": text})
    return out


class Messages(list):
    """The agent's `messages`, counting the changes made to the list, so that a manager's change is seen in O(1)
    (ours). The managers change it in place (`del messages[i]`, `messages[:] = ...`); the one change they make
    inside a message, truncating tool results (sliding_window_conversation_manager.py:376), is made on an overflow
    only, after which the adapter always compares the whole history."""

    changes = 0


def _counting(name: str) -> Any:
    change = getattr(list, name)

    def method(self: Messages, *args: Any, **kwargs: Any) -> Any:
        self.changes += 1
        return change(self, *args, **kwargs)
    return method


for _name in ("__setitem__", "__delitem__", "__iadd__", "__imul__", "append", "extend", "insert", "pop", "remove",
              "clear", "sort", "reverse"):
    setattr(Messages, _name, _counting(_name))


class History:
    """The agent's `messages` as Strands holds them, kept from the view: extended by the messages appended since
    the last look (O(new messages)), rebuilt when another strategy edited the view."""

    def __init__(self) -> None:
        self.messages = Messages()  # the agent's `messages` (the same list object)
        self.ids: dict[str, tuple[int, ...]] = {}  # tracking id -> the ctxbench messages it stands for
        self.content: dict[str, list[Any]] = {}  # tracking id -> the content list matched to the view
        self.usage: dict[int, "Usage"] = {}  # agent message id -> the usage its request reported
        self.system: list[int] = []  # the leading system messages (the agent's system prompt)
        self.last = -1  # the newest ctxbench id folded in
        self.edits = -1  # the view's edit count when it last matched
        self.open_group: str | None = None  # the tool-result message the next tool message joins

    def sync(self, ctx: "RunContext") -> bool:
        """Fold in what the view gained; True when it was rebuilt (the system prompt may have changed)."""
        view = ctx.view
        ids = view.ids
        rebuilt = view.edits != self.edits
        if rebuilt:
            self.messages.clear()
            self.ids.clear()
            self.content.clear()
            self.system, self.last, self.open_group = [], -1, None
            start = 0
        else:
            start = len(ids)
            while start > 0 and ids[start - 1] > self.last:
                start -= 1
        for message_id in ids[start:]:
            self.append(view.message(message_id), message_id)
        if start < len(ids):
            self.last = ids[-1]
        self.edits = view.edits
        return rebuilt

    def append(self, message: "Message", message_id: int) -> None:
        role = message.get("role")
        if role == "system" and not self.messages:
            self.system.append(message_id)
            return
        if role == "tool":
            if self.open_group is not None:
                self.messages[-1]["content"].append(tool_result(message))
                self.ids[self.open_group] += (message_id,)
                return
            self.open_group = self.add("user", [tool_result(message)], (message_id,))
            return
        self.open_group = None
        if role == "assistant":
            text = content_text(message.get("content"))
            blocks = ([{"text": text}] if text else []) + [tool_use(call) for call in message.get("tool_calls") or ()]
            self.add("assistant", blocks, (message_id,))
            usage = self.usage.get(message_id)
            if usage is not None and usage.input_tokens is not None:
                self.messages[-1]["metadata"] = {"usage": strands_usage(usage)}
            return
        self.add("user", [{"text": content_text(message.get("content"))}], (message_id,))  # a later system one too

    def add(self, role: str, content: list[Any], ids: tuple[int, ...]) -> str:
        tid = tracking_id(ids[0])
        self.messages.append({"role": role, "content": content, "tracking_id": tid})
        self.ids[tid], self.content[tid] = ids, content
        return tid

    def unchanged(self, message: Mapping[str, Any]) -> tuple[int, ...] | None:
        """The ctxbench ids of a message the library left as it was given, else None."""
        tid = message.get("tracking_id")
        ids = self.ids.get(tid) if tid else None
        return ids if ids is not None and message["content"] is self.content[tid] else None

    def rendered(self, ctx: "RunContext", messages: list[Mapping[str, Any]]) -> list["Message"]:
        """Strands messages as the chat messages a side call sends: unchanged ones as they are shown."""
        out: list[Message] = []
        for message in messages:
            ids = self.unchanged(message)
            out.extend([ctx.view.message(i) for i in ids] if ids is not None else to_chat(message, {}))
        return out

    def wanted(self, ctx: "RunContext") -> tuple[list[Wanted], list[dict[str, Any]]]:
        """The library's history as the view's entries (the system prompt first), and the messages it made."""
        view = ctx.view
        wanted: list[Wanted] = [(i, None) for i in self.system]
        made = []
        for message in self.messages:
            ids = self.unchanged(message)
            if ids is not None:
                wanted.extend((i, None) for i in ids)
                continue
            ids = self.ids.get(message.get("tracking_id") or "")
            if ids is None:
                made.append(message)
                wanted.extend((None, rendering) for rendering in to_chat(message, {}))
                continue
            by_call = {view.message(i).get("tool_call_id"): i for i in ids}  # a tool-result message's parts
            for rendering in to_chat(message, {call: view.message(i) for call, i in by_call.items()}):
                shown = by_call[rendering["tool_call_id"]] if rendering["role"] == "tool" else ids[0]
                wanted.append((shown, {**view.message(shown), **rendering}))
        return wanted, made

    def adopt(self, ctx: "RunContext", made: list[dict[str, Any]], new_ids: list[int]) -> None:
        """After the view became the library's history: its messages are the mirror from now on."""
        for message, message_id in zip(made, new_ids):
            self.ids[message["tracking_id"]] = (message_id,)
        for message in self.messages:
            self.content[message["tracking_id"]] = message["content"]
        self.open_group = None
        self.last = max(ctx.view.ids)
        self.edits = ctx.view.edits


# ----- the model seam --------------------------------------------------------------------------------
@functools.cache
def model_class() -> type:
    """ctxbench's Strands Model, defined once the library is loaded."""
    from strands.models.model import Model
    from strands.types.exceptions import ContextWindowOverflowException

    class SideCallModel(Model):
        """A Strands model provider whose calls are ctxbench side calls of one profile (counted, cached, faulted,
        priced); its config holds the run's input budget as the model's context window."""

        def __init__(self, adapter: "_StrandsManager", model_id: str, window: int | None) -> None:
            self.adapter = adapter
            self.config: dict[str, Any] = {"model_id": model_id, "context_window_limit": window}

        def update_config(self, **model_config: Any) -> None:
            self.config.update(model_config)

        def get_config(self) -> dict[str, Any]:
            return self.config

        def structured_output(self, output_model: Any, prompt: Any, system_prompt: str | None = None,
                              **kwargs: Any) -> Any:
            raise NotImplementedError("the conversation managers ask for no structured output")

        async def stream(self, messages: list[Any], tool_specs: list[Any] | None = None,
                         system_prompt: str | None = None, **kwargs: Any) -> AsyncIterator[dict[str, Any]]:
            try:
                result = self.adapter.side_call(messages, system_prompt)
            except Exception as exc:
                if is_context_window_error(exc):  # as Strands' own providers report an overflow
                    raise ContextWindowOverflowException(str(exc)) from exc
                raise
            text = content_text(result.message.get("content"))
            yield {"messageStart": {"role": "assistant"}}
            if text:
                yield {"contentBlockDelta": {"delta": {"text": text}}}
                yield {"contentBlockStop": {}}
            yield {"messageStop": {"stopReason": "end_turn"}}
            yield {"metadata": {"usage": strands_usage(result.usage),
                                "metrics": {"latencyMs": int(result.latency_s * 1000)}}}

    return SideCallModel


# ----- the adapters ---------------------------------------------------------------------------------
class _StrandsManager(Strategy):
    """Drives one Strands ConversationManager on a Strands Agent, as the agent loop does."""

    library = STRANDS
    manager_class: ClassVar[str] = ""

    def __init__(self, config: Any = None, where: str | None = None):
        super().__init__(config)
        self.where = where or f"strategy {self.name}"
        self.lib = STRANDS.load(self.where, "strands.agent.conversation_manager")
        quiet_library()
        self.manager = self.build(model_class()(self, self.profile(), None))  # its own checks, before any call
        self.agent: Any = None
        self.ctx: "RunContext | None" = None

    @classmethod
    def from_config(cls, data: Mapping[str, Any] | None, where: str | None = None) -> "Strategy":
        where = where or f"strategy {cls.name}"
        return cls(build_dataclass(cls.Config, data or {}, where), where)

    def build(self, model: Any) -> Any:
        """A fresh manager from the config, through the library's constructor (`model`: the seam a summarization
        agent would call)."""
        proactive = self.config.proactive_compression
        if isinstance(proactive, dict):  # Strands reads the one key it knows and ignores the rest: a typo is refused
            known = sorted(self.lib.ProactiveCompressionConfig.__annotations__)
            unknown = sorted(set(proactive) - set(known))
            if unknown:
                raise ConfigError(f"{self.where}.proactive_compression: unknown key(s) {unknown}; Strands' "
                                  f"ProactiveCompressionConfig takes {known}")
        with STRANDS.configuring(self.where):
            return getattr(self.lib, self.manager_class)(**self.arguments(model))

    def arguments(self, model: Any) -> dict[str, Any]:
        return {"pin_first": self.config.pin_first, "proactive_compression": self.config.proactive_compression}

    def profile(self) -> str:
        return SUMMARY_PROFILE

    # -- per run
    def on_run_start(self, ctx: "RunContext") -> None:
        self._start(ctx)

    def _start(self, ctx: "RunContext") -> None:
        """A fresh manager on a Strands Agent holding the view (the agent registers the manager's hooks)."""
        from strands import Agent

        self.ctx, self.run_thread = ctx, threading.get_ident()
        self.history = History()
        self.model = model_class()(self, ctx.main.model, ctx.budget())
        self.manager = self.build(self.model)
        with STRANDS.calling("Agent", ctx):
            self.agent = Agent(model=self.model, messages=self.history.messages, callback_handler=None,
                               conversation_manager=self.manager)
        self._sync(ctx)

    def _sync(self, ctx: "RunContext") -> None:
        if self.agent is None or self.ctx is not ctx:
            self._start(ctx)
        elif self.history.sync(ctx):
            self.agent.system_prompt = "\n\n".join(content_text(ctx.view.message(i).get("content"))
                                                   for i in self.history.system) or None

    # -- hooks
    def before_request(self, ctx: "RunContext") -> None:
        """The agent's estimate of the input, then BeforeModelCallEvent through the agent's hook registry."""
        from strands.event_loop.event_loop import _estimate_input_tokens
        from strands.hooks import BeforeModelCallEvent

        self._sync(ctx)
        before = self.history.messages.changes
        with STRANDS.calling("BeforeModelCallEvent", ctx):
            try:
                projected = run_sync(_estimate_input_tokens(self.agent))
            except Exception:  # the loop goes on without an estimate (event_loop.py:523-526)
                projected = None
            event = BeforeModelCallEvent(agent=self.agent, invocation_state={}, projected_input_tokens=projected)
            run_sync(self.agent.hooks.invoke_callbacks_async(event))
        if self.history.messages.changes != before:
            self.apply(ctx, "before_model_call", projected_input_tokens=projected)

    def after_response(self, ctx: "RunContext", result: "LLMResult") -> None:
        """The reply's usage for the agent's estimate; a reply without tool calls ends the invocation."""
        self.history.usage[ctx.last_message_id("agent")] = result.usage
        if result.message.get("tool_calls"):
            return
        self._sync(ctx)
        before = self.history.messages.changes
        with STRANDS.calling("apply_management", ctx):
            self.manager.apply_management(self.agent)
        if self.history.messages.changes != before:
            self.apply(ctx, "invocation_end")

    def on_context_window_error(self, ctx: "RunContext", error: BaseException) -> bool:
        """reduce_context with the overflow, then the model call again; if it cannot reduce, the run overflows."""
        from strands.types.exceptions import ContextWindowOverflowException

        self._sync(ctx)
        refused: Exception | None = None
        with STRANDS.calling("reduce_context", ctx):
            try:
                self.manager.reduce_context(self.agent, e=ContextWindowOverflowException(str(error)))
            except ContextWindowOverflowException as exc:
                refused = exc
        if refused is not None:
            ctx.log.append("compaction_failed", library=STRANDS.label, trigger="context_window_error",
                           error=str(refused)[:2000])
            return False
        self.apply(ctx, "context_window_error")
        return True

    def apply(self, ctx: "RunContext", trigger: str, **fields: Any) -> None:
        """Make the view the agent's messages: one event of view ops."""
        before = list(ctx.view.ids)
        wanted, made = self.history.wanted(ctx)
        kept = {i for i, _ in wanted if i is not None}
        fields.update(library=STRANDS.label, trigger=trigger, removed_message_count=self.manager.removed_message_count,
                      forgotten_ids=[i for i in before if i not in kept])
        logged = self.log(ctx, wanted, fields)
        self.history.adopt(ctx, made, logged["new_ids"] if logged is not None else [])

    def log(self, ctx: "RunContext", wanted: list[Wanted], fields: dict[str, Any]) -> dict[str, Any] | None:
        """The event of one reduction."""
        raise NotImplementedError

    # -- the model seam
    def side_call(self, messages: list[Any], system_prompt: str | None) -> "LLMResult":
        """A call of the manager's model as a side call of the profile; unchanged messages sent as shown. In
        Strands' worker thread (run_async) its CPU is not the run thread's: not counted as the run's side-call CPU."""
        ctx = self.ctx
        assert ctx is not None, "the model is used before the run started"
        request = ([{"role": "system", "content": system_prompt}] if system_prompt else []) + \
            self.history.rendered(ctx, messages)
        spent = ctx.side_call_cpu_s
        result = ctx.call_llm(self.profile(), request, purpose=self.name)
        if threading.get_ident() != self.run_thread:
            ctx.side_call_cpu_s = spent
        return result


class SlidingWindowAdapter(_StrandsManager):
    """Strands' SlidingWindowConversationManager: keeps the last `window_size` messages at the end of each
    invocation (and per `per_turn`); on overflow it first truncates the oldest tool results."""

    name = "strands.sliding_window"
    summary = "Strands' SlidingWindowConversationManager: the last messages kept; on overflow old tool results cut"
    source = "Strands Agents strands.agent.conversation_manager (the library's code)"
    Config = SlidingWindowConfig
    manager_class = "SlidingWindowConversationManager"

    def arguments(self, model: Any) -> dict[str, Any]:
        return {**super().arguments(model), "window_size": self.config.window_size,
                "should_truncate_results": self.config.should_truncate_results, "per_turn": self.config.per_turn}

    def log(self, ctx: "RunContext", wanted: list[Wanted], fields: dict[str, Any]) -> dict[str, Any] | None:
        truncated = [i for i, rendering in wanted if i is not None and rendering is not None]
        step = "sliding_window" if fields["forgotten_ids"] else "truncate_results"
        return apply_view(ctx, wanted, "compaction", step=step, truncated_ids=truncated, **fields)


class SummarizingAdapter(_StrandsManager):
    """Strands' SummarizingConversationManager: on overflow, the oldest `summary_ratio` of the messages become a
    user message holding the model's summary."""

    name = "strands.summarizing"
    summary = "Strands' SummarizingConversationManager: on overflow the oldest messages become a summary"
    source = "Strands Agents strands.agent.conversation_manager (the library's code)"
    Config = SummarizingConfig
    manager_class = "SummarizingConversationManager"

    def arguments(self, model: Any) -> dict[str, Any]:
        arguments = {**super().arguments(model), "summary_ratio": self.config.summary_ratio,
                     "preserve_recent_messages": self.config.preserve_recent_messages,
                     "summarization_system_prompt": self.config.summarization_system_prompt}
        if self.config.summarization_agent is not None:  # ours: an Agent on the seam, without tools or a printer
            from strands import Agent
            arguments["summarization_agent"] = Agent(model=model, callback_handler=None,
                                                     system_prompt=self.config.summarization_agent.system_prompt)
        return arguments

    def profile(self) -> str:
        return self.config.summary_profile

    def profiles_needed(self) -> list[str]:
        return [self.profile()]

    def log(self, ctx: "RunContext", wanted: list[Wanted], fields: dict[str, Any]) -> dict[str, Any] | None:
        request = ctx.emit("condensation_request", reason=fields["trigger"], boundary=len(ctx.log) - 1,
                           library=STRANDS.label)
        made = any(i is None for i, _ in wanted)
        summary_id = len(ctx.log) if made else None  # apply_view logs the new message first
        return apply_view(ctx, wanted, "condensation", kind="summary", request_id=request["id"],
                          summary_id=summary_id, **fields)
