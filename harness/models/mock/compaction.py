"""Anthropic's server-side compaction (the `compact_20260112` context edit), as the simulated provider applies it.

The rules, from Anthropic's "Compaction" docs and the `anthropic` SDK's types (beta/beta_compact_20260112_edit_param.py,
beta_compaction_block.py, beta_usage.py):
- the edit sits in `context_management.edits` beside the other context edits, with the beta `compact-2026-01-12`;
  its `trigger` is `{"type": "input_tokens", "value": N}`, 150,000 by default and at least 50,000;
- when a request's input passes the trigger, the API first summarizes the conversation in a separate sampling step
  (the `compaction` iteration, billed), then answers from the compacted context: the system prompt, the tools and the
  `compaction` block that holds the summary; the reply starts with that block. With `pause_after_compaction` it
  answers with the block alone (stop reason `compaction`), and the next request continues the turn;
- on every later request the API drops every block before the latest compaction block; a block whose content is
  null is a failed compaction, a no-op;
- usage: the top-level fields are the last message iteration's; `usage.iterations` lists each sampling step, the
  compaction's tokens only there. litellm bills the sum of the iterations (anthropic/chat/transformation.py).

The SDK's compaction request (anthropic SDK 2.x, types/beta/beta_compaction_config_param.py and the `compaction` field
of beta/message_create_params.py; beta `compact-2026-09-04`), which the SDK's tool runner sends
(`compact_before_next_turn`):
- `compaction: {"type": "summarize", "instructions": ...}` makes the request a compaction request: the conversation in
  `messages` is summarized, and the response holds the `compaction` block alone (stop reason `compaction`): there is
  no trigger and no pause flag, nothing is sampled after the block; instructions replace the server's prompt, one
  empty or only whitespace counts as absent; the parameter cannot be combined with `context_management`;
- the block is signed: its `signature` is sent back verbatim with it (a block whose signature does not match its
  summary is refused: ours, the mock's reading of "to be sent back with the block verbatim");
- later requests send the block first in `messages` in place of what it summarizes, read as every compaction block is
  (below); the API cannot compact a conversation whose last turn has an unanswered tool call (the SDK's
  lib/tools/_beta_runner.py `_prepare_compaction_after_final_turn`);
- usage: the compaction is a `compaction` iteration alone; the top-level fields, a message step's, are zero.

The summary is the mock summarizer's, written from what the request contained, as lossy as every summary here; the
agent's own `notes_completeness` knob decides what it drops, as the same model summarizes itself. The model-visible
context keeps the summary as its own block (harness.models.provider_compaction.summary_message), so a later request's
prefix can read it from the cache.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Mapping, Sequence

from harness.core.tokens import stable_hash
from harness.models.cache_marks import Breakpoint, CacheMarks
from harness.models.provider_compaction import (ANTHROPIC_CLEAR_EDIT, ANTHROPIC_DEFAULT_TRIGGER, ANTHROPIC_EDIT,
                                                ANTHROPIC_MIN_TRIGGER, carried_entries, compaction_at, compaction_blocks, summary_message,
                                                visible_from, with_blocks)

EDIT, DEFAULT_TRIGGER, MIN_TRIGGER = ANTHROPIC_EDIT, ANTHROPIC_DEFAULT_TRIGGER, ANTHROPIC_MIN_TRIGGER
# Context edits the API knows: the compaction edit is read here, clear_tool_uses by harness.models.mock.context_editing;
# the simulated provider refuses to pretend the other.
OTHER_EDITS = ("clear_thinking_20251015",)
_EDIT_KEYS = {"type", "trigger", "instructions", "pause_after_compaction"}
SUMMARIZE = "summarize"  # the compaction request's only type (beta_compaction_config_param.py)
_SUMMARIZE_KEYS = {"type", "instructions"}


class CompactionRequestError(ValueError):
    """A `context_management` the API would refuse (400); `param` names the field."""

    def __init__(self, param: str, message: str):
        super().__init__(f"{param}: {message}")
        self.param = param


@dataclass(frozen=True)
class CompactEdit:
    """One request's compaction edit, read and checked."""

    trigger: int = DEFAULT_TRIGGER
    instructions: str | None = None
    pause_after_compaction: bool = False
    signed: bool = False  # a compaction request's block carries a signature (the SDK's `compaction` parameter)


