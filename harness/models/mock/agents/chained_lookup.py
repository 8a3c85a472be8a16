"""Simulated agent for chained_lookup: walk the chain using only records it can see.

Records count as known when a visible tool result, a visible note it wrote in its own
replies, or a visible notes file shows them. For a missing record it searches the code,
reads the files the search named, pages through a file shown truncated with
`read_tool_result`, and, when what it read has been cleared, masked or clamped, reads
again (within its reread budget). When it cannot recover a record it submits the sum of
what it has, which is wrong, as a real model would.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from harness.models.mock.agents.common import TOLD, Exchange, Visible
from harness.models.mock.agents.memo import Pattern, Readings
from harness.models.mock.agents.reading import (PAGER, ReadableFold, is_clamped, page_call, page_calls, reading,
                                        shows_whole_file)

TASK = Pattern(r"Start at record ([A-Z]{2}-\d{4}) and follow the successor chain through (\d+) records")
RECORD = Pattern(r"record ([A-Z]{2}-\d{4}) \| weight (\d+) \| successor ([A-Z]{2}-\d{4})")
SEARCH_HIT = Pattern(r"^(\S+):(\d+)$", re.MULTILINE)


@dataclass(frozen=True)
class Task:
    start: str
    hops: int


STATEMENT = (TASK,)  # find_task finds a task only in a message whose content as sent one of these matches


def find_task(visible: Visible) -> Task | None:
    match = visible.first(TASK)
    return Task(match.group(1), int(match.group(2))) if match else None


class Records(ReadableFold):
    """Every record line readable in its context: code -> (weight, successor), the latest line winning."""

    roles = ("assistant", "tool", *TOLD)

    writes_blindly = True  # each record line is put as it reads, whatever was known before
    order_free = True  # records are looked up by key, never listed in order

    def __init__(self) -> None:
        super().__init__()
        self.known: dict[str, tuple[int, str]] = {}

    def effect(self, text: str) -> Any:
        return RECORD.findall(text) or None

    def absorb(self, position: int, text: str, message: dict[str, Any]) -> None:
        for code, weight, successor in RECORD.findall(text):
            self.ledger.put(position, self.known, code, (int(weight), successor))


def _records(visible: Visible) -> dict[str, tuple[int, str]]:
    return visible.fold(Records).known


def _complete_read(visible: Visible, exchange: Exchange) -> bool:
    """A read result it can rely on: present, whole (pages joined, none missing), not an error, placeholder or
    clamped copy."""
    read = reading(visible, exchange)
    return shows_whole_file(read, str(exchange.args.get("path", "")).strip()) and not is_clamped(read.text)


# The distinct paths a search result names, in order, by its text (ours: the latest search is
# read on every request until the record is found; its hits are a function of its text alone).
_hit_paths = Readings(lambda result: tuple(dict.fromkeys(path for path, _ in SEARCH_HIT.findall(result))))


def _search_paths(visible: Visible, code: str) -> tuple[str, ...] | None:
    """Paths of the latest readable search for `code`, or None if there is none."""
    for exchange in reversed(visible.calls_with("search", "text", code)):
        result = exchange.result or ""
        if result.startswith("No matches"):
            return ()
        if "match(es) for" in result:
            return _hit_paths[result]
    return None


def _reads(visible: Visible, paths: tuple[str, ...]) -> list[Exchange]:
    """Its read_file calls of these paths (grouped by path)."""
    return [e for path in dict.fromkeys(paths) for e in visible.calls_with("read_file", "path", path)]


def _refetches(visible: Visible, code: str, reads: list[Exchange]) -> int:
    """Fetches for this record it has already made again (a search, a read or a page repeated because
    what it got the first time was lost, cut or unusable) among its search calls and `reads`, its reads
    of the files the search named: what its reread budget limits."""
    cut = {(read.contract, read.result_id): read for e in reads if (read := reading(visible, e)).contract}
    pages = [e for read in cut.values() for e in page_calls(visible, read)]
    repeats = 0
    for calls in (visible.calls_with("search", "text", code), reads, pages):
        seen: set[str] = set()
        for exchange in calls:
            key = exchange.args_text
            repeats += key in seen
            seen.add(key)
    return repeats


@dataclass(frozen=True)
class Walk:
    """The chain of known records from the start, as far as it goes."""

    codes: tuple[str, ...]  # the records walked, in order
    values: tuple[tuple[int, str], ...]  # the (weight, successor) read for each
    stop: str  # the code after the last record walked (the one it still needs while short of the hops)
    total: int  # the weights' sum


def _walk(known: dict[str, tuple[int, str]], task: Task, previous: Walk | None) -> Walk:
    """The walk from `task.start`; it goes on from `previous` when every record that walked still reads the same."""
    if previous is not None and tuple(map(known.get, previous.codes)) == previous.values:
        codes, values, code, total = list(previous.codes), list(previous.values), previous.stop, previous.total
    else:
        codes, values, code, total = [], [], task.start, 0
    while len(codes) < task.hops and code in known:
        value = known[code]
        codes.append(code)
        values.append(value)
        total += value[0]
        code = value[1]
    return Walk(tuple(codes), tuple(values), code, total)


def act(visible: Visible, task: Task) -> dict[str, Any]:
    records = visible.fold(Records)
    walk = records.derived(("walk", task), lambda previous: _walk(records.known, task, previous))
    code, total = walk.stop, walk.total
    if len(walk.codes) == task.hops:
        return visible.call("submit_answer", {"answer": str(total)},
                            f"I have all {task.hops} records; their weights sum to {total}.")
    note = _narration(visible, frozenset(walk.codes))
    paths = _search_paths(visible, code)
    reads = _reads(visible, paths or ())
    if _refetches(visible, code, reads) > visible.knobs.reread_budget:
        return visible.call("submit_answer", {"answer": str(total)},
                            note + f"I could not recover record {code}; submitting what I have.")
    if paths is None:
        return visible.call("search", {"text": code}, note + f"Looking for record {code}.")
    if not paths:
        return visible.call("submit_answer", {"answer": str(total)}, note + f"Record {code} does not exist.")
    readable = {e.args.get("path") for e in reads if _complete_read(visible, e)}
    for path in paths:
        if path in readable:
            continue
        page = next(filter(None, (page_call(visible, reading(visible, e))
                                  for e in reversed(visible.calls_with("read_file", "path", path)))), None)
        if page is not None:
            return visible.call(PAGER, page, note + f"Paging through {path} for record {code}.")
        return visible.call("read_file", {"path": path}, note + f"Reading {path} for record {code}.")
    # Every named file is visible yet none shows the record: the search result is stale.
    return visible.call("search", {"text": code}, note + f"Searching again for record {code}.")


def notes(visible: Visible, task: Task) -> str:
    """What it writes to its notes before a reset: the task itself and the records it has walked
    (each kept with chance notes_completeness)."""
    known = _records(visible)
    lines = [f"Task: Start at record {task.start} and follow the successor chain through {task.hops} records; "
             "submit the sum of their weights with submit_answer."]
    code = task.start
    walked = 0
    while walked < task.hops and code in known:
        weight, successor = known[code]
        if visible.keeps(code):
            lines.append(f"Noted record {code} | weight {weight} | successor {successor}.")
        code, walked = successor, walked + 1
    lines.append(f"Next: find record {code}." if walked < task.hops else "Next: submit the sum.")
    return "\n".join(lines)


def _narration(visible: Visible, chain_codes: frozenset[str]) -> str:
    """Restate chain records just found in the latest result, as a model thinking aloud might."""
    latest = visible.last_result()
    if latest is None or not latest.result:
        return ""
    noted = []
    for code, weight, successor in RECORD.findall(latest.result):
        if code in chain_codes and visible.chance(visible.knobs.narrate, "narrate", code):
            noted.append(f"Noted record {code} | weight {weight} | successor {successor}.")
    return " ".join(noted) + (" " if noted else "")

