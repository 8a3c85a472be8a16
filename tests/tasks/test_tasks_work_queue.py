"""work_queue: tickets one per turn, local lookups, results submitted with a tool."""
import json

from tasks.base import ToolCall
from tasks.work_queue import Params, build


def call(env, name, **args):
    return env.execute(ToolCall.from_message({"id": "c", "function": {"name": name, "arguments": json.dumps(args)}}))


def write_tasks(tmp_path, rows):
    path = tmp_path / "tasks.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def test_next_ticket_arrives_only_after_the_current_one_is_recorded():
    env = build(Params(items=3), seed=1)
    assert "Ticket 1 of 3" in env.initial_user_messages()[0]
    assert env.user_messages_due(5) == [] and not env.has_pending_user_messages()
    first = env.tickets[0]
    call(env, "submit_result", order_id=first.order, amount=first.amount)
    assert env.has_pending_user_messages()
    assert env.user_messages_due(6)[0].startswith(f"Ticket 2 of 3: order {env.tickets[1].order}")
    assert env.user_messages_due(7) == []


def test_score_is_the_fraction_of_tickets_recorded_right():
    env = build(Params(items=4), seed=2)
    for i, ticket in enumerate(env.tickets):
        call(env, "submit_result", order_id=ticket.order, amount=ticket.amount + (i == 0))
    score = env.score()
    assert not score.success and score.score == 0.75
    again = call(env, "submit_result", order_id=env.tickets[1].order, amount=1)
    assert again.is_error and "already recorded" in again.content


def test_lookups_carry_near_miss_records_and_filler():
    env = build(Params(items=1, filler_lines=7, distractors=3), seed=3)
    ticket = env.tickets[0]
    result = call(env, "get_order", order_id=ticket.order).content
    assert result.splitlines()[0].startswith(f"Order {ticket.order} | customer {ticket.customer}")
    assert result.count("related: Order ORD-") == 3 and result.count("history:") == 7
    assert call(env, "get_price", sku=ticket.sku, region="nowhere").is_error


def test_clearing_earlier_turns_solves_what_keeping_everything_cannot(run_suite, tmp_path):
    """Each ticket needs only its own lookups: clearing old turns fits where full history overflows."""
    tasks = write_tasks(tmp_path, [{"task_id": "wq", "family": "work_queue", "seed": 7,
                                    "params": {"items": 10, "filler_lines": 60, "distractors": 3}}])
    runs = run_suite(tasks, strategies="none,stand_ins:ClearOlderTurns", window=12_000)
    by = runs.set_index("strategy")
    assert by.loc["none", "termination"] == "context_overflow"
    assert by.loc["stand_ins:ClearOlderTurns", "success"]
