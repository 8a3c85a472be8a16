"""What the simulated agent saves per request (issue 24 item 1) never changes what it knows or answers.

Each saving is checked against a fresh reading of the same messages, and with a view in which the
saving would be wrong if it trusted what it kept.
"""
from __future__ import annotations

from typing import Any

import pytest

import harness.mock.agents as agents
from harness.mock.agents import AGENTS, chained_lookup, respond
from harness.mock.agents.common import Knobs, Visible, _content
from tests.test_mock_memory import FAMILIES, _drive


def _statement_of(family: str) -> str:
    """The user message stating a smoke task of `family`."""
    messages, _, _ = _drive(family, 0)
    return next(m["content"] for m in messages if m["role"] == "user")


def _literals(agent: Any) -> tuple[str, ...]:
    return tuple(literal for pattern in agent.STATEMENT for literal in pattern.required)


@pytest.mark.parametrize("family", FAMILIES)
def test_a_family_finds_no_task_once_no_message_holds_a_literal_of_its_statement(family):
    """Ours (issue 24 item 1): each family's `STATEMENT` patterns are where find_task finds its task, so a
    family found last request is checked only against the earlier families' literals in new messages.
    With every message holding one of its literals left out, the family finds no task."""
    agent = AGENTS[FAMILIES.index(family)]
    messages, tools, _ = _drive(family, 12)
    literals = _literals(agent)
    assert literals, f"{family}'s statement patterns need no literal: the memo could never skip it"
    assert agent.find_task(Visible(messages, tools, seed=0, knobs=Knobs())) is not None
    without = [m for m in messages if not any(literal in _content(m) for literal in literals)]
    assert len(without) < len(messages)
    assert agent.find_task(Visible(without, tools, seed=0, knobs=Knobs())) is None


def test_a_family_found_last_request_yields_to_an_earlier_familys_statement_in_a_new_message():
    """Ours (issue 24 item 1): the family found last request is kept only while no new message states an
    earlier family's task; a user message stating a chained_lookup task makes the agent act on it at once,
    as a fresh agent given the same messages does (a memo trusting the family would stay on the old task)."""
    messages, tools, memory = _drive("repo_maintenance", 6)
    respond(messages, tools, seed=0, memory=memory)
    assert memory.family is not None and memory.family.agent is AGENTS[-1]
    messages = [*messages, {"role": "user", "content": _statement_of("chained_lookup")}]
    reply = respond(messages, tools, seed=0, memory=memory)
    assert reply == respond(messages, tools, seed=0)
    assert memory.family.agent is chained_lookup


def test_a_family_found_last_request_is_asked_first_when_new_messages_state_no_earlier_task(monkeypatch):
    """Ours (issue 24 item 1): the families before the one found last request are not asked again while the
    messages only grow by messages holding none of their statement literals; after a view change they are."""
    messages, tools, memory = _drive("repo_maintenance", 6)
    respond(messages, tools, seed=0, memory=memory)
    asked: list[str] = []
    for agent in AGENTS[:-1]:
        monkeypatch.setattr(agent, "find_task", lambda visible, name=agent.__name__: asked.append(name))
    grown = [*messages, {"role": "user", "content": "Please go on."}]
    assert respond(grown, tools, seed=0, memory=memory) == respond(grown, tools, seed=0)
    assert len(asked) == len(AGENTS) - 1  # only the fresh agent asked them
    asked.clear()
    changed = grown[:2] + grown[3:]
    respond(changed, tools, seed=0, memory=memory)
    assert len(asked) == len(AGENTS) - 1, "after a view change every family is asked in order"


def test_the_earlier_families_literals_are_those_of_their_statement_patterns():
    """EARLIER holds, for each family, the literals of every family before it (none for the first)."""
    assert agents.EARLIER[AGENTS[0]] == ()
    for index, agent in enumerate(AGENTS):
        assert set(agents.EARLIER[agent]) == {literal for earlier in AGENTS[:index] for literal in _literals(earlier)}
