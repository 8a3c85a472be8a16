"""What each strategy's token thresholds come to at the windows an invocation runs at, known before any
model call: config.json's `strategy_thresholds`, and a warning on stderr for a threshold that cannot act
(strategies.thresholds)."""
from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, TextIO

from harness.models.profiles import MAIN_PROFILE, build_profiles
from strategies import build_strategy

if TYPE_CHECKING:
    from harness.run.runner import Cell


def threshold_notes(cells: list["Cell"]) -> dict[str, list[dict[str, Any]]]:
    """Per strategy label, one entry per main input budget its cells run at: the budget, each scaled
    threshold's effective value there, and what cannot act there."""
    budgets: dict[int, int | None] = {}  # one per profiles object (a sweep point at most)
    notes: dict[str, list[dict[str, Any]]] = {}
    for cell in cells:
        key = id(cell.profiles)
        if key not in budgets:
            budgets[key] = build_profiles(cell.profiles)[MAIN_PROFILE].input_budget()
        budget, label = budgets[key], cell.strategy.display
        if any(entry["budget"] == budget for entry in notes.get(label, ())):
            continue
        strategy = build_strategy(cell.strategy)
        notes.setdefault(label, []).append({"budget": budget, "values": strategy.threshold_values(budget),
                                            "warnings": strategy.threshold_warnings(budget, label)})
    return notes


def print_warnings(notes: dict[str, list[dict[str, Any]]], stream: TextIO | None = None) -> None:
    """Each warning once, before the run (on stderr as it is when called)."""
    stream = stream or sys.stderr
    lines = dict.fromkeys(line for entries in notes.values() for entry in entries for line in entry["warnings"])
    for line in lines:
        print(f"warning: {line}", file=stream)
