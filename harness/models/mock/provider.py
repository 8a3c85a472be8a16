"""The mock provider, registered with litellm as the custom provider `mock` (models `mock/...`).

It does what a real provider does to a request: enforces a context window (raising
litellm's ContextWindowExceededError), simulates prefix caching on a simulated clock where the
request's cache marks ask (harness.models.cache_marks; harness.models.mock.cache), and reports usage the way
litellm reports a real provider's. The reply itself comes from the
mock agent, which sees only the messages and tool schemas of the request (or, for models
`mock/summarizer...`, from the mock summarizer, which sees only the request's messages). A trace
replay (harness.traces.replay) hands the provider the recorded reply instead (`reply`, model
`mock/replay`): the provider then prices and caches the request as any other and answers with it.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Sequence

import harness  # noqa: F401
import litellm
from litellm import CustomLLM

from harness.core.clock import simulated_latency_s
from harness.models import openai_breakpoints
from harness.models.cache_marks import NO_MARKS, Breakpoint, CacheMarks
from harness.core.config import build_dataclass, require
from harness.core.errors import ConfigError, did_you_mean
from harness.core.fast_json import sorted_json
from harness.core.frozen import FrozenDict
from harness.models.mock import DEFAULT_MOCK_WINDOW
from harness.models.mock.agents import respond
from harness.models.mock.agents.common import Knobs, build_knobs
from harness.models.mock.agents.memo import forget
from harness.models.mock.agents.memory import Memory
from harness.models.mock.cache import CACHE_STYLES, BlockChain, CacheUse, PrefixCache, anthropic_min_tokens
from harness.models.mock.faults import Draw, Faults, draw, garble_tool_calls, raise_error
from harness.models.mock.summarizer import (SUMMARIZER_PREFIX, SummarizerKnobs, build_summarizer_knobs, is_summarizer,
                                     summarize)
from harness.models.mock.compaction import (CompactEdit, CompactionRequestError, check_answered, check_signatures,
                                            compacted_context, compacted_marks, compaction_reply,
                                            DEFAULT_INSTRUCTIONS, iteration, read_edit, read_summarize,
                                            visible_context)
from harness.models.mock import responses_compaction as responses
from harness.models.mock.context_editing import ClearEdit, clear, read_clear
from harness.models.mock.wire_marks import read_marks
from harness.models.provider_compaction import carries_compaction, summary_message, with_applied
from harness.core.tokens import count_message, count_tools
from harness.models.usage import DEFAULT_PRICE_MODEL, check_price_model


# "direct": the client calls MockProvider.serve() itself, skipping litellm.completion's
# per-call wrapper (argument checks, its own cost calculation, a logging thread), which
# costs more CPU than the mock itself and changes nothing the mock returns.
# "litellm": every request goes through litellm.completion to the registered provider.
TRANSPORTS = ("direct", "litellm")
REPLAY_MODEL = "mock/replay"  # answers only with the reply it is given (a recorded trace's message)
AGENT_MODEL = "mock/agent"
SUMMARIZER_MODEL = f"mock/{SUMMARIZER_PREFIX}"


def check_mock_model(model: str, where: str) -> None:
    """The mock serves the agent, the summarizer (any `mock/summarizer...` name) and the trace replay;
    another name is a typo that would silently run the agent."""
    if model not in (AGENT_MODEL, REPLAY_MODEL) and not is_summarizer(model):
        raise ConfigError(f"{where}: unknown mock model {model!r}"
                          f"{did_you_mean(model, (AGENT_MODEL, SUMMARIZER_MODEL, REPLAY_MODEL))}; the mock serves "
                          f"{AGENT_MODEL}, {SUMMARIZER_MODEL} (or any {SUMMARIZER_MODEL}... name) and {REPLAY_MODEL}")


@dataclass
class MockConfig:
    """Provider-side settings of the mock, sent with each request as `mock_config`."""

    window: int = DEFAULT_MOCK_WINDOW
    cache: str = "anthropic"
    price_model: str = DEFAULT_PRICE_MODEL
    knobs: dict[str, Any] = field(default_factory=dict)  # the agent's, or the summarizer's for mock/summarizer...
    session: str = ""
    faults: dict[str, Any] = field(default_factory=dict)  # see harness.models.mock.faults.Faults
    via: str = "direct"  # how the in-process client reaches the mock: see TRANSPORTS

    def __post_init__(self) -> None:
        require(self.window > 0, f"window must be a positive number of tokens, got {self.window}")
        require(self.cache in CACHE_STYLES, f"cache must be one of {', '.join(CACHE_STYLES)}, got {self.cache!r}")
        require(self.via in TRANSPORTS, f"via must be one of {', '.join(TRANSPORTS)}, got {self.via!r}")
        check_price_model(self.price_model)
        self.fault_rates = build_dataclass(Faults, self.faults, "faults")
        # Built once per model: every request of the session asks, and a request reads no more than its model's name.
        self._knobs: dict[str, Knobs | SummarizerKnobs] = {}

    def knobs_for(self, model: str, where: str = "mock knobs") -> Knobs | SummarizerKnobs:
        """`knobs` read as the knobs of the mock serving `model`: the summarizer's for a summarizer
        model, else the agent's (a mock profile's knobs are its own model's). Raises ConfigError."""
        knobs = self._knobs.get(model)
        if knobs is None:
            build = build_summarizer_knobs if is_summarizer(model) else build_knobs
            knobs = self._knobs[model] = build(self.knobs, where)
        return knobs


