"""A test-only task family: chained_lookup spoken over several user turns.

The first user message states the task; a short genuine user prompt ("keep going") then
arrives every `turn_every` requests, so the run has several turns and a turn-boundary
strategy has settled history to trim. Tests register it for
their duration through the `multiturn_suite` fixture (import it into the test module).
"""
from __future__ import annotations

import json
from dataclasses import dataclass

import pytest

import tasks
from harness.core.config import require
from tasks.chained_lookup import ChainedLookup
from tasks.chained_lookup import Params as ChainParams

FAMILY = "multiturn_lookup"
NUDGE = "Thanks. Please keep following the chain from where you are."


@dataclass
class Params(ChainParams):
    turn_every: int = 3  # requests between two user prompts
    turns: int = 6  # user prompts after the first

    def __post_init__(self) -> None:
        super().__post_init__()
        require(self.turn_every >= 1, f"turn_every must be at least 1, got {self.turn_every}")
        require(self.turns >= 0, f"turns must be 0 or more, got {self.turns}")


class MultiTurnLookup(ChainedLookup):
    family = FAMILY

    def __init__(self, params: Params, seed: int):
        super().__init__(params, seed)
        self.delivered = 0

    def user_messages_due(self, requests_done: int) -> list[str]:
        due = min(requests_done // self.params.turn_every, self.params.turns)
        texts = [NUDGE] * (due - self.delivered)
        self.delivered = max(due, self.delivered)
        return texts

    def has_pending_user_messages(self) -> bool:
        return False


def build(params: Params, seed: int) -> MultiTurnLookup:
    return MultiTurnLookup(params, seed)


DEFAULT_SUITE_PARAMS = {"hops": 10, "files": 8, "distractors": 30, "filler_lines": 4, "turn_every": 4, "turns": 8}


@pytest.fixture
def multiturn_suite(tmp_path, monkeypatch) -> str:
    """A one-task suite file of this family, registered for the test (runs must stay in-process)."""
    monkeypatch.setitem(tasks.FAMILIES, FAMILY, "multiturn_lookup")
    path = tmp_path / "multiturn.jsonl"
    path.write_text(json.dumps({"task_id": "mt-0", "family": FAMILY, "seed": 5, "params": DEFAULT_SUITE_PARAMS}) + "\n")
    return str(path)
