"""Rule-based simulated agents, one module per task family.

Context-faithful by construction: `respond` receives only the request's messages, tool
schemas, the request's seed and the user's knobs. An agent recognizes its task from the
statement visible in its context and acts on what it can see; nothing else reaches it.
These modules must never import `tasks` (a test checks this).
"""
from __future__ import annotations

from typing import Any

from harness.mock.agents import big_output, chained_lookup, plant_early_ask_late, repo_maintenance, work_queue
from harness.mock.agents.common import Knobs, Visible, build_knobs, text_reply
from harness.mock.agents.reset import prepare_reset, read_notes_after_reset

AGENTS = (chained_lookup, work_queue, plant_early_ask_late, big_output, repo_maintenance)


def respond(messages: list[dict[str, Any]], tools: list[dict[str, Any]], *, seed: int,
            knobs: dict[str, Any] | Knobs | None = None) -> dict[str, Any]:
    """The assistant message the simulated agent sends in reply to one request."""
    settings = knobs if isinstance(knobs, Knobs) else build_knobs(knobs)
    visible = Visible(messages, tools, seed=seed, knobs=settings)
    recovery = read_notes_after_reset(visible)
    if recovery is not None:
        return recovery
    for agent in AGENTS:
        task = agent.find_task(visible)
        if task is not None:
            return prepare_reset(visible, agent, task) or agent.act(visible, task)
    return text_reply("I cannot find a task statement in my context, so I cannot continue.")
