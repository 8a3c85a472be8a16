"""Rule-based simulated agents, one module per task family.

Context-faithful by construction: `respond` receives only the request's messages, tool
schemas, the request's seed and the user's knobs. An agent recognizes its task from the
statement visible in its context and acts on what it can see; nothing else reaches it.
The mock provider also passes its session's `Memory`, which only saves re-reading the
messages a request shares with the previous one (see `memory`): replies are the same.
These modules must never import `tasks` (a test checks this).
"""
from __future__ import annotations

from itertools import chain
from types import ModuleType
from typing import Any

from harness.models.mock.agents import big_output, chained_lookup, plant_early_ask_late, repo_maintenance, work_queue
from harness.models.mock.agents.common import Knobs, Visible, _content, build_knobs, text_reply
from harness.models.mock.agents.memory import Family, Memory
from harness.models.mock.agents.reset import prepare_reset, read_notes_after_reset

AGENTS = (chained_lookup, work_queue, plant_early_ask_late, big_output, repo_maintenance)


def _statement_literals(agents: tuple[ModuleType, ...]) -> tuple[str, ...] | None:
    """Literals one of which a message's content holds wherever one of these families finds its task
    statement (each pattern of their `STATEMENT` needs one); None when a pattern needs none known."""
    needs = [pattern.required for agent in agents for pattern in agent.STATEMENT]
    return tuple(dict.fromkeys(literal for group in needs for literal in group)) if all(needs) else None


# For each family, the literals of the families before it in AGENTS, which a family found last request is
# checked against (`_family`).
EARLIER = {agent: _statement_literals(AGENTS[:index]) for index, agent in enumerate(AGENTS)}


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
    found = _family(visible)
    if found is None:
        return text_reply("I cannot find a task statement in my context, so I cannot continue.")
    agent, task = found
    return prepare_reset(visible, agent, task) or agent.act(visible, task)


def _family(visible: Visible) -> tuple[ModuleType, Any] | None:
    """The first family in AGENTS whose task statement is visible, with its task.

    A family found last request is asked first when this request, in a regular context, holds that one's
    messages except for some it drops and some in their place or after them that hold no statement literal
    of a family before it: those families found none in the messages kept, which read as they did (a result
    by its call, which comes before it), and a statement needs one of its literals (ours: the earlier families' folds
    are not read on every request for nothing). Else, or when it finds none now,
    every family in order, as without the memory.
    """
    memory = visible.memory
    known, memory.family = memory.family, None
    if known is not None and visible.regular:
        agent, read = known
        literals = EARLIER[agent]
        if literals is not None and _unstated(visible, read, literals):
            task = agent.find_task(visible)
            if task is not None:
                memory.family = Family(agent, visible.frozen)
                return agent, task
    for agent in AGENTS:
        task = agent.find_task(visible)
        if task is not None:
            memory.family = Family(agent, visible.frozen) if visible.regular else None
            return agent, task
    return None


def _unstated(visible: Visible, read: tuple[dict[str, Any], ...], literals: tuple[str, ...]) -> bool:
    """Whether none of the messages this request holds in place of those of `read`, or after them, holds one of
    `literals` in its content (the messages before are those of `read`, or equal ones)."""
    messages = visible.messages
    for position in chain(visible.replaced(read), range(len(read), len(messages))):
        content = _content(messages[position])
        for literal in literals:
            if literal in content:
                return False
    return True