@dataclass
class _Session:
    """One session's simulated provider state. Its requests are served one at a time (`lock`): each reads and
    rewrites the chain, the cache, the clock and the count, as a provider serves a conversation's turns in order.
    Sessions are served in parallel."""

    cache: PrefixCache
    blocks: BlockChain = field(default_factory=BlockChain)  # the last request: tool list, then messages
    unedited: BlockChain = field(default_factory=BlockChain)  # the last request a context edit was asked of, unedited
    cleared: dict[Any, Any] = field(default_factory=dict)  # messages the edit changed, and what it made of them
    tool_prefixes: tuple[Any, list[tuple[int, int]]] = (None, [])  # a tool list, its prefixes' keys and tokens
    clock_s: float = 0.0
    requests: int = 0  # requests received, failed ones included: the fault index of a client that tells none
    agent_memory: Memory = field(default_factory=Memory)  # the simulated agent's readings of this session
    lock: threading.Lock = field(default_factory=threading.Lock)


_NO_TOOLS: list[dict[str, Any]] = []


def _block_key(block: dict[str, Any] | list[dict[str, Any]]) -> int:
    """A message's identity for the prefix cache (the first block, the tool list, by its JSON); a read-only
    message sent again keeps its key (harness.core.frozen), also where it sits at a new position (after a summary)."""
    if isinstance(block, list):
        return hash(sorted_json(block)) if block else 0
    if type(block) is not FrozenDict:
        return _message_key(block)
    key = block.cache_key
    if key is None:
        key = block.cache_key = _message_key(block)
    return key


def _message_key(message: dict[str, Any]) -> int:
    """The hash of what a message says (role, content, tool call id, its calls); content sent as a list of
    parts (OpenAI's typed content) is hashed by its JSON."""
    content = message.get("content")
    if isinstance(content, list):
        content = sorted_json(content)
    calls = tuple(
        (c.get("id"), c.get("function", {}).get("name"), c.get("function", {}).get("arguments"))
        for c in message.get("tool_calls") or ()
    )
    return hash((message.get("role"), content, message.get("tool_call_id"), calls))


def _block_tokens(block: dict[str, Any] | list[dict[str, Any]]) -> int:
    return count_tools(block) if isinstance(block, list) else count_message(block)


def content_blocks(message: dict[str, Any]) -> int:
    """How many content blocks a message is in Anthropic's format, for the cache's lookback: its text (one per
    content part) and one per tool call; a tool result is one block (consecutive results join one user turn)."""
    if message.get("role") == "tool":
        return 1
    content = message.get("content")
    blocks = len(content) if isinstance(content, list) else (1 if content else 0)
    return max(blocks + len(message.get("tool_calls") or ()), 1)


