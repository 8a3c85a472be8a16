"""Simulated agent for big_output: fetch every dump, then answer each question from what it sees.

An answer counts as found only when the exact request line is visible: in a dump result,
in pages of it read back with read_tool_result, or in its own notes. When the asked dump
was cut (a truncation line naming a saved result) and paging is offered, it pages on from
the first unseen character; when the dump was clamped or cleared it cannot fetch it again
(the queue is drained), so it answers `unknown`, which is wrong.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from harness.models.mock.agents.common import TOLD, Fold, Found, Visible, text_reply
from harness.models.mock.agents.memo import Pattern, remember
from harness.models.mock.agents.reading import ReadableFold, failed_pages, page_call, reading

OPENING = Pattern(r"call fetch_dump\(dump\) for each of the (\d+) dumps D1 to D\d+, in order")
QUESTION = Pattern(r"Question (\d+) of (\d+): in dump (D\d+), what is the status of request (req-[0-9a-f]{8})\?")
ANSWERED = Pattern(r"Answer (\d+) recorded\.|question (\d+) is already answered")
GONE = Pattern(r"dump (D\d+) was already fetched")
STATUS = re.compile(r"^(req-[0-9a-f]{8}) host=\S+ status=(\d+)", re.MULTILINE)  # read once per text (Statuses)
# STATUS after the first line: a line break opens it, a literal the regular expression's scan skips to (ours,
# ~30% less than trying `^` at every position of a dump).
LATER_STATUS = re.compile(r"\n(req-[0-9a-f]{8}) host=\S+ status=(\d+)")


@dataclass(frozen=True)
class Task:
    dumps: int
    number: int = 0  # the latest question (0: none yet)
    total: int = 0
    dump: str = ""
    request: str = ""


class Assignment(Fold):
    """The latest opening (how many dumps) and the highest-numbered question (the latest of equal numbers)."""

    roles = (*TOLD, "tool")

    def __init__(self) -> None:
        super().__init__()
        self.state: dict[str, Any] = {"dumps": None, "latest": None}

    def effect(self, text: str) -> Any:
        opening, questions = OPENING.search(text), QUESTION.findall(text)
        return (opening.group(1) if opening else None, questions) if opening or questions else None

    def absorb(self, position: int, text: str, message: dict[str, Any]) -> None:
        match = OPENING.search(text)
        if match:
            self.ledger.put(position, self.state, "dumps", int(match.group(1)))
        for found in QUESTION.findall(text):
            latest = self.state["latest"]
            if latest is None or int(found[0]) >= int(latest[0]):
                self.ledger.put(position, self.state, "latest", found)


STATEMENT = (OPENING,)  # find_task finds a task only in a message whose content as sent one of these matches


def find_task(visible: Visible) -> Task | None:
    state = visible.fold(Assignment).state
    dumps, latest = state["dumps"], state["latest"]
    if dumps is None:
        return None
    if latest is None:
        return Task(dumps)
    return Task(dumps, int(latest[0]), int(latest[1]), latest[2], latest[3])


def _fetched(visible: Visible) -> set[str]:
    """Dumps it fetched (its own calls are visible) or was told are gone from the queue."""
    done = {str(e.args.get("dump")) for e in visible.calls("fetch_dump")
            if not (e.result or "").startswith("Error: fetch_dump: no") and "is not next" not in (e.result or "")}
    done.update(visible.found(GONE, ("tool",)))
    return done


ANSWER_REFUSED = "Error: answer_question: no"


def _numbers_answered_in_results(visible: Visible) -> set[int]:
    """The question numbers that visible results say are recorded (kept until that reading changes)."""
    found = visible.fold(Found, ANSWERED, ("tool",))
    return found.derived("numbers", lambda _: {int(a or b) for a, b in found.items})


def _answered(visible: Visible, number: int) -> bool:
    """Whether it sees question `number` answered: a result saying so, or its own call not refused."""
    if number in _numbers_answered_in_results(visible):
        return True
    return bool(visible.accepted_calls("answer_question", "number", number, ANSWER_REFUSED))


def _answered_numbers(visible: Visible) -> set[int]:
    """Every question it sees answered, as `_answered` reads each (for its notes)."""
    done = set(_numbers_answered_in_results(visible))
    done.update(int(e.args.get("number", 0)) for e in visible.calls("answer_question")
                if not (e.result or "").startswith(ANSWER_REFUSED))
    return done


class Statuses(ReadableFold):
    """The status of each request as first readable in its replies and results.

    One map per text read (worked out once per text), not one write per request line: a
    dump holds thousands of lines and is asked about a few.
    """

    roles = ("assistant", "tool")

    def __init__(self) -> None:
        super().__init__()
        self.maps: list[dict[str, str]] = []  # each text's first status per request, in reading order

    def effect(self, text: str) -> Any:
        return remember(("statuses", text), lambda: _first_statuses(text)) or None

    def absorb(self, position: int, text: str, message: dict[str, Any]) -> None:
        statuses = self.effect(text)
        if statuses:
            self.ledger.append(position, self.maps, statuses)


def _first_statuses(text: str) -> dict[str, str]:
    """Each request's first status in the text (STATUS.findall's items; a match never holds a line break, so
    those after the first line are LATER_STATUS's). Built backwards, so an earlier line wins: only lookups
    read the map, never its order."""
    items = LATER_STATUS.findall(text)
    first = STATUS.match(text)
    if first:
        items.insert(0, first.groups())
    return dict(reversed(items))


def _status(visible: Visible, request: str) -> str | None:
    for statuses in visible.fold(Statuses).maps:
        if request in statuses:
            return statuses[request]
    return None


def act(visible: Visible, task: Task) -> dict[str, Any]:
    if task.number == 0:
        fetched = _fetched(visible)
        for number in range(1, task.dumps + 1):
            if f"D{number}" not in fetched:
                return visible.call("fetch_dump", {"dump": f"D{number}"}, f"Fetching dump D{number} of {task.dumps}.")
        return text_reply(f"All {task.dumps} dumps are fetched; ready for your questions.")
    if _answered(visible, task.number):
        if task.number >= task.total:
            return visible.call("submit_answer", {"answer": "All questions answered."}, "Done.")
        return text_reply(f"Question {task.number} is answered; ready for the next one.")
    status = _status(visible, task.request)
    if status is not None:
        return visible.call("answer_question", {"number": task.number, "value": status},
                            f"{task.request} in dump {task.dump} has status {status}.")
    header = f"== dump {task.dump} ("
    for exchange in visible.calls("fetch_dump"):
        read = reading(visible, exchange)
        if read.text.startswith(header):
            page = page_call(visible, read)
            if page is not None and failed_pages(visible, page) <= visible.knobs.reread_budget:
                return visible.call("read_tool_result", page, f"Paging through dump {task.dump}.")
    return visible.call("answer_question", {"number": task.number, "value": "unknown"},
                        f"I can no longer see request {task.request} in dump {task.dump}.")


def notes(visible: Visible, task: Task) -> str:
    """The assignment and the question in hand in the user's words, the located status of its request,
    the dumps fetched and the questions answered (each fact kept as its writer draws)."""
    fetched = sorted(_fetched(visible), key=lambda name: int(name[1:]))
    lines = [f"Collect the overnight request dumps: call fetch_dump(dump) for each of the {task.dumps} dumps D1 to "
             f"D{task.dumps}, in order."]
    lines.extend(f"Noted: dump {name} was already fetched." for name in fetched if visible.keeps("fetched", name))
    if task.number:
        lines.append(f"Question {task.number} of {task.total}: in dump {task.dump}, what is the status of request "
                     f"{task.request}? Answer with answer_question(number={task.number}, value=<the status code>).")
        status = _status(visible, task.request)
        if status is not None and visible.keeps(task.request):
            lines.append(f"{task.request} host=noted status={status}")
        lines.extend(f"Answer {n} recorded." for n in sorted(_answered_numbers(visible)) if visible.keeps("answered", n))
    return "\n".join(lines)