def read_edit(context_management: Any, where: str = "context_management") -> CompactEdit | None:
    """The request's compaction edit, or None when it asks for none; raises CompactionRequestError as the API
    refuses a malformed one (a clear_tool_uses edit beside it: harness.models.mock.context_editing.read_clear)."""
    if context_management is None:
        return None
    if not isinstance(context_management, Mapping):
        raise CompactionRequestError(where, "expected an object with 'edits'")
    edits = context_management.get("edits")
    if not isinstance(edits, list):
        raise CompactionRequestError(f"{where}.edits", "expected a list of edits")
    found: CompactEdit | None = None
    for index, edit in enumerate(edits):
        at = f"{where}.edits[{index}]"
        kind = edit.get("type") if isinstance(edit, Mapping) else None
        if kind in OTHER_EDITS:
            raise CompactionRequestError(f"{at}.type", f"the simulated provider applies {EDIT} and "
                                                       f"{ANTHROPIC_CLEAR_EDIT}, not {kind}")
        if kind == ANTHROPIC_CLEAR_EDIT:
            continue
        if kind != EDIT:
            raise CompactionRequestError(f"{at}.type", f"unknown context edit {kind!r}")
        if found is not None:
            raise CompactionRequestError(at, f"{EDIT} given twice")
        found = _read_compact(edit, at)
    return found


def _read_compact(edit: Mapping[str, Any], where: str) -> CompactEdit:
    unknown = sorted(set(edit) - _EDIT_KEYS)
    if unknown:
        raise CompactionRequestError(f"{where}.{unknown[0]}", "Extra inputs are not permitted")
    trigger = edit.get("trigger")
    value = DEFAULT_TRIGGER
    if trigger is not None:
        if not isinstance(trigger, Mapping) or trigger.get("type") != "input_tokens" or set(trigger) != {"type", "value"}:
            raise CompactionRequestError(f"{where}.trigger", "expected {\"type\": \"input_tokens\", \"value\": N}")
        value = trigger["value"]
        if type(value) is not int:
            raise CompactionRequestError(f"{where}.trigger.value", f"expected an integer, got {value!r}")
        if value < MIN_TRIGGER:
            raise CompactionRequestError(f"{where}.trigger.value", f"must be at least {MIN_TRIGGER}, got {value}")
    instructions = edit.get("instructions")
    if instructions is not None and not isinstance(instructions, str):
        raise CompactionRequestError(f"{where}.instructions", "expected a string or null")
    pause = edit.get("pause_after_compaction", False)
    if not isinstance(pause, bool):
        raise CompactionRequestError(f"{where}.pause_after_compaction", f"expected a boolean, got {pause!r}")
    return CompactEdit(trigger=value, instructions=instructions or None, pause_after_compaction=pause)


def read_summarize(compaction: Any, context_management: Any, where: str = "compaction") -> CompactEdit | None:
    """A compaction request (`compaction: {"type": "summarize"}`) as an edit that always compacts and pauses,
    signed; None when the request is none. Raises CompactionRequestError as the API refuses a malformed one."""
    if compaction is None:
        return None
    if context_management is not None:
        raise CompactionRequestError(where, "cannot be combined with context_management")
    if not isinstance(compaction, Mapping) or compaction.get("type") != SUMMARIZE:
        raise CompactionRequestError(f"{where}.type", f"expected {SUMMARIZE!r}")
    unknown = sorted(set(compaction) - _SUMMARIZE_KEYS)
    if unknown:
        raise CompactionRequestError(f"{where}.{unknown[0]}", "Extra inputs are not permitted")
    instructions = compaction.get("instructions")
    if instructions is not None and not isinstance(instructions, str):
        raise CompactionRequestError(f"{where}.instructions", "expected a string or null")
    return CompactEdit(trigger=0, instructions=instructions if instructions and instructions.strip() else None,
                       pause_after_compaction=True, signed=True)


