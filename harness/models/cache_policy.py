"""Cache policies: where a request asks its provider to cache (harness.models.cache_marks), decided per request from
its messages, its tools, the provider family and the simulated time since the previous request.

Anthropic caches only what a request marks; OpenAI and most others cache a prefix on their own, and OpenAI's GPT-5.6
family and later also at the breakpoints a request marks (harness.models.openai_breakpoints). A policy is
plain data: a name (`"auto"`) or a mapping with options (`{"name": "inspect", "ttl": "1h"}`), checked once at
the edge (`parse_policy`). The anchors' policies follow each library's or agent's own code (docs/caching.md cites
the files and lines); `custom` places the breakpoints its options name, at most Anthropic's four.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from harness.models import openai_breakpoints
from harness.models.cache_marks import NO_MARKS, TTLS, Breakpoint, CacheMarks
from harness.core.errors import ConfigError, did_you_mean

DEFAULT_POLICY = "auto"
MAX_BREAKPOINTS = 4  # Anthropic refuses a request with more cache_control markers (the automatic one counted)
INSPECT_ESCALATION_GAP_S = 300.0  # Inspect AI's CACHE_TTL_ESCALATION_GAP: a gap past the 5m TTL

# Provider families, as litellm names the provider of a model (litellm.get_llm_provider); COMPATIBLE: an
# OpenAI-compatible endpoint that is not OpenAI's (vLLM, a proxy, serve-mock), to which litellm passes markers on;
# OPENAI_BREAKPOINTS: OpenAI's GPT-5.6 family and later (by the model's name), whose cache takes breakpoints
ANTHROPIC, BEDROCK, VERTEX, OPENAI, COMPATIBLE, OTHER = ("anthropic", "bedrock", "vertex", "openai",
                                                         "openai-compatible", "other")
OPENAI_BREAKPOINTS = openai_breakpoints.STYLE  # also the mock's cache style imitating it (harness.models.mock.cache)
MARKED_FAMILIES = (ANTHROPIC, BEDROCK, VERTEX)  # Claude: caches nothing a request does not mark

POLICY_NAMES = ("auto", "none", "last", "inspect", "pydantic-ai", "openhands", "mini-swe-agent", "claude-code",
                "custom")
_COMMON_OPTIONS = {"ttl", "escalate_after_s"}
_OWN_OPTIONS = {"custom": {"system", "tools", "automatic", "messages"}, "claude-code": {"messages"}}
# How many of the last messages Claude Code marks: two up to 2.1.58 (1.x included), one from 2.1.59 (docs/caching.md)
CLAUDE_CODE_MESSAGES = (1, 2)
CLAUDE_CODE_ONE_MESSAGE_FROM = (2, 1, 59)  # the first version marking one message


@dataclass(frozen=True)
class CachePolicy:
    """A named placement rule with its options: `ttl` of every marker; `escalate_after_s`: once the simulated
    gap between two requests exceeds it, the rest of the run marks with the 1h TTL (Inspect AI's escalation);
    `custom`'s own switches say which blocks it marks (`messages`: how many of the last messages, also
    `claude-code`'s: 1 as Claude Code 2.1.59 and later, 2 as earlier versions)."""

    name: str = DEFAULT_POLICY
    ttl: str = "5m"
    escalate_after_s: float | None = None
    system: bool = False
    tools: bool = False
    automatic: bool = False
    messages: int = 0

    def as_data(self) -> str | dict[str, Any]:
        """The plain data that `parse_policy` reads back: just the name when every option is its default."""
        default = parse_policy(self.name)
        changed = {key: value for key, value in self.__dict__.items()
                   if key != "name" and value != getattr(default, key)}
        return {"name": self.name, **changed} if changed else self.name

    def breakpoint_count(self) -> int:
        """The most markers the policy places on one request (`custom`'s, counted for Anthropic's limit)."""
        return int(self.system) + int(self.tools) + int(self.automatic) + self.messages


def parse_policy(spec: Any, where: str = "cache_policy") -> CachePolicy:
    """A policy from its plain data (a name, a mapping with `name` and options, or None for the default); a bad
    name, option or value is a ConfigError naming `where`."""
    if spec is None:
        spec = DEFAULT_POLICY
    if isinstance(spec, CachePolicy):
        return spec
    if isinstance(spec, str):
        spec = {"name": spec}
    if not isinstance(spec, Mapping):
        raise ConfigError(f"{where}: expected a policy name or a mapping with 'name', got {spec!r}")
    options = dict(spec)
    name = options.pop("name", None)
    if name not in POLICY_NAMES:
        raise ConfigError(f"{where}: unknown cache policy {name!r}{did_you_mean(str(name), POLICY_NAMES)}; "
                          f"policies: {', '.join(POLICY_NAMES)}")
    allowed = _COMMON_OPTIONS | _OWN_OPTIONS.get(name, set())
    unknown = sorted(set(options) - allowed)
    if unknown:
        raise ConfigError(f"{where}: policy {name!r} takes no option(s) {unknown}; its options: {sorted(allowed)}")
    defaults = {"inspect": {"escalate_after_s": INSPECT_ESCALATION_GAP_S},
                "claude-code": {"messages": CLAUDE_CODE_MESSAGES[0]}}.get(name, {})
    policy = CachePolicy(name=name, **{**defaults, **options})
    _check(policy, where)
    return policy


def _check(policy: CachePolicy, where: str) -> None:
    """Option types and ranges, and Anthropic's limit of four markers a request."""
    if policy.ttl not in TTLS:
        raise ConfigError(f"{where}: ttl must be one of {', '.join(TTLS)}, got {policy.ttl!r}")
    gap = policy.escalate_after_s
    if gap is not None and (isinstance(gap, bool) or not isinstance(gap, (int, float)) or gap <= 0):
        raise ConfigError(f"{where}: escalate_after_s must be a positive number of seconds or null, got {gap!r}")
    for switch in ("system", "tools", "automatic"):
        if not isinstance(getattr(policy, switch), bool):
            raise ConfigError(f"{where}: {switch} must be true or false, got {getattr(policy, switch)!r}")
    if isinstance(policy.messages, bool) or not isinstance(policy.messages, int) or policy.messages < 0:
        raise ConfigError(f"{where}: messages must be a non-negative integer, got {policy.messages!r}")
    if policy.name == "claude-code" and policy.messages not in CLAUDE_CODE_MESSAGES:
        raise ConfigError(f"{where}: claude-code's messages must be 1 (Claude Code 2.1.59 and later) or 2 (earlier "
                          f"versions), got {policy.messages!r}")
    if policy.breakpoint_count() > MAX_BREAKPOINTS:
        raise ConfigError(f"{where}: policy {policy.name!r} places {policy.breakpoint_count()} cache breakpoints "
                          f"(system, tools, automatic and {policy.messages} message(s)); Anthropic accepts at most "
                          f"{MAX_BREAKPOINTS} a request, the automatic one counted")


def provider_family(model: str, mock_cache: str | None = None, api_base: str | None = None) -> str:
    """The caching family of a litellm model name at `api_base`; a mock's is its simulated cache's (`mock.cache`).
    An `openai/` or `azure/` model of the GPT-5.6 family or later is OPENAI_BREAKPOINTS at any api base: a proxy in
    front of it passes the markers on, as litellm does once `prompt_cache_options` is set."""
    if model.startswith("mock/"):
        style = mock_cache or "anthropic"
        return ANTHROPIC if style == "anthropic" else OPENAI_BREAKPOINTS if style == OPENAI_BREAKPOINTS else OPENAI
    import litellm

    try:
        _, provider, _, _ = litellm.get_llm_provider(model)
    except Exception:  # litellm raises a bare Exception for a model it cannot route
        return OTHER
    if provider == "anthropic":
        return ANTHROPIC
    if provider.startswith("bedrock") and "claude" in model:
        return BEDROCK
    if provider.startswith("vertex_ai") and "claude" in model:
        return VERTEX
    if provider in ("openai", "azure") and openai_breakpoints.takes_breakpoints(model):
        return OPENAI_BREAKPOINTS
    if provider == "openai":
        from litellm.llms.openai.chat.gpt_transformation import targets_openai_hosted_endpoint

        return OPENAI if targets_openai_hosted_endpoint(provider, api_base) else COMPATIBLE
    if provider == "azure":
        return OPENAI
    return OTHER


def needs_markers(family: str) -> bool:
    """Whether the family caches only what a request marks (Claude), so a policy sending none caches nothing."""
    return family in MARKED_FAMILIES


class CachePlanner:
    """One client's policy at work: the marks of each request it sends, with the state a policy keeps across
    requests (the clock of the previous request, whether the TTL has been escalated)."""

    def __init__(self, policy: CachePolicy, family: str, session_key: str):
        self.policy = policy
        self.family = family
        self.session_key = session_key
        self._last_clock_s: float | None = None
        self._escalated = False

    def marks(self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Any] | None,
              clock_s: float | None) -> CacheMarks:
        """The marks of the request about to be sent at `clock_s` (simulated seconds; None: no clock)."""
        self._note_gap(clock_s)
        if self.family == OPENAI_BREAKPOINTS:  # one lifetime: the policy's TTL options are Anthropic's
            return _openai_marks(self.policy, messages, self.session_key)
        ttl = "1h" if self._escalated else self.policy.ttl
        return _PLACERS[self.policy.name](self.policy, self.family, messages, tools or (), ttl, self.session_key)

    def _note_gap(self, clock_s: float | None) -> None:
        """Escalate to the 1h TTL for the rest of the run once a gap exceeds the policy's (sticky, as Inspect)."""
        gap_limit = self.policy.escalate_after_s
        if clock_s is None:
            return
        if gap_limit is not None and self._last_clock_s is not None and clock_s - self._last_clock_s > gap_limit:
            self._escalated = True
        self._last_clock_s = clock_s


