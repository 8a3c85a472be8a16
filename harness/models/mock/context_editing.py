"""Anthropic's server-side context editing (the `clear_tool_uses_20250919` edit), as the simulated provider applies it.

The rules, from Anthropic's "Context editing" docs (https://platform.claude.com/docs/en/build-with-claude/context-editing:
"Tool result clearing", "Configuration options for tool result clearing", "Context editing response", "Token
counting") and the anthropic SDK 2.17's types (beta/beta_clear_tool_uses_20250919_edit_param.py and the trigger, keep
and clear_at_least params beside it, beta_clear_tool_uses_20250919_edit_response.py, beta_context_management_response.py,
beta_count_tokens_context_management_response.py):
- the edit sits in `context_management.edits`, with the beta `context-management-2025-06-27` (litellm adds it:
  anthropic/chat/transformation.py `_ensure_context_management_beta_header`); it is applied server-side before the
  prompt reaches the model, and the client keeps its whole history;
- `trigger` (default 100,000 input tokens): once the prompt exceeds it, clearing begins; `{"type": "input_tokens"}`
  or `{"type": "tool_uses"}`;
- `keep` (default 3 tool uses): the most recent tool uses stay; the oldest are cleared first, each result replaced by
  a placeholder telling the model it was removed;
- `clear_at_least` (default none): if the API cannot clear that many input tokens, the edit is not applied;
- `exclude_tools`: those tools' uses and results are never cleared; `clear_tool_inputs` (default false; true, or a
  list of tool names): the cleared uses' parameters are cleared too;
- the response reports `context_management.applied_edits`: `{"type", "cleared_tool_uses", "cleared_input_tokens"}`;
  litellm keeps it in the message's `provider_specific_fields.context_management`
  (anthropic/chat/transformation.py `_build_provider_specific_fields`); token counting reports the count after the
  edit and `context_management.original_input_tokens`;
- the cache: clearing changes the prompt from the first cleared block on, so a cached prefix past it is not read; each
  clearing writes anew (the simulated prefix cache reads and writes the edited request as any other).

Where the docs are silent, litellm 1.110.2's polyfill of the edit, which its docstring says matches the API's
selection (llms/anthropic/messages/context_management/editors/clear_tool_uses.py, constants.py, placeholders.py):
the placeholder text "[Cleared by context management]" (constants.py:10; a list content becomes one text block,
placeholders.py); `keep` and a `tool_uses` trigger count clearable uses only: not those of `exclude_tools`, nor those
whose result is 1 to 46 bytes of text, unless `clear_tool_inputs` covers their tool (clear_tool_uses.py:40-41,
180-187, 386-397); the latest tool result is never cleared (:290-303, 399-404); with `clear_at_least`, uses are
cleared oldest first in batches each freeing at least that many tokens, an incomplete last batch left (:210-220), so
the cleared prefix only grows from request to request; a cleared input becomes `{}` (:338-352).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, MutableMapping, Sequence

from harness.core.frozen import freeze
from harness.core.tokens import count_message, count_text, count_tools
from harness.models.mock.compaction import CompactionRequestError
from harness.models.provider_compaction import ANTHROPIC_CLEAR_EDIT as EDIT, ANTHROPIC_EDIT as COMPACT_EDIT

DEFAULT_TRIGGER = 100_000
DEFAULT_KEEP = 3
PLACEHOLDER = "[Cleared by context management]"
CLEARED_INPUT = "{}"
TINY_RESULT_BYTES = 46
TRIGGER_UNITS = ("input_tokens", "tool_uses")
_KEYS = {"type", "trigger", "keep", "clear_at_least", "exclude_tools", "clear_tool_inputs"}


@dataclass(frozen=True)
class ClearEdit:
    """One request's clear_tool_uses edit, read and checked."""

    trigger: int = DEFAULT_TRIGGER
    trigger_unit: str = "input_tokens"
    keep: int = DEFAULT_KEEP
    clear_at_least: int = 0
    exclude_tools: frozenset[str] = frozenset()
    clear_inputs: bool | frozenset[str] = False  # every tool's, or those tools'
    after_compaction: bool = False  # a compact_20260112 edit comes before it in `edits`

    def clears_input(self, name: str) -> bool:
        return self.clear_inputs is True or (not isinstance(self.clear_inputs, bool) and name in self.clear_inputs)