class _Layout:
    """One request's blocks as Anthropic counts them (harness.models.mock.cache.Layout)."""

    __slots__ = ("tools", "_tool_list", "_messages", "_state")

    def __init__(self, tools: list[dict[str, Any]], messages: list[dict[str, Any]], state: _Session):
        self.tools, self._tool_list, self._messages, self._state = len(tools), tools, messages, state

    def message_blocks(self, index: int) -> int:
        return content_blocks(self._messages[index])

    def tool_prefix(self, index: int) -> tuple[int, int]:
        """Keys and tokens of the tool list's prefixes, worked out once per tool list: a session sends one."""
        tools, prefixes = self._state.tool_prefixes
        if tools is not self._tool_list:
            prefixes = [(hash((0, _block_key(self._tool_list[:end]))), count_tools(self._tool_list[:end]))
                        for end in range(1, len(self._tool_list) + 1)]
            self._state.tool_prefixes = (self._tool_list, prefixes)
        return prefixes[index]


def breakpoint_slots(marks: CacheMarks, tools: int, messages: int) -> list[tuple[int, str]]:
    """The marks' breakpoints as (slot, TTL) in ascending slots (harness.models.mock.cache.Layout), automatic caching
    as one on the last message; a slot marked twice keeps its longer TTL."""
    if not marks.breakpoints:  # automatic caching alone
        return [(tools + messages - 1, marks.automatic)] if marks.automatic is not None and messages else []
    slots: dict[int, str] = {}
    for mark in marks.breakpoints:
        slot = _slot(mark, tools, messages)
        slots[slot] = "1h" if "1h" in (mark.ttl, slots.get(slot)) else mark.ttl
    if marks.automatic is not None and messages:
        last = tools + messages - 1
        slots[last] = "1h" if "1h" in (marks.automatic, slots.get(last)) else marks.automatic
    return sorted(slots.items())


def openai_breakpoint_positions(marks: CacheMarks, messages: list[dict[str, Any]]) -> tuple[list[int], int | None]:
    """The marks as OpenAI's GPT-5.6 family reads them, as positions of the request's block chain (message i at
    i + 1): the explicit breakpoints on messages in ascending order (a tool has none: the tool list is part of
    the first message's prefix), and OpenAI's implicit one at the newest message that can carry a breakpoint,
    unless the mode is explicit (None)."""
    explicit = sorted({mark.index + 1 for mark in marks.breakpoints if mark.block == "message"})
    if any(position > len(messages) for position in explicit):
        raise ValueError(f"cache breakpoints {marks.breakpoints} are outside the request ({len(messages)} messages)")
    if marks.prompt_cache_mode == "explicit":
        return explicit, None
    newest = openai_breakpoints.newest_eligible(messages)
    return explicit, None if newest is None else newest + 1


def _slot(mark: Breakpoint, tools: int, messages: int) -> int:
    size = tools if mark.block == "tool" else messages
    if mark.block not in ("tool", "message") or not 0 <= mark.index < size:
        raise ValueError(f"cache breakpoint {mark} is outside the request ({tools} tools, {messages} messages)")
    return mark.index if mark.block == "tool" else tools + mark.index