def _system_index(messages: Sequence[Mapping[str, Any]]) -> int | None:
    return 0 if messages and messages[0].get("role") == "system" else None


def _last_tool(tools: Sequence[Any], ttl: str) -> tuple[Breakpoint, ...]:
    return (Breakpoint("tool", len(tools) - 1, ttl),) if tools else ()


def _system(messages: Sequence[Mapping[str, Any]], ttl: str) -> tuple[Breakpoint, ...]:
    index = _system_index(messages)
    return (Breakpoint("message", index, ttl),) if index is not None else ()


def _last_messages(messages: Sequence[Mapping[str, Any]], count: int, ttl: str) -> tuple[Breakpoint, ...]:
    """The last `count` messages that are not the system prompt, oldest first."""
    first = 1 if _system_index(messages) is not None else 0
    return tuple(Breakpoint("message", index, ttl) for index in range(max(first, len(messages) - count), len(messages)))


def _place_auto(policy: CachePolicy, family: str, messages: Sequence[Mapping[str, Any]], tools: Sequence[Any],
                ttl: str, session_key: str) -> CacheMarks:
    """Anthropic direct: automatic caching plus the system prompt and the tool list, which a new conversation
    shares; Bedrock and Vertex (no top-level field): the same blocks and the last message; OpenAI: its key; an
    OpenAI-compatible endpoint (Claude behind a proxy, serve-mock; litellm passes the markers and the top-level
    field on): Anthropic's marks and the key."""
    fixed = _system(messages, ttl) + _last_tool(tools, ttl)
    if family == ANTHROPIC:
        return CacheMarks(breakpoints=fixed, automatic=ttl)
    if family in (BEDROCK, VERTEX):
        return CacheMarks(breakpoints=_dedupe(fixed + _last_messages(messages, 1, ttl)))
    if family == COMPATIBLE:
        return CacheMarks(breakpoints=fixed, automatic=ttl, prompt_cache_key=session_key)
    if family == OPENAI:
        return CacheMarks(prompt_cache_key=session_key)
    return NO_MARKS


