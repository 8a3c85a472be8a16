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

from harness.mock.agents.common import Visible, text_reply
from harness.mock.agents.memo import Pattern
from harness.mock.agents.reading import obtain, reading

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


def _statement_texts(visible: Visible) -> list[str]:
    """User messages and its own notes read back, in order: where the task and facts can come from."""
    notes_reads = {e.call_id for e in visible.exchanges
                   if e.name == "read_file" and str(e.args.get("path", "")).strip().startswith("notes/")}
    return [m.get("content") or "" for m in visible.messages
            if m.get("role") == "user" or (m.get("role") == "tool" and m.get("tool_call_id") in notes_reads)]


def find_task(visible: Visible) -> Task | None:
    batch: Task | None = None
    questions = None
    for text in _statement_texts(visible):
        for number, total, files in BATCH.findall(text):
            if batch is None or int(number) >= batch.batch:
                batch = Task(int(number), int(total), tuple(f.strip() for f in files.split(",")), None)
        match = QUESTIONS.search(text)
        if match:
            questions = tuple(name.strip() for name in match.group(1).split(","))
    if questions is not None:
        return Task(batch.batch if batch else 0, batch.total if batch else 0, batch.files if batch else (), questions)
    return batch


def _facts(visible: Visible) -> dict[str, str]:
    facts: dict[str, str] = {}
    for text in _statement_texts(visible):
        found = [(m.start(), m.group(1), m.group(2)) for pattern in (FACT, UPDATE, NOTED_FACT)
                 for m in pattern.finditer(text)]
        for _, name, value in sorted(found):
            facts[name.strip()] = value.strip()
    return facts


def _recorded(visible: Visible) -> dict[str, int]:
    done = {path: int(n) for text in _statement_texts(visible) for n, path in RECORDED.findall(text)}
    for exchange in visible.exchanges:
        if exchange.name == "record_count" and not (exchange.result or "").startswith("Error"):
            done[str(exchange.args.get("path"))] = int(exchange.args.get("errors", 0))
    return done


def _count(visible: Visible, path: str) -> int | None:
    """ERROR lines of the file, if a whole read of it is visible."""
    for exchange in reversed(visible.exchanges):
        if exchange.name == "read_file" and str(exchange.args.get("path", "")).strip() == path:
            text = reading(visible, exchange).text
            if text.startswith(f"== {path} (") and text.rstrip().endswith(f"== end of {path} =="):
                return sum("ERROR" in line for line in text.splitlines()[1:-1])
    return None


def act(visible: Visible, task: Task) -> dict[str, Any]:
    if task.questions is not None:
        facts = _facts(visible)
        answer = "; ".join(f"{name}={facts.get(name, 'unknown')}" for name in task.questions)
        return visible.call("submit_answer", {"answer": answer}, "Answering from what you told me.")
    recorded = _recorded(visible)
    for path in task.files:
        if path in recorded:
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
                 if visible.chance(visible.knobs.notes_completeness, "notes", name))
    recorded = _recorded(visible)
    lines.extend(f"Recorded {recorded[path]} for {path}." for path in task.files if path in recorded)
    return "\n".join(lines)