class MockProvider(CustomLLM):
    def __init__(self) -> None:
        super().__init__()
        self._sessions: dict[str, _Session] = {}
        self._lock = threading.Lock()

    def session(self, name: str, style: str, price_model: str = DEFAULT_PRICE_MODEL) -> _Session:
        """The session's state; its cache is of `style`, caching from the minimum of the model it bills as."""
        state = self._sessions.get(name)  # a session's every request after its first: no lock (a dict read is atomic)
        if state is not None and state.cache.style == style:
            return state
        with self._lock:
            state = self._sessions.get(name)
            if state is None or state.cache.style != style:
                cache = (PrefixCache(style=style, min_tokens=anthropic_min_tokens(price_model))
                         if style == "anthropic" else PrefixCache(style=style))
                state = self._sessions[name] = _Session(cache=cache)
            return state

    def end_session(self, name: str) -> None:
        with self._lock:
            self._sessions.pop(name, None)
        forget()  # the agent's memoized readings of this session's texts

    def completion(self, model: str, messages: list, api_base: str, custom_prompt_dict: dict, model_response: Any,
                   print_verbose: Any, encoding: Any, api_key: Any, logging_obj: Any, optional_params: dict,
                   acompletion: Any = None, litellm_params: Any = None, logger_fn: Any = None, headers: Any = None,
                   timeout: Any = None, client: Any = None) -> litellm.ModelResponse:
        config = build_dataclass(MockConfig, optional_params.get("mock_config") or {}, "mock_config")
        messages, tools, marks = read_marks(messages, optional_params.get("tools") or [],
                                            optional_params.get("cache_control"),
                                            optional_params.get("prompt_cache_key"),
                                            optional_params.get("prompt_cache_options"))
        reply, usage = self.serve(model, messages, tools, config, seed=optional_params.get("seed"),
                                  now_s=optional_params.get("mock_clock_s"), reply=optional_params.get("mock_reply"),
                                  request=optional_params.get("mock_request"),
                                  marks=optional_params.get("mock_marks", marks),
                                  options=optional_params.get("mock_options"))
        return litellm.ModelResponse(
            model=model,
            choices=[{"index": 0, "finish_reason": "tool_calls" if reply.get("tool_calls") else "stop",
                      "message": reply}],
            usage=usage,
        )

    def serve(self, model: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]], config: MockConfig,
              seed: int | None, now_s: float | None = None, reply: dict[str, Any] | None = None,
              request: tuple[int, int] | None = None, marks: CacheMarks | None = None,
              options: dict[str, Any] | None = None, window: bool = False) -> tuple[dict[str, Any], dict[str, Any]]:
        """One request: window check, cache accounting, agent reply, usage (as litellm reports the provider's).

        `marks`: where the request asks to be cached (harness.models.cache_marks: placed by the client's cache policy, or
        over the wire read back by harness.models.mock.wire_marks); None, a request that asks for nothing, is cached
        nowhere under Anthropic's rules (no marker, no cache) and automatically under OpenAI's.

        `reply`: the response to give instead of the mock agent's (a recorded trace's assistant
        message); the model `mock/replay` requires one, as it has no agent of its own.

        `now_s`: the run's simulated clock as the request is sent (harness.core.clock); the cache's
        TTL expires on it. Without it (a client that sends none) the session keeps its own clock,
        advanced by each request's simulated latency alone.

        `request`: the client's (request index, attempt) the faults are drawn for (harness.models.mock.faults);
        without it, the session's count of requests received and attempt 0.

        `options`: the provider parameters a strategy added (Strategy.request_options): Anthropic's
        `context_management` with its compaction edit (harness.models.mock.compaction), its clear_tool_uses edit
        (harness.models.mock.context_editing: applied before the model sees the request, the applied edit reported in
        the reply's `provider_specific_fields.context_management`) or the SDK's `compaction` request, or OpenAI's
        Responses `context_management` list
        (harness.models.mock.responses_compaction). A request carrying a compaction block or item is seen from it on,
        edit or not, as the API drops what precedes it.

        `window`: OpenAI's `POST /responses/compact` (see `compact`): the reply is the compaction item alone.
        """
        if reply is None and model == REPLAY_MODEL and not window:  # a compaction pass answers with its item alone
            raise ValueError(f"{REPLAY_MODEL} answers only with a reply it is given (harness.traces.replay)")
        state = self.session(config.session, config.cache, config.price_model)
        with state.lock:
            return self._serve(state, model, messages, tools, config, seed, now_s, reply, request, marks, options,
                               window)

    def compact(self, model: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]], config: MockConfig,
                seed: int | None, **kwargs: Any) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        """OpenAI's `POST /responses/compact`: the compacted window (the user messages the model saw, then the
        compaction item as a message of its own) and the pass's usage; `kwargs` as `serve` takes them."""
        reply, usage = self.serve(model, messages, tools, config, seed, window=True, **kwargs)
        return [*responses.window_users(messages), reply], usage

    def _serve(self, state: _Session, model: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
               config: MockConfig, seed: int | None, now_s: float | None, reply: dict[str, Any] | None,
               request: tuple[int, int] | None, marks: CacheMarks | None,
               options: dict[str, Any] | None = None, window: bool = False) -> tuple[dict[str, Any], dict[str, Any]]:
        """`serve` within its session's lock."""
        if now_s is not None:
            state.clock_s = now_s
        index, attempt = request if request is not None else (state.requests, 0)
        fault = draw(config.fault_rates, seed=seed or 0, session=config.session, index=index, attempt=attempt)
        state.requests += 1
        if fault.error:
            raise_error(fault.error, model)
        edit, kind, kept, cleared = None, ANTHROPIC, (), None
        if options or window or carries_compaction(messages):  # most requests of most runs: none of it
            try:
                edit, kind, cleared = _compaction_asked(options, window, messages)
                responses.check_items(messages)
                kept = responses.window_users(messages) if window else ()
                messages, marks = visible_context(messages, marks)
            except CompactionRequestError as exc:  # what the API answers 400 to
                raise litellm.BadRequestError(message=str(exc), model=model, llm_provider="mock") from None
        applied = None
        if cleared is not None:
            messages, applied = self._clear(state, messages, tools, cleared, edit)
        reply, usage = self._answer(state, model, messages, tools, config, seed, reply, marks, edit, fault, kind, kept)
        return (with_applied(reply, [applied]) if applied else reply), usage

    @staticmethod
    def _clear(state: _Session, messages: list[dict[str, Any]], tools: list[dict[str, Any]], edit: ClearEdit,
               compaction: CompactEdit | None) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
        """The request as the clear_tool_uses edit leaves it, and the applied edit (None when it did not act)."""
        unedited = state.unedited.read([tools or _NO_TOOLS, *messages], key_of=_block_key, tokens_of=_block_tokens)
        clearing = clear(messages, edit, unedited, state.cleared, compaction.trigger if compaction else None)
        if clearing is None:
            return messages, None
        return clearing.request(messages), clearing.applied()

    def _answer(self, state: _Session, model: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
                config: MockConfig, seed: int | None, reply: dict[str, Any] | None, marks: CacheMarks | None,
                edit: CompactEdit | None, fault: Draw, kind: str, kept: Sequence[dict[str, Any]]
                ) -> tuple[dict[str, Any], dict[str, Any]]:
        """The request as the model sees it answered: window check, cache accounting, a compaction past its
        trigger, the reply and its usage."""
        prompt_tokens = state.blocks.read([tools or _NO_TOOLS, *messages], key_of=_block_key, tokens_of=_block_tokens)
        if prompt_tokens > config.window:
            raise litellm.ContextWindowExceededError(
                message=f"prompt is too long: {prompt_tokens} tokens > {config.window} maximum",
                model=model,
                llm_provider="mock",
            )
        use = self._cache_use(state, tools or _NO_TOOLS, messages, NO_MARKS if marks is None else marks)
        if edit is not None and prompt_tokens > edit.trigger:
            return self._compact(state, model, messages, tools, config, seed, reply, marks, edit, prompt_tokens, use,
                                 fault.malformed, kind, kept)
        cached = use.read
        if reply is None:  # told what to answer, the window, the cache and the usage are simulated all the same
            knobs = config.knobs_for(model)
            if isinstance(knobs, SummarizerKnobs):
                reply = summarize(messages, seed=seed or 0, knobs=knobs)
            else:
                reply = respond(messages, tools, seed=seed or 0, knobs=knobs, memory=state.agent_memory)
        if fault.malformed:
            reply = garble_tool_calls(reply)
        output_tokens = count_message(reply)
        state.clock_s += simulated_latency_s(prompt_tokens - cached, output_tokens)
        return reply, _usage(prompt_tokens, output_tokens, use, config.cache)

    def _compact(self, state: _Session, model: str, visible: list[dict[str, Any]], tools: list[dict[str, Any]],
                 config: MockConfig, seed: int | None, reply: dict[str, Any] | None, marks: CacheMarks | None,
                 edit: CompactEdit, prompt_tokens: int, use: CacheUse, malformed: bool, kind: str,
                 kept: Sequence[dict[str, Any]]) -> tuple[dict[str, Any], dict[str, Any]]:
        """A request past the compaction trigger: the summarizing step over what the request showed, then (unless
        paused) the answer from the system prompt and the summary alone (harness.models.mock.compaction). `kind`:
        whose compaction (ANTHROPIC, OPENAI, or WINDOW: `/responses/compact`, whose item keeps `kept` verbatim);
        OpenAI reports the steps' usage summed, Anthropic each step in `iterations` too."""
        instruction = {"role": "user", "content": edit.instructions or DEFAULT_INSTRUCTIONS}
        knobs = config.knobs_for(model)
        completeness = knobs.notes_completeness if isinstance(knobs, Knobs) else knobs.summary_completeness
        summary = summarize([*visible, instruction], seed=seed or 0,
                            knobs=SummarizerKnobs(summary_completeness=completeness))["content"]
        summary_tokens = count_message(summary_message(summary))
        steps = [iteration("compaction", prompt_tokens + count_message(instruction), summary_tokens, use.read,
                           use.written, use.written_1h)]
        state.clock_s += simulated_latency_s(prompt_tokens - use.read, summary_tokens)
        answer = None
        if not edit.pause_after_compaction:
            compacted = compacted_context(visible, summary)
            kept = compacted_marks(marks, visible)
            answer_prompt = state.blocks.read([tools or _NO_TOOLS, *compacted], key_of=_block_key,
                                              tokens_of=_block_tokens)
            answer_use = self._cache_use(state, tools or _NO_TOOLS, compacted, NO_MARKS if kept is None else kept)
            if reply is None:
                reply = respond(compacted, tools, seed=seed or 0, knobs=knobs, memory=state.agent_memory)
            answer = garble_tool_calls(reply) if malformed else reply
            output_tokens = count_message(answer)
            steps.append(iteration("message", answer_prompt, output_tokens, answer_use.read, answer_use.written,
                                   answer_use.written_1h))
            state.clock_s += simulated_latency_s(answer_prompt - answer_use.read, output_tokens)
        usage = _iterations_usage(steps, config.cache)
        if kind == ANTHROPIC:
            return compaction_reply(summary, answer, edit.signed), usage
        del usage["iterations"]
        if kind == WINDOW:
            return responses.compaction_message(summary, kept), usage
        return responses.compaction_reply(summary, answer), usage

    def count_tokens(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
                     options: dict[str, Any] | None = None) -> tuple[int, int | None]:
        """A request's input tokens as `serve` counts them, nothing served (Anthropic's free `count_tokens`
        endpoint: it takes a request's `compaction` parameter and ignores it, the types' `compaction` field), and,
        when it asks for the clear_tool_uses edit, the count before the edit (`original_input_tokens`)."""
        try:
            check_signatures(messages)
            asked = (options or {}).get("context_management")
            read_edit(asked)
            edit = read_clear(asked)
        except CompactionRequestError as exc:
            raise litellm.BadRequestError(message=str(exc), model="count_tokens", llm_provider="mock") from None
        visible, _ = visible_context(messages, None)
        original = sum(_block_tokens(block) for block in [tools or _NO_TOOLS, *visible])
        if edit is None:
            return original, None
        clearing = clear(visible, edit, original)
        return original - (clearing.cleared_input_tokens if clearing else 0), original

    @staticmethod
    def _cache_use(state: _Session, tools: list[dict[str, Any]], messages: list[dict[str, Any]],
                   marks: CacheMarks) -> CacheUse:
        chain, cache = state.blocks, state.cache
        if cache.style == openai_breakpoints.STYLE:
            explicit, implicit = openai_breakpoint_positions(marks, messages)
            return cache.at_breakpoints(chain.prefix_keys, chain.cumulative, state.clock_s, explicit, implicit)
        if cache.style != "anthropic":
            return cache.lookup(chain.prefix_keys, chain.cumulative, state.clock_s)
        slots = breakpoint_slots(marks, len(tools), len(messages))
        return cache.lookup(chain.prefix_keys, chain.cumulative, state.clock_s, slots, _Layout(tools, messages, state))