def _place_none(*_: Any) -> CacheMarks:
    return NO_MARKS


def _place_last(policy: CachePolicy, family: str, messages: Sequence[Mapping[str, Any]], tools: Sequence[Any],
                ttl: str, session_key: str) -> CacheMarks:
    """One breakpoint on the last block of the request, whatever the provider."""
    if messages:
        return CacheMarks(breakpoints=(Breakpoint("message", len(messages) - 1, ttl),))
    return CacheMarks(breakpoints=_last_tool(tools, ttl))


def _place_inspect(policy: CachePolicy, family: str, messages: Sequence[Mapping[str, Any]], tools: Sequence[Any],
                   ttl: str, session_key: str) -> CacheMarks:
    """Inspect AI's Anthropic provider: the last system block, the last tool, the second-to-last cacheable
    message block (a fallback when the last one changes) and automatic caching on the direct API only."""
    if not needs_markers(family):
        return NO_MARKS
    lookback = _inspect_lookback(messages)
    marks = _system(messages, ttl) + _last_tool(tools, ttl)
    if lookback is not None:
        marks += (Breakpoint("message", lookback, ttl),)
    return CacheMarks(breakpoints=marks, automatic=ttl if family == ANTHROPIC else None)


def _inspect_lookback(messages: Sequence[Mapping[str, Any]]) -> int | None:
    """The message whose last block is the second-to-last cacheable block, walking back from the end as Inspect's
    `add_lookback_cache_control` does: a user message of plain text counts as a block that cannot carry a marker
    (nothing is marked then); a tool result is one block; an assistant message is its text (if any) and one block
    per tool call. None when that block is not the last of its message (a marker goes on a message's last block)."""
    seen = 0
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        role = message.get("role")
        if role == "system":
            continue
        blocks = _block_count(message)
        if seen + blocks >= 2:
            if role == "user" and isinstance(message.get("content"), str):
                return None
            return index if seen == 1 else None
        seen += blocks
    return None


