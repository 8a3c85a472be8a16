"""Shared by the summarizing strategies: event previews, the summary prompt, and the emergency
`hard_context_reset()` loop of OpenHands (seed 000's hard condenser).

A summarizer never sees the messages themselves, only previews of them (one text line per
event, possibly shortened), so whatever a preview cuts is lost from the summary.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from harness.config import require
from harness.errors import CtxbenchError
from harness.tokens import message_text
from strategies.history import USER_ORIGIN

if TYPE_CHECKING:
    from harness.context import RunContext

# Seed 000: the text an emergency recovery's notice begins with (the rest is ours).
EMERGENCY_NOTICE = (
    "The environment triggered emergency context condensation after the model provider returned a "
    "context-window error. Your earlier conversation history was replaced by the summary that follows; "
    "it was written from previews of that history and may omit details. Re-read your notes or files as "
    "needed, then continue the user's work."
)
SUMMARY_HEADER = "Summary of the earlier conversation (condensed by the environment):\n"

# OpenHands' summarizing prompt asks for these sections (REFERENCES.md).
SUMMARY_SECTIONS = ("USER_CONTEXT", "TASK_TRACKING", "COMPLETED", "PENDING", "CURRENT_STATE", "CODE_STATE",
                    "TESTS", "CHANGES", "DEPS", "VERSION_CONTROL_STATUS")
SUMMARY_PROMPT = (
    "You are maintaining a context-aware state summary for an interactive agent. The events below are "
    "previews of the part of its history that is being forgotten; previews may be shortened. Write a "
    "summary that lets the agent continue its work without them. Keep the user's task statement and "
    "requirements verbatim, and every fact the agent has established. Use these sections:\n"
    + "\n".join(f"{name}:" for name in SUMMARY_SECTIONS)
)


class RecoverableRunError(CtxbenchError):
    """The run stops here, its history intact, and can be resumed with another configuration."""


@dataclass
class HardResetConfig:
    """The bounded retry loop of `hard_context_reset()`: attempts, and how previews shrink."""

    hard_context_reset_max_retries: int = 5
    hard_context_reset_context_scaling: float = 0.8

    def __post_init__(self) -> None:
        require(self.hard_context_reset_max_retries >= 1,
                f"hard_context_reset_max_retries must be at least 1, got {self.hard_context_reset_max_retries}")
        require(0.0 < self.hard_context_reset_context_scaling < 1.0,
                f"hard_context_reset_context_scaling must be in (0, 1), got {self.hard_context_reset_context_scaling}")


def preview(message_id: int, message: dict[str, Any], cap: int | None = None) -> str:
    """One event as a summarizer sees it: role, tool name and text, cut at `cap` characters."""
    role = message.get("role", "")
    label = f"{role} {message['name']}" if role == "tool" and message.get("name") else role
    text = message_text(message)
    if cap is not None and len(text) > cap:
        text = text[:cap] + f" [... {len(text) - cap} characters not shown]"
    return f"<EVENT id={message_id} role={label}>\n{text}\n</EVENT>"


def summary_request(previews: list[str]) -> list[dict[str, Any]]:
    return [{"role": "system", "content": SUMMARY_PROMPT},
            {"role": "user", "content": "Events to summarize:\n" + "\n".join(previews)}]


def fixed_ids(ctx: "RunContext") -> list[int]:
    """The fixed context that no condensation removes: the leading system prompt(s)."""
    fixed = []
    for message_id in ctx.view.ids:
        if ctx.view.messages[message_id].get("role") != "system":
            break
        fixed.append(message_id)
    return fixed


def pending_user_ids(ctx: "RunContext", after_event: int) -> list[int]:
    """Genuine user messages in the view logged after event `after_event` (not yet answered)."""
    return [i for i in ctx.view.ids if i > after_event and ctx.view.origins.get(i) == USER_ORIGIN]


def summarize(ctx: "RunContext", profile: str, ids: list[int], retry: HardResetConfig,
              purpose: str) -> tuple[str, int]:
    """Summarize messages `ids` from their previews with bounded retries; return (summary, attempts).

    As OpenHands' hard_context_reset(): the first attempt sends whole previews; after a failure
    every preview is capped at the longest one's length times the scaling factor, and the cap
    shrinks by that factor again after each further failure. Raises RecoverableRunError when
    the profile is missing or every attempt failed.
    """
    if profile not in ctx.profiles:
        raise RecoverableRunError(f"summary profile {profile!r} is not among the run's profiles "
                                  f"({', '.join(sorted(ctx.profiles))}); history kept")
    texts = {i: message_text(ctx.view.message(i)) for i in ids}
    longest = max((len(t) for t in texts.values()), default=0)
    cap: int | None = None
    errors = []
    for attempt in range(1, retry.hard_context_reset_max_retries + 1):
        if attempt > 1:
            cap = int((cap if cap is not None else longest) * retry.hard_context_reset_context_scaling)
        previews = [preview(i, ctx.view.message(i), cap) for i in ids]
        ctx.log.append("summary_attempt", purpose=purpose, attempt=attempt, preview_cap=cap, events=len(ids))
        try:
            result = ctx.call_llm(profile, summary_request(previews), purpose=purpose)
        except Exception as exc:  # any failure of the side call counts as a failed attempt
            errors.append(f"attempt {attempt}: {type(exc).__name__}: {str(exc)[:200]}")
            continue
        text = (result.message.get("content") or "").strip()
        if text:
            return text, attempt
        errors.append(f"attempt {attempt}: empty summary")
    raise RecoverableRunError(f"all {retry.hard_context_reset_max_retries} summary attempts failed; history kept "
                              f"({'; '.join(errors[-2:])})")
