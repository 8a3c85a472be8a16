"""The simulated agent's generic agent-reset behaviour, shared by every task family.

It decides from the warnings it is shown (seed 000: the warnings are advisory
and the agent decides). A reset cycle starts at the latest visible reset notice (or the start);
at the `reset_at_warning`-th context warning visible in it (knob, default the first) it writes
notes (the family agent's `notes()`, where each fact survives with chance `notes_completeness`)
with the task's own write_file tool, waits for the write to succeed, then calls `condense`
alone with a message naming the notes file. So the strategy's warning_thresholds decide when
it condenses. After a reset it reads that file again with read_file. Everything it acts on is
in the request: the warning texts, the write's result, the reset notice and the condense result.
"""
from __future__ import annotations

from types import ModuleType
from typing import Any

from harness.models.mock.agents.common import Fold, Visible
from harness.models.mock.agents.memo import Pattern

WARNING = Pattern(r"Context usage warning \(\d+% stage\)")
RESET_NOTICE = "The agent triggered context condensation."
NOTES_PATH = "notes/context-reset.md"
NOTES_NAMED = Pattern(r"\b(notes/[\w.\-/]*\w)")


class Warnings(Fold):
    """How many visible user messages warn of the context since the latest visible reset notice (the
    current reset cycle), and whether a reset notice is visible."""

    roles = ("user",)
    needs_regular = False

    def __init__(self) -> None:
        super().__init__()
        self.state: dict[str, Any] = {"warnings": 0, "reset": False}

    def effect(self, text: str) -> Any:
        if text == RESET_NOTICE:
            return "reset"
        return "warning" if WARNING.search(text) else None

    def absorb(self, position: int, text: str, message: dict[str, Any]) -> None:
        effect = self.effect(text)
        if effect == "reset":  # a new cycle: the warnings before it were of the context it left
            self.ledger.put(position, self.state, "reset", True)
            self.ledger.put(position, self.state, "warnings", 0)
        elif effect == "warning":
            self.ledger.put(position, self.state, "warnings", self.state["warnings"] + 1)


def read_notes_after_reset(visible: Visible) -> dict[str, Any] | None:
    """After a visible reset, read the notes file its condense result names (once)."""
    if not visible.fold(Warnings).state["reset"]:
        return None
    condense = next((e for e in visible.calls("condense") if e.result), None)
    named = NOTES_NAMED.search(condense.result) if condense else None
    if named is None:
        return None
    path = named.group(1)
    if any(str(e.args.get("path", "")).strip() == path for e in visible.calls("read_file")):
        return None
    return visible.call("read_file", {"path": path}, f"My context was reset; reading my notes in {path}.")


def prepare_reset(visible: Visible, agent: ModuleType, task: Any) -> dict[str, Any] | None:
    """Write notes, then condense, from the knob's warning of the cycle on; None lets the family act."""
    k = visible.knobs.reset_at_warning
    if k is None or visible.fold(Warnings).state["warnings"] < k or "condense" not in visible.tool_names:
        return None
    writes = [e for e in visible.calls("write_file") if e.args.get("path") == NOTES_PATH]
    if any(e.result is None or e.result.startswith("Error") for e in writes):
        return None  # the notes could not be saved: keep working without a reset
    if visible.exchanges and visible.exchanges[-1] in writes:
        return visible.call("condense", {"message_to_future_self": f"Read {NOTES_PATH}: it holds the task and my "
                                                                   "progress so far."},
                            "My notes are saved; condensing my context.")
    reply = agent.act(visible, task)
    if any(c["function"]["name"].startswith("submit") for c in reply.get("tool_calls") or ()):
        return reply  # about to finish: a reset would only cost requests
    return visible.call("write_file", {"path": NOTES_PATH, "content": agent.notes(visible, task)},
                        "My context is filling up; saving my notes before condensing.")