def _block_count(message: Mapping[str, Any]) -> int:
    """How many content blocks a message becomes in Anthropic's format."""
    if message.get("role") != "assistant":
        content = message.get("content")
        return len(content) if isinstance(content, list) and content else 1
    return int(bool(message.get("content"))) + len(message.get("tool_calls") or ())


def _place_pydantic_ai(policy: CachePolicy, family: str, messages: Sequence[Mapping[str, Any]],
                       tools: Sequence[Any], ttl: str, session_key: str) -> CacheMarks:
    """Pydantic AI's unified `cache` setting on its Anthropic model: instructions and tool definitions always,
    the conversation by automatic caching where the client takes it, else a breakpoint on its last block."""
    if not needs_markers(family):
        return NO_MARKS
    fixed = _system(messages, ttl) + _last_tool(tools, ttl)
    if family == ANTHROPIC:
        return CacheMarks(breakpoints=fixed, automatic=ttl)
    return CacheMarks(breakpoints=_dedupe(fixed + _last_messages(messages, 1, ttl)))


def _place_openhands(policy: CachePolicy, family: str, messages: Sequence[Mapping[str, Any]],
                     tools: Sequence[Any], ttl: str, session_key: str) -> CacheMarks:
    """OpenHands SDK's `_apply_prompt_caching`: the system message and the last user or tool message."""
    if not needs_markers(family):
        return NO_MARKS
    last = next((index for index in range(len(messages) - 1, -1, -1)
                 if messages[index].get("role") in ("user", "tool")), None)
    marks = _system(messages, ttl) + ((Breakpoint("message", last, ttl),) if last is not None else ())
    return CacheMarks(breakpoints=_dedupe(marks))


def _place_mini_swe_agent(policy: CachePolicy, family: str, messages: Sequence[Mapping[str, Any]],
                          tools: Sequence[Any], ttl: str, session_key: str) -> CacheMarks:
    """mini-swe-agent's `set_cache_control` ("default_end", its default for Claude models): the last message."""
    if not needs_markers(family):
        return NO_MARKS
    return CacheMarks(breakpoints=_last_messages(messages, 1, ttl))


def _place_claude_code(policy: CachePolicy, family: str, messages: Sequence[Mapping[str, Any]],
                       tools: Sequence[Any], ttl: str, session_key: str) -> CacheMarks:
    """Claude Code's main-loop request, read from its npm package @anthropic-ai/claude-code (docs/caching.md gives
    the byte offsets): every system-prompt block but the billing header carries a marker (the block builder beside
    the system-prompt splitter, 1.0.128 to 2.1.332); one message, the last, on its last block (the function logging
    `tengu_api_cache_breakpoints`: `length - 1` from 2.1.59, `index > length - 3`, the last two, in 1.0.128 to
    2.1.58); tool schemas are built without a marker and the main loop sends no top-level one; one TTL for all, 1h
    only for a claude.ai subscriber's main thread. It speaks only to Claude (Anthropic's API, Bedrock, Vertex), so
    other providers get nothing, as under the other anchors that mark Claude only."""
    if not needs_markers(family):
        return NO_MARKS
    return CacheMarks(breakpoints=_system(messages, ttl) + _last_messages(messages, policy.messages, ttl))


