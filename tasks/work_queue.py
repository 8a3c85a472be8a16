"""work_queue: K tickets, each needing several lookups, each result submitted with a tool.

The user hands over one ticket per turn (the next arrives once the current one is
recorded). A ticket's amount is its order's quantity times the unit price of the order's
product in its customer's region: three lookups, all local to the ticket. Old tickets'
results are never needed again, so a strategy that drops them loses nothing (compaction
should shine), while keeping everything overflows the window as K grows. Lookup results
carry filler history and near-miss records of other orders, customers and regions.
Success is every ticket's recorded amount being right; the score is the fraction right.
"""
from __future__ import annotations

import random
from dataclasses import dataclass

from tasks.base import Knobs, Score, ToolCall, ToolResult, ToolSpec, tool_error
from tasks.workspace import WorkspaceEnvironment, object_schema

FAMILY = "work_queue"
REGIONS = ("north", "south", "east", "west", "central", "coastal", "upland", "delta")
_FILLER = ("ledger synced audit closed carrier scanned invoice queued pallet routed depot dispatched "
           "returned restocked batch verified label printed signature bay gate window").split()


@dataclass
class Params(Knobs):
    """Scale knobs. At the bounds: 750,000 filler lines, ~2 s and ~115 MB to generate."""

    BOUNDS = {"items": (1, 500), "filler_lines": (0, 500), "distractors": (0, 50)}

    items: int = 3  # tickets in the queue (the horizon)
    filler_lines: int = 4  # history lines in each lookup result (output size)
    distractors: int = 2  # near-miss records in each lookup result


SYSTEM_PROMPT = (
    "You are an operations agent working through a queue of billing tickets with simulated tools. "
    "Handle one ticket at a time, one tool call at a time. You may keep notes in files under notes/ "
    "with write_file and read them back with read_file."
)

INSTRUCTIONS = (
    "You will get billing tickets one at a time. For each ticket: call get_order with the order id to "
    "learn its customer, product (sku) and quantity; call get_customer to learn the customer's region; "
    "call get_price with the sku and that region to learn the unit price. The amount is quantity x unit "
    "price. Record it with submit_result(order_id, amount). The next ticket arrives after you record the "
    "current one. Ids must match exactly: results also mention other orders, customers and regions. "
    "When the last ticket is recorded, call submit_answer with a one-line summary."
)
TICKET = "Ticket {number} of {total}: order {order}. Look up the order, its customer's region and the unit price, then record quantity x unit price with submit_result."

ORDER_LINE = "Order {order} | customer {customer} | sku {sku} | quantity {quantity}"
CUSTOMER_LINE = "Customer {customer} | region {region}"
PRICE_LINE = "Price {sku} | region {region} | unit {unit}"


@dataclass(frozen=True)
class Ticket:
    order: str
    customer: str
    sku: str
    quantity: int
    region: str
    unit: int

    @property
    def amount(self) -> int:
        return self.quantity * self.unit


