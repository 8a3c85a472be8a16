"""Simulated agent for plant_early_ask_late: audit the batch it sees, answer from facts it sees.

Facts count only when the user stated them in a visible message (or its own notes carry
them); memos in log files are not the user's word. Later statements replace earlier ones
in the order they are visible, so a summary or note written before an update stays stale
until the update itself is seen. A fact it cannot see is answered `unknown`, which is right
only for the fact never given.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from harness.models.mock.agents.common import TOLD, Exchange, Fold, Visible, _content, answered, same_shape, text_reply
from harness.models.mock.agents.memo import Pattern, remember
from harness.models.mock.agents.reading import obtain, reading, shows_whole_file

BATCH = Pattern(r"Audit batch (\d+) of (\d+): (.+?)\. For each file")
QUESTIONS = Pattern(r"Final questions\..*?in this order: (.+?)\. Give the current values")
FACT = Pattern(r"^- The (.+?) is (.+?)\.$", re.MULTILINE)
UPDATE = Pattern(r"Update: the (.+?) is now (.+?) \(")
NOTED_FACT = Pattern(r"^Fact: (.+?) = (.+)$", re.MULTILINE)
RECORDED = Pattern(r"Recorded (-?\d+) for (\S+)\.")


@dataclass(frozen=True)
class Task:
    batch: int
    total: int
    files: tuple[str, ...]
    questions: tuple[str, ...] | None


class Statements(Fold):
    """What the user stated, read from user messages and its own notes read back, in order:
    the latest batch (the last of equal numbers), the final questions, the facts (later
    statements replacing earlier ones) and the counts noted as recorded."""

    def __init__(self) -> None:
        super().__init__()
        self.state: dict[str, Any] = {"batch": None, "questions": None}
        self.facts: dict[str, str] = {}
        self.recorded: dict[str, int] = {}

    def text(self, visible: Visible, message: dict[str, Any]) -> tuple[str | None, bool]:
        if message.get("role") in TOLD or (message.get("role") == "tool" and answered(visible, message)
                                             and _is_notes_read(visible.exchange(message.get("tool_call_id")))):
            return _content(message), False
        return None, False

    def alike(self, visible: Visible, position: int, old: dict[str, Any], new: dict[str, Any]) -> bool:
        """In a regular context a result reads as a notes read by its call, which another rendering of it
        keeps (a changed call is a change of shape, read again)."""
        return same_shape(old, new) and self.same_effect(self.text(visible, old)[0], self.text(visible, new)[0])

    def effect(self, text: str) -> Any:
        return _statements(text) if any(_statements(text)) else None

    def absorb(self, position: int, text: str, message: dict[str, Any]) -> None:
        put, state = self.ledger.put, self.state
        batches, questions, facts, recorded = _statements(text)
        for number, total, files in batches:
            if state["batch"] is None or int(number) >= state["batch"].batch:
                put(position, state, "batch", Task(int(number), int(total), tuple(f.strip() for f in files.split(",")),
                                                   None))
        if questions is not None:
            put(position, state, "questions", tuple(name.strip() for name in questions.split(",")))
        for name, value in facts:
            put(position, self.facts, name.strip(), value.strip())
        for n, path in recorded:
            put(position, self.recorded, path, int(n))


def _statements(text: str) -> tuple[tuple[Any, ...], str | None, tuple[tuple[str, str], ...], tuple[Any, ...]]:
    """A text's batches, final questions, facts in the order stated, and counts noted as recorded."""
    def read() -> tuple[tuple[Any, ...], str | None, tuple[tuple[str, str], ...], tuple[Any, ...]]:
        questions = QUESTIONS.search(text)
        found = sorted((m.start(), m.group(1), m.group(2)) for pattern in (FACT, UPDATE, NOTED_FACT)
                       for m in pattern.finditer(text))
        return (BATCH.findall(text), questions.group(1) if questions else None,
                tuple((name, value) for _, name, value in found), RECORDED.findall(text))

    return remember(("statements", text), read)


def _is_notes_read(exchange: Exchange | None) -> bool:
    return (exchange is not None and exchange.name == "read_file"
            and str(exchange.args.get("path", "")).strip().startswith("notes/"))


STATEMENT = (BATCH, QUESTIONS)  # find_task finds a task only in a message whose content as sent one of these matches


def find_task(visible: Visible) -> Task | None:
    state = visible.fold(Statements).state
    batch, questions = state["batch"], state["questions"]
    if questions is not None:
        return Task(batch.batch if batch else 0, batch.total if batch else 0, batch.files if batch else (), questions)
    return batch


def _facts(visible: Visible) -> dict[str, str]:
    return visible.fold(Statements).facts


def _recorded(visible: Visible, path: str) -> int | None:
    """The count it sees recorded for `path`: its latest record_count call not refused, else a statement."""
    accepted = visible.accepted_calls("record_count", "path", path, "Error")
    if accepted:
        return int(accepted[-1].args.get("errors", 0))
    return visible.fold(Statements).recorded.get(path)


def _count(visible: Visible, path: str) -> int | None:
    """ERROR lines of the file, if a whole read of it is visible."""
    for exchange in reversed(visible.calls("read_file")):
        if str(exchange.args.get("path", "")).strip() == path:
            read = reading(visible, exchange)
            if shows_whole_file(read, path):
                return sum("ERROR" in line for line in read.text.splitlines()[1:-1])
    return None


def act(visible: Visible, task: Task) -> dict[str, Any]:
    if task.questions is not None:
        facts = _facts(visible)
        answer = "; ".join(f"{name}={facts.get(name, 'unknown')}" for name in task.questions)
        return visible.call("submit_answer", {"answer": answer}, "Answering from what you told me.")
    for path in task.files:
        if _recorded(visible, path) is not None:
            continue
        errors = _count(visible, path)
        if errors is not None:
            return visible.call("record_count", {"errors": errors, "path": path}, f"{path} has {errors} ERROR lines.")
        step = obtain(visible, "read_file", {"path": path})
        if step is None:
            return visible.call("record_count", {"errors": 0, "path": path}, f"I could not read {path}; guessing 0.")
        return visible.call(step["name"], step["args"], f"Auditing {path}.")
    return text_reply(f"Batch {task.batch} of {task.total} is audited.")


def notes(visible: Visible, task: Task) -> str:
    """The batch in hand in the user's words, the facts it holds (each kept with chance notes_completeness), progress."""
    lines = []
    if task.files:
        lines.append(f"Audit batch {task.batch} of {task.total}: {', '.join(task.files)}. For each file, read it "
                     "with read_file and call record_count(path, errors) with the number of its lines that contain "
                     "the word ERROR.")
    if task.questions is not None:
        lines.append(f"Final questions. Call submit_answer with one line of 'name=value' pairs separated by '; ', "
                     f"in this order: {', '.join(task.questions)}. Give the current values (after my updates). "
                     "If I never told you a value, write unknown for it.")
    lines.extend(f"Fact: {name} = {value}" for name, value in _facts(visible).items()
                 if visible.keeps(name))
    recorded = {path: _recorded(visible, path) for path in task.files}
    lines.extend(f"Recorded {count} for {path}." for path, count in recorded.items()
                 if count is not None and visible.keeps("recorded", path))
    return "\n".join(lines)