def _place_custom(policy: CachePolicy, family: str, messages: Sequence[Mapping[str, Any]], tools: Sequence[Any],
                  ttl: str, session_key: str) -> CacheMarks:
    """The blocks the options name; automatic caching only where the provider takes it (Anthropic direct)."""
    marks = (_system(messages, ttl) if policy.system else ()) + (_last_tool(tools, ttl) if policy.tools else ())
    marks += _last_messages(messages, policy.messages, ttl)
    automatic = ttl if policy.automatic and family == ANTHROPIC else None
    return CacheMarks(breakpoints=_dedupe(marks), automatic=automatic)


def _dedupe(marks: tuple[Breakpoint, ...]) -> tuple[Breakpoint, ...]:
    """One marker a block (the system prompt may also be the last message)."""
    seen: set[tuple[str, int]] = set()
    kept = []
    for mark in marks:
        if (mark.block, mark.index) not in seen:
            seen.add((mark.block, mark.index))
            kept.append(mark)
    return tuple(kept)


_PLACERS = {"auto": _place_auto, "none": _place_none, "last": _place_last, "inspect": _place_inspect,
            "pydantic-ai": _place_pydantic_ai, "openhands": _place_openhands,
            "mini-swe-agent": _place_mini_swe_agent, "claude-code": _place_claude_code, "custom": _place_custom}


def _openai_marks(policy: CachePolicy, messages: Sequence[Mapping[str, Any]], session_key: str) -> CacheMarks:
    """Each policy on OpenAI's GPT-5.6 family and later (docs/caching.md): `auto` keeps OpenAI's implicit breakpoint
    and marks the system prompt (the end of the tool list and the instructions, which every request of a run and every
    new conversation share) and the newest message, written even where OpenAI would place its own elsewhere, with
    the run's key; `pydantic-ai`: implicit and the system prompt (its unified `cache` setting); `last` and `custom`:
    their blocks in explicit mode (`custom` with `automatic`: implicit), the tool list having no breakpoint of its
    own; `none` and the anchors whose libraries send OpenAI no breakpoint unasked: nothing. A breakpoint goes only
    where OpenAI takes one (`openai_breakpoints.can_carry_breakpoint`)."""
    ttl, name = openai_breakpoints.TTL, policy.name
    if name == "auto":
        newest = openai_breakpoints.newest_eligible(messages)
        newest_mark = (Breakpoint("message", newest, ttl),) if newest is not None else ()
        return CacheMarks(breakpoints=_dedupe(_system(messages, ttl) + newest_mark), prompt_cache_key=session_key,
                          prompt_cache_mode="implicit")
    if name == "pydantic-ai":
        marks, mode = _system(messages, ttl), "implicit"
    elif name == "last":
        marks, mode = (Breakpoint("message", len(messages) - 1, ttl),) if messages else (), "explicit"
    elif name == "custom":
        marks = (_system(messages, ttl) if policy.system else ()) + _last_messages(messages, policy.messages, ttl)
        mode = "implicit" if policy.automatic else "explicit"
    else:
        return NO_MARKS
    kept = tuple(mark for mark in marks if openai_breakpoints.can_carry_breakpoint(messages[mark.index]))
    return CacheMarks(breakpoints=_dedupe(kept), prompt_cache_mode=mode)


# --- on the wire: litellm's OpenAI-format markers ---------------------------------------------------------------

def cache_control(ttl: str) -> dict[str, str]:
    """Anthropic's marker; the 5m TTL is the default and goes unsaid, as Inspect AI sends it."""
    return {"type": "ephemeral", **({"ttl": ttl} if ttl != "5m" else {})}