@dataclass
class Clearing:
    """What the edit did to one request: the edited messages by index, and the applied edit the response reports."""

    edited: dict[int, Mapping[str, Any]] = field(default_factory=dict)
    cleared_tool_uses: int = 0
    cleared_input_tokens: int = 0

    def applied(self) -> dict[str, Any]:
        return {"type": EDIT, "cleared_tool_uses": self.cleared_tool_uses,
                "cleared_input_tokens": self.cleared_input_tokens}

    def request(self, messages: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
        """The request as the model sees it."""
        edited = self.edited
        return [edited.get(index, message) for index, message in enumerate(messages)]


def read_clear(context_management: Any, where: str = "context_management") -> ClearEdit | None:
    """The request's clear_tool_uses edit, or None when it asks for none; raises CompactionRequestError as the API
    refuses a malformed one (the edits list itself is checked by harness.models.mock.compaction.read_edit)."""
    if not isinstance(context_management, Mapping) or not isinstance(context_management.get("edits"), list):
        return None
    found: ClearEdit | None = None
    compaction_first = False
    for index, edit in enumerate(context_management["edits"]):
        kind = edit.get("type") if isinstance(edit, Mapping) else None
        if kind != EDIT:
            compaction_first = compaction_first or (found is None and kind == COMPACT_EDIT)
            continue
        at = f"{where}.edits[{index}]"
        if found is not None:
            raise CompactionRequestError(at, f"{EDIT} given twice")
        found = _read(edit, at, compaction_first)
    return found


def _read(edit: Mapping[str, Any], where: str, after_compaction: bool) -> ClearEdit:
    unknown = sorted(set(edit) - _KEYS)
    if unknown:
        raise CompactionRequestError(f"{where}.{unknown[0]}", "Extra inputs are not permitted")
    trigger, unit = DEFAULT_TRIGGER, "input_tokens"
    if edit.get("trigger") is not None:
        unit, trigger = _counted(edit["trigger"], f"{where}.trigger", TRIGGER_UNITS)
    keep = DEFAULT_KEEP if edit.get("keep") is None else _counted(edit["keep"], f"{where}.keep", ("tool_uses",))[1]
    least = 0 if edit.get("clear_at_least") is None else \
        _counted(edit["clear_at_least"], f"{where}.clear_at_least", ("input_tokens",))[1]
    exclude = _names(edit.get("exclude_tools"), f"{where}.exclude_tools")
    inputs = edit.get("clear_tool_inputs")
    clear_inputs: bool | frozenset[str] = inputs if isinstance(inputs, bool) else \
        _names(inputs, f"{where}.clear_tool_inputs") if inputs is not None else False
    return ClearEdit(trigger=trigger, trigger_unit=unit, keep=keep, clear_at_least=least, exclude_tools=exclude,
                     clear_inputs=clear_inputs, after_compaction=after_compaction)


def _counted(value: Any, where: str, units: tuple[str, ...]) -> tuple[str, int]:
    """A `{"type": UNIT, "value": N}` field (the SDK's trigger, keep and clear_at_least params): its unit and N."""
    if not isinstance(value, Mapping) or value.get("type") not in units or set(value) != {"type", "value"}:
        shapes = " or ".join(f'{{"type": "{unit}", "value": N}}' for unit in units)
        raise CompactionRequestError(where, f"expected {shapes}")
    number = value["value"]
    if type(number) is not int or number < 0:
        raise CompactionRequestError(f"{where}.value", f"expected an integer >= 0, got {number!r}")
    return value["type"], number


def _names(value: Any, where: str) -> frozenset[str]:
    if value is None:
        return frozenset()
    if not isinstance(value, list) or not all(isinstance(name, str) for name in value):
        raise CompactionRequestError(where, "expected a list of tool names")
    return frozenset(value)


def input_tokens(messages: Sequence[Mapping[str, Any]], tools: list[Mapping[str, Any]] | None) -> int:
    """A request's input tokens as the simulated provider counts them (harness.models.mock.provider: the tool list,
    then each message), the edit not applied."""
    return count_tools(tools) + sum(map(count_message, messages))


def _text_bytes(content: Any) -> int | None:
    """The UTF-8 size of a text-only result (None when it holds anything but text)."""
    if isinstance(content, str):
        return len(content.encode("utf-8", "surrogatepass"))
    if not isinstance(content, list):
        return None
    total = 0
    for part in content:
        text = part.get("text") if isinstance(part, Mapping) and part.get("type") == "text" else None
        if not isinstance(text, str):
            return None
        total += len(text.encode("utf-8", "surrogatepass"))
    return total


def _tiny(message: Mapping[str, Any]) -> bool:
    size = _text_bytes(message.get("content"))
    return size is not None and 0 < size <= TINY_RESULT_BYTES


@dataclass(frozen=True)
class _Use:
    call_id: str
    name: str
    call_at: int  # the assistant message holding the call
    result_at: int | None  # its result's message


def _uses(messages: Sequence[Mapping[str, Any]]) -> list[_Use]:
    """Every tool use in call order, with where its call and its result are."""
    results = {message.get("tool_call_id"): index for index, message in enumerate(messages)
               if message.get("role") == "tool"}
    return [_Use(call.get("id") or "", (call.get("function") or {}).get("name") or "", index,
                 results.get(call.get("id")))
            for index, message in enumerate(messages) if message.get("role") == "assistant"
            for call in message.get("tool_calls") or ()]


def clear(messages: Sequence[Mapping[str, Any]], edit: ClearEdit, unedited_tokens: int,
          memo: MutableMapping[tuple[int, frozenset[str]], tuple[Any, Any]] | None = None,
          compaction_trigger: int | None = None) -> Clearing | None:
    """The edit applied to a request whose input (as the model would see it unedited) is `unedited_tokens`; None when
    it does not act. `memo` (a session's) hands back the same edited object for a message cleared before, so the
    prefix cache and the agent read it as the message they have seen. `compaction_trigger`: the request's compaction
    edit's; listed before this edit and passed by the unedited request, the compaction acts first and leaves nothing
    to clear (the edits apply in the order given: litellm's dispatcher.py:129-175)."""
    if edit.after_compaction and compaction_trigger is not None and unedited_tokens > compaction_trigger:
        return None
    uses = _uses(messages)
    clearable = [use for use in uses if use.name not in edit.exclude_tools and
                 (use.result_at is None or not _tiny(messages[use.result_at]) or edit.clears_input(use.name))]
    if len(clearable) <= edit.keep:
        return None
    measured = len(clearable) if edit.trigger_unit == "tool_uses" else unedited_tokens
    if measured <= edit.trigger:
        return None
    latest = max((use.result_at for use in uses if use.result_at is not None), default=None)
    candidates = [use for use in clearable[:len(clearable) - edit.keep]
                  if use.result_at is not None and use.result_at != latest]
    if edit.clear_at_least:
        candidates = _in_batches(messages, candidates, edit)
    if not candidates:
        return None
    memo = memo if memo is not None else {}
    clearing = Clearing(cleared_tool_uses=len(candidates))
    inputs: dict[int, set[str]] = {}
    for use in candidates:
        clearing.edited[use.result_at] = _edited(messages[use.result_at], frozenset(), memo)
        if edit.clears_input(use.name):
            inputs.setdefault(use.call_at, set()).add(use.call_id)
    for at, call_ids in inputs.items():
        clearing.edited[at] = _edited(messages[at], frozenset(call_ids), memo)
    clearing.cleared_input_tokens = sum(count_message(messages[at]) - count_message(message)
                                        for at, message in clearing.edited.items())
    return clearing


def _in_batches(messages: Sequence[Mapping[str, Any]], candidates: list[_Use], edit: ClearEdit) -> list[_Use]:
    """Oldest first, a batch closes once it frees `clear_at_least` tokens; the incomplete last batch stays."""
    end, batch = 0, 0
    for index, use in enumerate(candidates):
        batch += _freed(messages, use, edit)
        if batch >= edit.clear_at_least:
            end, batch = index + 1, 0
    return candidates[:end]


def _freed(messages: Sequence[Mapping[str, Any]], use: _Use, edit: ClearEdit) -> int:
    """Tokens clearing this use frees: its result, and its input when `clear_tool_inputs` covers it."""
    result = messages[use.result_at]  # type: ignore[index]
    freed = count_message(result) - count_message(_cleared_result(result))
    if edit.clears_input(use.name):
        call = next(call for call in messages[use.call_at].get("tool_calls") or () if call.get("id") == use.call_id)
        freed += count_text((call.get("function") or {}).get("arguments") or "") - count_text(CLEARED_INPUT)
    return max(freed, 0)


def _cleared_result(message: Mapping[str, Any]) -> dict[str, Any]:
    content = [{"type": "text", "text": PLACEHOLDER}] if isinstance(message.get("content"), list) else PLACEHOLDER
    return {**message, "content": content}


def _without_inputs(message: Mapping[str, Any], call_ids: frozenset[str]) -> dict[str, Any]:
    calls = [{**call, "function": {**(call.get("function") or {}), "arguments": CLEARED_INPUT}}
             if call.get("id") in call_ids else call for call in message.get("tool_calls") or ()]
    return {**message, "tool_calls": calls}


def _edited(message: Mapping[str, Any], call_ids: frozenset[str],
            memo: MutableMapping[tuple[int, frozenset[str]], tuple[Any, Any]]) -> Mapping[str, Any]:
    """A tool result cleared (no `call_ids`), or an assistant message with those calls' inputs cleared; the memo's
    object when this message was edited so before."""
    key = (id(message), call_ids)
    known = memo.get(key)
    if known is not None and known[0] is message:
        return known[1]
    edited = freeze(_without_inputs(message, call_ids) if call_ids else _cleared_result(message))
    memo[key] = (message, edited)
    return edited