ANTHROPIC, OPENAI, WINDOW = "anthropic", "openai", "window"  # whose compaction a request asks for
_WINDOW_PASS = CompactEdit(trigger=0, pause_after_compaction=True)  # `/responses/compact`: always, the item alone


def _compaction_asked(options: dict[str, Any] | None, window: bool,
                      messages: list[dict[str, Any]]) -> tuple[CompactEdit | None, str, ClearEdit | None]:
    """The compaction a request asks for and whose rules apply: `/responses/compact`, OpenAI's
    `context_management` (a list), the anthropic SDK's compaction request (`compaction`), or Anthropic's edit (an
    object with edits); and Anthropic's clear_tool_uses edit beside it; its compaction blocks checked; raises
    CompactionRequestError as the API refuses."""
    options = options or {}
    check_signatures(messages)
    responses.check_truncation(options.get("truncation"))
    if window:
        return _WINDOW_PASS, WINDOW, None
    asked = options.get("context_management")
    if isinstance(asked, list):
        threshold = responses.read_threshold(asked)
        return (CompactEdit(trigger=threshold) if threshold is not None else None), OPENAI, None
    summarize = read_summarize(options.get("compaction"), asked)
    if summarize is not None:
        check_answered(messages)
        return summarize, ANTHROPIC, None
    return read_edit(asked), ANTHROPIC, read_clear(asked)


