"""Simulated agent for work_queue: handle the latest visible ticket from what it can see.

The current ticket is the highest-numbered ticket visible (in a user message or its own
notes). Order, customer and price records count as known when a visible line shows them
(a lookup result, its own narration, its notes). A missing record is looked up, paged or
looked up again within the reread budget; past it, the agent records 0 for the ticket (a
wrong answer, as a real model guessing would give) and moves on.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from harness.models.mock.agents.common import TOLD, Fold, Found, Visible, text_reply
from harness.models.mock.agents.memo import LinePattern, Pattern
from harness.models.mock.agents.reading import ReadableFold, obtain

TICKET = Pattern(r"Ticket (\d+) of (\d+): order (ORD-\d+)")
# Record lines, scanned line by line (LinePattern; ours: ~3 us a result as whole-text scans)
ORDER = LinePattern(r"^Order (ORD-\d+) \| customer (CUS-\d+) \| sku (SKU-\w+) \| quantity (\d+)", re.MULTILINE)
CUSTOMER = LinePattern(r"^Customer (CUS-\d+) \| region (\w+)", re.MULTILINE)
PRICE = LinePattern(r"^Price (SKU-\w+) \| region (\w+) \| unit (\d+)", re.MULTILINE)
RECORDED = Pattern(r"Recorded (ORD-\d+)\.|(ORD-\d+) is already recorded")


@dataclass(frozen=True)
class Task:
    number: int
    total: int
    order: str


class Tickets(Fold):
    """The highest-numbered ticket visible (the first seen of equal numbers)."""

    roles = (*TOLD, "tool")

    def __init__(self) -> None:
        super().__init__()
        self.latest: dict[str, Task] = {}

    def effect(self, text: str) -> Any:
        return TICKET.findall(text) or None

    def absorb(self, position: int, text: str, message: dict[str, Any]) -> None:
        for n, t, o in TICKET.findall(text):
            if "task" not in self.latest or int(n) > self.latest["task"].number:
                self.ledger.put(position, self.latest, "task", Task(int(n), int(t), o))


STATEMENT = (TICKET,)  # find_task finds a task only in a message whose content as sent one of these matches


def find_task(visible: Visible) -> Task | None:
    return visible.fold(Tickets).latest.get("task")


def _by_id(match: re.Match[str]) -> str:
    return match.group(1)


def _by_sku_region(match: re.Match[str]) -> str:
    return f"{match.group(1)}@{match.group(2)}"


# Each record line's pattern, and the key of `Known.lines` it is kept under (Records) and looked up by (narration)
LINE_KEYS = ((ORDER, _by_id), (CUSTOMER, _by_id), (PRICE, _by_sku_region))


@dataclass
class Known:
    """What it knows of the records (shared with its memory: read-only)."""

    orders: dict[str, tuple[str, str, int]]
    regions: dict[str, str]
    prices: dict[tuple[str, str], int]
    lines: dict[str, str]  # the record lines themselves, for narration and notes


class Records(ReadableFold):
    """Order, customer and price records readable in its context, the latest line of each winning."""

    roles = (*TOLD, "assistant", "tool")

    writes_blindly = True  # each record line is put as it reads, whatever was known before
    order_free = True  # records are looked up by key, never listed in order

    def __init__(self) -> None:
        super().__init__()
        self.orders: dict[str, tuple[str, str, int]] = {}
        self.regions: dict[str, str] = {}
        self.prices: dict[tuple[str, str], int] = {}
        self.lines: dict[str, str] = {}

    def effect(self, text: str) -> Any:
        lines = tuple(match.group(0) for pattern in (ORDER, CUSTOMER, PRICE) for match in pattern.finditer(text))
        return lines or None

    def absorb(self, position: int, text: str, message: dict[str, Any]) -> None:
        put = self.ledger.put
        for match in ORDER.finditer(text):
            order, customer, sku, quantity = match.groups()
            put(position, self.orders, order, (customer, sku, int(quantity)))
            put(position, self.lines, _by_id(match), match.group(0))
        for match in CUSTOMER.finditer(text):
            put(position, self.regions, match.group(1), match.group(2))
            put(position, self.lines, _by_id(match), match.group(0))
        for match in PRICE.finditer(text):
            put(position, self.prices, (match.group(1), match.group(2)), int(match.group(3)))
            put(position, self.lines, _by_sku_region(match), match.group(0))


def _known(visible: Visible) -> Known:
    records = visible.fold(Records)
    return Known(records.orders, records.regions, records.prices, records.lines)


def _recorded(visible: Visible, order: str) -> bool:
    """Whether it sees `order` recorded: a result saying so, or its own submit_result call not refused
    (visible even when its result was cleared)."""
    found = visible.fold(Found, RECORDED, ("tool",))
    if order in found.derived("orders", lambda _: {a or b for a, b in found.items}):
        return True
    return bool(visible.accepted_calls("submit_result", "order_id", order, "Error: submit_result: no"))


def _needed(task: Task, known: Known) -> tuple[str, dict[str, Any]] | int:
    """The next lookup the ticket needs, or its amount when nothing is missing."""
    if task.order not in known.orders:
        return "get_order", {"order_id": task.order}
    customer, sku, quantity = known.orders[task.order]
    if customer not in known.regions:
        return "get_customer", {"customer_id": customer}
    region = known.regions[customer]
    if (sku, region) not in known.prices:
        return "get_price", {"region": region, "sku": sku}
    return quantity * known.prices[(sku, region)]


def act(visible: Visible, task: Task) -> dict[str, Any]:
    known = _known(visible)
    if _recorded(visible, task.order):
        if task.number >= task.total:
            return visible.call("submit_answer", {"answer": f"All {task.total} tickets recorded."},
                                "Every ticket is recorded.")
        return text_reply(f"Ticket {task.number} is recorded; ready for the next ticket.")
    note = _narration(visible, known)
    need = _needed(task, known)
    if isinstance(need, int):
        return visible.call("submit_result", {"amount": need, "order_id": task.order},
                            note + f"Ticket {task.number}: the amount is {need}.")
    name, args = need
    step = obtain(visible, name, args)
    if step is None:
        return visible.call("submit_result", {"amount": 0, "order_id": task.order},
                            note + f"I could not recover what {name} showed; recording 0 for {task.order}.")
    return visible.call(step["name"], step["args"], note + f"Ticket {task.number}: calling {step['name']}.")


def notes(visible: Visible, task: Task) -> str:
    """The current ticket in its own words, the records found for it, and whether it is recorded (each
    fact kept as its writer draws)."""
    known = _known(visible)
    lines = [f"Ticket {task.number} of {task.total}: order {task.order}. For each ticket: get_order, get_customer "
             "(region), get_price(sku, region); record quantity x unit price with submit_result; after the last "
             "ticket call submit_answer."]
    order = known.orders.get(task.order)
    if order is not None:
        customer, sku, _ = order
        region = known.regions.get(customer)
        keys = [task.order, customer, f"{sku}@{region}"]
        lines.extend(known.lines[k] for k in keys
                     if k in known.lines and visible.keeps(k))
    if _recorded(visible, task.order) and visible.keeps("recorded", task.order):
        lines.append(f"Recorded {task.order}.")
    return "\n".join(lines)


def _is_record_line(line: str, known: Known) -> bool:
    """Whether `line` is one of the record lines it knows (`line in known.lines.values()`, looked up by the key
    the line names instead of compared with every line: a record line is a whole match of its pattern)."""
    for pattern, key in LINE_KEYS:
        match = pattern.regex.match(line)
        if match and match.end() == len(line):
            return known.lines.get(key(match)) == line
    return False


def _narration(visible: Visible, known: Known) -> str:
    """Restate the record just found on a line of its own, as a model thinking aloud might."""
    latest = visible.last_result()
    if latest is None or not latest.result:
        return ""
    head = latest.result.split("\n", 1)[0]
    if _is_record_line(head, known) and visible.chance(visible.knobs.narrate, "narrate", head):
        return head + "\n"
    return ""
