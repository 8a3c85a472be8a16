"""Rule-based simulated agents, one module per task family.

Context-faithful by construction: `respond` receives only the request's messages, tool
schemas, the request's seed and the user's knobs. An agent recognizes its task from the
statement visible in its context and acts on what it can see; nothing else reaches it.
The mock provider also passes its session's `Memory`, which only saves re-reading the
messages a request shares with the previous one (see `memory`): replies are the same.
These modules must never import `tasks` (a test checks this).
"""
from __future__ import annotations

from typing import Any

from harness.mock.agents import big_output, chained_lookup, plant_early_ask_late, repo_maintenance, work_queue
from harness.mock.agents.common import Knobs, Visible, build_knobs, text_reply
from harness.mock.agents.memory import Memory
from harness.mock.agents.reset import prepare_reset, read_notes_after_reset

AGENTS = (chained_lookup, work_queue, plant_early_ask_late, big_output, repo_maintenance)


def respond(messages: list[dict[str, Any]], tools: list[dict[str, Any]], *, seed: int,
            knobs: dict[str, Any] | Knobs | None = None, memory: Memory | None = None) -> dict[str, Any]:
    """The assistant message the simulated agent sends in reply to one request.

    `memory` (one per mock session) lets it reuse its reading of the messages this request
    shares with the previous one; the reply is the same as without it.
    """
    settings = knobs if isinstance(knobs, Knobs) else build_knobs(knobs)
    if memory is None:
        return _respond(Visible(messages, tools, seed=seed, knobs=settings))
    with memory.lock:
        return _respond(Visible(messages, tools, seed=seed, knobs=settings, memory=memory))


def _respond(visible: Visible) -> dict[str, Any]:
    recovery = read_notes_after_reset(visible)
    if recovery is not None:
        return recovery
    for agent in AGENTS:
        task = agent.find_task(visible)
        if task is not None:
            return prepare_reset(visible, agent, task) or agent.act(visible, task)
    return text_reply("I cannot find a task statement in my context, so I cannot continue.")