class WorkQueue(WorkspaceEnvironment):
    family = FAMILY
    tool_seconds = {name: (0.5, 3.0) for name in ("get_order", "get_customer", "get_price")}  # API lookups (ours)
    user_delay_s = (10.0, 120.0)  # a dispatcher hands over the next ticket: faster than a user typing (ours)
    system_prompt = SYSTEM_PROMPT
    generated = ("params", "tickets", "by_order", "by_customer", "prices", "fillers")

    def __init__(self, params: Params, seed: int):
        super().__init__()
        self.params = params
        rng = random.Random(f"{FAMILY}:{seed}")
        orders = rng.sample(range(10000, 99999), params.items)
        customers = rng.sample(range(1000, 9999), params.items)
        self.tickets = [Ticket(order=f"ORD-{orders[i]}", customer=f"CUS-{customers[i]}",
                               sku=f"SKU-{rng.choice('ABCDEFGHJKLMNPQRSTUVWXYZ')}{rng.randint(100, 999)}",
                               quantity=rng.randint(2, 40), region=rng.choice(REGIONS), unit=rng.randint(3, 250))
                        for i in range(params.items)]
        self.by_order = {t.order: t for t in self.tickets}
        self.by_customer = {t.customer: t for t in self.tickets}
        self.prices = {(t.sku, t.region): t.unit for t in self.tickets}
        # Each lookup's filler is a function of its key alone: made with the instance (and copied with it).
        self.fillers = {key: self._filler(key)
                        for t in self.tickets for key in (t.order, t.customer, f"{t.sku}:{t.region}")}
        self.recorded: dict[str, int] = {}
        self.delivered = 1  # the first ticket is in the opening message

    def initial_user_messages(self) -> list[str]:
        return [INSTRUCTIONS + "\n\n" + self._ticket_text(0)]

    def _ticket_text(self, index: int) -> str:
        return TICKET.format(number=index + 1, total=len(self.tickets), order=self.tickets[index].order)

    def _ready(self) -> bool:
        return self.delivered < len(self.tickets) and self.tickets[self.delivered - 1].order in self.recorded

    def user_messages_due(self, requests_done: int) -> list[str]:
        if not self._ready():
            return []
        self.delivered += 1
        return [self._ticket_text(self.delivered - 1)]

    def has_pending_user_messages(self) -> bool:
        return self._ready()

    def extra_specs(self) -> list[ToolSpec]:
        return [
            ToolSpec("get_order", "Look up an order: its customer, product sku and quantity.",
                     object_schema({"order_id": {"type": "string", "description": "e.g. ORD-12345"}}, ["order_id"])),
            ToolSpec("get_customer", "Look up a customer: its region.",
                     object_schema({"customer_id": {"type": "string", "description": "e.g. CUS-1234"}},
                                   ["customer_id"])),
            ToolSpec("get_price", "Look up the unit price of a product sku in a region.",
                     object_schema({"sku": {"type": "string"}, "region": {"type": "string"}}, ["sku", "region"])),
            ToolSpec("submit_result", "Record the amount (quantity x unit price) of a ticket's order. Once per order.",
                     object_schema({"order_id": {"type": "string"}, "amount": {"type": "integer"}},
                                   ["order_id", "amount"]), changes_state=True),
        ]

    def _filler(self, key: str) -> tuple[str, ...]:
        rng = random.Random(f"{FAMILY}:filler:{key}")
        return tuple("history: " + " ".join(rng.choice(_FILLER) for _ in range(rng.randint(9, 14)))
                     for _ in range(self.params.filler_lines))

    def _near(self, prefix: str, number: str, key: str) -> list[str]:
        """Ids one digit swap away from `number`: records a sloppy reader would confuse."""
        rng = random.Random(f"{FAMILY}:near:{key}")
        out = []
        for _ in range(self.params.distractors):
            digits = list(number)
            i, j = rng.sample(range(len(digits)), 2)
            digits[i], digits[j] = digits[j], digits[i]
            candidate = "".join(digits)
            out.append(f"{prefix}-{candidate if candidate != number else str(rng.randint(10 ** (len(number) - 1), 10 ** len(number) - 1))}")
        return out

    def _lookup(self, head: str, extra: list[str], key: str) -> ToolResult:
        lines = [head, *self.fillers[key]]
        lines[1:1] = [f"related: {line}" for line in extra]
        return ToolResult("\n".join(lines))

    def run_extra(self, call: ToolCall) -> ToolResult:
        args = call.args or {}
        rng = random.Random(f"{FAMILY}:{call.name}:{sorted(args.items())}")
        if call.name == "get_order":
            ticket = self.by_order.get(args["order_id"].strip())
            if ticket is None:
                return tool_error(f"get_order: no order {args['order_id']!r}")
            near = [ORDER_LINE.format(order=o, customer=f"CUS-{rng.randint(1000, 9999)}", sku=ticket.sku,
                                      quantity=rng.randint(2, 40)) for o in self._near("ORD", ticket.order[4:], ticket.order)]
            return self._lookup(ORDER_LINE.format(order=ticket.order, customer=ticket.customer, sku=ticket.sku,
                                                  quantity=ticket.quantity), near, ticket.order)
        if call.name == "get_customer":
            ticket = self.by_customer.get(args["customer_id"].strip())
            if ticket is None:
                return tool_error(f"get_customer: no customer {args['customer_id']!r}")
            near = [CUSTOMER_LINE.format(customer=c, region=rng.choice(REGIONS))
                    for c in self._near("CUS", ticket.customer[4:], ticket.customer)]
            return self._lookup(CUSTOMER_LINE.format(customer=ticket.customer, region=ticket.region), near,
                                ticket.customer)
        if call.name == "get_price":
            sku, region = args["sku"].strip(), args["region"].strip()
            unit = self.prices.get((sku, region))
            if unit is None:
                return tool_error(f"get_price: no price for {sku!r} in region {region!r}")
            others = [r for r in REGIONS if r != region][: self.params.distractors]
            near = [PRICE_LINE.format(sku=sku, region=r, unit=rng.randint(3, 250)) for r in others]
            return self._lookup(PRICE_LINE.format(sku=sku, region=region, unit=unit), near, f"{sku}:{region}")
        if call.name == "submit_result":
            order = args["order_id"].strip()
            if order not in self.by_order:
                return tool_error(f"submit_result: no order {order!r}")
            if order in self.recorded:
                return tool_error(f"submit_result: {order} is already recorded")
            self.recorded[order] = args["amount"]
            if len(self.recorded) == len(self.tickets):
                return ToolResult(f"Recorded {order}. All {len(self.tickets)} tickets are recorded; "
                                  "call submit_answer with a one-line summary to finish.")
            return ToolResult(f"Recorded {order}. The next ticket follows.")
        return tool_error(f"unknown tool {call.name!r}")

    def progress(self) -> int:
        """Items submitted, then the final answer."""
        return len(self.recorded) + int(self.submitted)

    def score(self) -> Score:
        right = sum(self.recorded.get(t.order) == t.amount for t in self.tickets)
        return Score(success=right == len(self.tickets), score=right / len(self.tickets),
                     detail={"right": right, "items": len(self.tickets), "recorded": len(self.recorded)})


def build(params: Params, seed: int) -> WorkQueue:
    return WorkQueue(params, seed)