def check_answered(messages: Sequence[Mapping[str, Any]]) -> None:
    """A compaction request's conversation must not end on tool calls without their results."""
    last = next((index for index in range(len(messages) - 1, -1, -1) if messages[index].get("role") == "assistant"),
                None)
    if last is None:
        return
    answered = {message.get("tool_call_id") for message in messages[last + 1:] if message.get("role") == "tool"}
    missing = [call.get("id") for call in messages[last].get("tool_calls") or () if call.get("id") not in answered]
    if missing:
        raise CompactionRequestError("messages", f"the last turn has tool calls without results ({missing[0]}): "
                                                 "a conversation is compacted between turns")


def signature(summary: str) -> str:
    """The mock's signature over a summary (ours: a digest only the mock makes)."""
    return "mock-" + stable_hash(["ctxbench-compaction", summary])[:32]


def check_signatures(messages: Sequence[Mapping[str, Any]]) -> None:
    """Every signed compaction block must come back as it was made."""
    for index, _, block in carried_entries(messages, compaction_blocks):
        if "signature" in block and block["signature"] != signature(block.get("content") or ""):
            raise CompactionRequestError(f"messages[{index}].compaction.signature",
                                         "does not match the block's summary: send the block back verbatim")


def visible_context(messages: Sequence[dict[str, Any]], marks: CacheMarks | None
                    ) -> tuple[list[dict[str, Any]], CacheMarks | None]:
    """What the model sees of a request (harness.models.provider_compaction.provider_visible), with the request's
    cache marks moved with their messages: a mark on a dropped message is dropped; one on the compacted message
    marks its last part."""
    found = compaction_at(messages)
    visible = visible_from(messages, found)
    if found is None or marks is None:
        return visible, marks
    at, _, kept = found
    last_part = len(visible) - (len(messages) - at)  # the compacted message's last part: the summary or its rest
    moved: dict[int, int] = {old: new for new, old in enumerate(kept)}
    moved.update({old: last_part + old - at for old in range(at, len(messages))})
    breakpoints = tuple(mark if mark.block != "message" else Breakpoint("message", moved[mark.index], mark.ttl)
                        for mark in marks.breakpoints if mark.block != "message" or mark.index in moved)
    return visible, replace(marks, breakpoints=breakpoints)


def compacted_context(visible: Sequence[dict[str, Any]], summary: str) -> list[dict[str, Any]]:
    """The context the API answers from after compacting: the system prompt and the summary."""
    return [*(message for message in visible if message.get("role") == "system"), summary_message(summary)]


def compacted_marks(marks: CacheMarks | None, visible: Sequence[dict[str, Any]]) -> CacheMarks | None:
    """The request's marks on the compacted context: those on tools and the system prompt stay, automatic caching
    lands on the summary (the last block); marks on summarized messages are gone with them."""
    if marks is None:
        return None
    system = sum(1 for message in visible if message.get("role") == "system")
    kept = tuple(mark for mark in marks.breakpoints if mark.block != "message" or mark.index < system)
    return replace(marks, breakpoints=kept)  # OpenAI's mode too: the compacted context is read as the request asked


def compaction_reply(summary: str, answer: dict[str, Any] | None, signed: bool = False) -> dict[str, Any]:
    """The reply: the compaction block first (signed for a compaction request), then the answer (none when paused)."""
    reply = dict(answer) if answer is not None else {"role": "assistant", "content": ""}
    block = {"type": "compaction", "content": summary, **({"signature": signature(summary)} if signed else {})}
    return with_blocks(reply, [block])


# The summarizing instruction of the API's compaction step when the edit gives none: the API's own is the server's and
# unpublished, so a neutral one of ours stands in (it only sizes the step's input, by a few tokens).
DEFAULT_INSTRUCTIONS = "Summarize the conversation above so that the work can continue from the summary alone."


def iteration(kind: str, prompt_tokens: int, output_tokens: int, read: int, written: int | None,
              written_1h: int = 0) -> dict[str, Any]:
    """One entry of `usage.iterations`, in Anthropic's fields (input_tokens: neither read nor written)."""
    return {"type": kind, "input_tokens": prompt_tokens - read - (written or 0), "output_tokens": output_tokens,
            "cache_read_input_tokens": read, "cache_creation_input_tokens": written or 0,
            "cache_creation": {"ephemeral_5m_input_tokens": (written or 0) - written_1h,
                               "ephemeral_1h_input_tokens": written_1h}}