def _usage(prompt_tokens: int, output_tokens: int, use: CacheUse, style: str) -> dict[str, Any]:
    """Usage as litellm reports the provider's: OpenAI's cached tokens, and from GPT-5.6 on its writes
    (`cache_write_tokens`); Anthropic's reads and writes, the writes also by TTL (`cache_creation_token_details`,
    from Anthropic's `cache_creation`)."""
    usage: dict[str, Any] = {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": output_tokens,
        "total_tokens": prompt_tokens + output_tokens,
    }
    if style == "none":
        return usage
    details: dict[str, Any] = {"cached_tokens": use.read}
    usage["prompt_tokens_details"] = details
    if style == openai_breakpoints.STYLE:
        details["cache_write_tokens"] = use.written
    elif use.written is not None:
        details["cache_creation_tokens"] = use.written
        details["cache_creation_token_details"] = {"ephemeral_5m_input_tokens": use.written - use.written_1h,
                                                   "ephemeral_1h_input_tokens": use.written_1h}
        usage["cache_creation_input_tokens"] = use.written
        usage["cache_read_input_tokens"] = use.read
    return usage


def _iterations_usage(steps: list[dict[str, Any]], style: str) -> dict[str, Any]:
    """A request of several sampling steps, as litellm reports Anthropic's: each field summed over the steps,
    the steps themselves in `iterations`."""
    read = sum(step["cache_read_input_tokens"] for step in steps)
    written = sum(step["cache_creation_input_tokens"] for step in steps)
    written_1h = sum(step["cache_creation"]["ephemeral_1h_input_tokens"] for step in steps)
    prompt = sum(step["input_tokens"] for step in steps) + read + written
    usage = _usage(prompt, sum(step["output_tokens"] for step in steps),
                   CacheUse(read, written if style == "anthropic" else None, written_1h), style)
    usage["iterations"] = steps
    return usage


_provider: MockProvider | None = None


def register_mock_provider() -> MockProvider:
    """Install the mock as litellm's `mock` provider (idempotent)."""
    global _provider
    if _provider is None:
        _provider = MockProvider()
    entries = [e for e in litellm.custom_provider_map if e.get("provider") != "mock"]
    entries.append({"provider": "mock", "custom_handler": _provider})
    litellm.custom_provider_map = entries
    return _provider


def end_session(name: str) -> None:
    if _provider is not None:
        _provider.end_session(name)