def mark_request(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, marks: CacheMarks
                 ) -> tuple[list[dict[str, Any]], list[dict[str, Any]] | None, dict[str, Any]]:
    """The request as litellm sends it with `marks`: new lists in which only the marked messages and tools are
    copies (the event log's messages are never touched), and the request's extra keyword arguments (top-level
    `cache_control` for automatic caching, `prompt_cache_key`, OpenAI's `prompt_cache_options`, which litellm puts in
    the body as it is). Marks with a `prompt_cache_mode` are OpenAI's: `prompt_cache_breakpoint` on a message's
    last content part, which litellm passes on to OpenAI (chat completions or, bridged, the Responses API)."""
    extra: dict[str, Any] = {}
    if marks.automatic:
        extra["cache_control"] = cache_control(marks.automatic)
    if marks.prompt_cache_key:
        extra["prompt_cache_key"] = marks.prompt_cache_key
    if marks.prompt_cache_mode is not None:
        extra["prompt_cache_options"] = openai_breakpoints.cache_options(marks.prompt_cache_mode)
    if not marks.breakpoints:
        return messages, tools, extra
    messages, tools = list(messages), list(tools) if tools is not None else None
    for mark in marks.breakpoints:
        if mark.block == "tool" and tools is not None:
            tools[mark.index] = {**tools[mark.index], "cache_control": cache_control(mark.ttl)}
        elif mark.block == "message" and marks.prompt_cache_mode is not None:
            messages[mark.index] = _with_breakpoint(messages[mark.index])
        elif mark.block == "message":
            messages[mark.index] = _marked_message(messages[mark.index], cache_control(mark.ttl))
    return messages, tools, extra


def _with_breakpoint(message: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of `message` whose last content part carries OpenAI's `prompt_cache_breakpoint`, a plain text content
    becoming one text part (the shape litellm gives a `cache_control` it renames for OpenAI)."""
    content = message.get("content")
    parts = content if isinstance(content, list) and content else [{"type": "text", "text": content or ""}]
    return {**message, "content": [*parts[:-1], {**parts[-1], "prompt_cache_breakpoint":
                                                 openai_breakpoints.breakpoint_marker()}]}


def _marked_message(message: Mapping[str, Any], marker: dict[str, str]) -> dict[str, Any]:
    """A copy of `message` whose last Anthropic block carries `marker`, where litellm's Anthropic transformation
    reads it: a tool message's own `cache_control` (its tool_result block); an assistant message's last tool
    call (its last tool_use block); else the last content part, a plain text content becoming one text part."""
    role = message.get("role")
    if role == "tool":
        return {**message, "cache_control": marker}
    calls = message.get("tool_calls") if role == "assistant" else None
    if calls:
        return {**message, "tool_calls": [*calls[:-1], {**calls[-1], "cache_control": marker}]}
    content = message.get("content")
    if isinstance(content, list) and content:
        return {**message, "content": [*content[:-1], {**content[-1], "cache_control": marker}]}
    return {**message, "content": [{"type": "text", "text": content or "", "cache_control": marker}]}


def policy_label(spec: Any) -> str:
    """A policy as one short text (rows, tables): its name, then any option not at its default."""
    data = parse_policy(spec).as_data()
    if isinstance(data, str):
        return data
    options = ",".join(f"{key}={value}" for key, value in data.items() if key != "name")
    return f"{data['name']}({options})"


def uncached_note(profile: Mapping[str, Any]) -> str | None:
    """A sentence for a profile (plain data) whose provider caches only marked prefixes and whose policy marks
    nothing: such a run reads nothing from the cache. None otherwise."""
    model = str(profile.get("model", ""))
    mock = profile.get("mock") if isinstance(profile.get("mock"), Mapping) else {}
    family = provider_family(model, mock.get("cache"), profile.get("api_base"))
    policy = parse_policy(profile.get("cache_policy"))
    probe = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]
    marks = CachePlanner(policy, family, "").marks(probe, [{}], None)
    billed = f" (billed as {profile['price_model']})" if model.startswith("mock/") and profile.get("price_model") else ""
    if family == OPENAI_BREAKPOINTS and marks.prompt_cache_mode == "explicit" and not marks.breakpoints:
        return (f"cache policy {policy_label(policy)!r} asks {model}{billed} to cache at explicit breakpoints only "
                "(prompt_cache_options mode explicit) and places none: nothing is read from the cache, every "
                "request pays full input price")
    if not needs_markers(family) or marks != NO_MARKS:
        return None
    return (f"cache policy {policy_label(policy)!r} sends no cache marker, and {model}{billed} caches only what a request "
            "marks (Anthropic's caching): nothing is read from the cache, every request pays full input price")
