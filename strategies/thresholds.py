"""Token thresholds that scale with the window.

A token threshold declared with `option(..., of_budget=F)` (harness.core.config) defaults to F x the
run's main input budget (`RunContext.budget()`), F chosen so that at REFERENCE_BUDGET it equals the
value its source documents (seed 002's 100,000-token turn-boundary target is 0.5). An explicit value
stays absolute. The effective numbers are recorded (rows' and config.json's `strategy_thresholds`),
and an explicit threshold that cannot act below the window is said before the run (`warnings`).
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, fields, is_dataclass
from typing import Any

from harness.core.config import TOKENS, budget_fraction, least_default

# The window the sources' documented values were set for: a fraction is chosen to give them here, and a
# run whose model's window is unknown resolves against it.
REFERENCE_BUDGET = 200_000


@dataclass(frozen=True)
class OfBudget:
    """A default written as a fraction of the input budget where a plain value is expected (an adapter's
    defaults for a library's fields)."""

    fraction: float


def scaled(fraction: float, budget: int | None, at_least: int | None = None) -> int:
    """fraction x budget in whole tokens (at least 1, or `at_least`); an unknown budget is REFERENCE_BUDGET."""
    return max(at_least or 1, int(fraction * (budget or REFERENCE_BUDGET)))


def resolved(config: Any, budget: int | None) -> Any:
    """A copy of `config` with each budget-scaled threshold left at its default set to its fraction of
    `budget` (the config itself when it has none). Not re-validated: the values came from checked ones."""
    if not is_dataclass(config):
        return config
    defaults = {field_.name: scaled(fraction, budget, least_default(field_)) for field_ in fields(config)
                if (fraction := budget_fraction(field_)) is not None and getattr(config, field_.name) is None}
    if not defaults:
        return config
    copied = copy.copy(config)
    for name, value in defaults.items():
        object.__setattr__(copied, name, value)
    return copied


def threshold_values(config: Any, budget: int | None) -> dict[str, int]:
    """Each budget-scaled threshold's effective value at `budget` (what a row and config.json record)."""
    if not is_dataclass(config):
        return {}
    effective = resolved(config, budget)
    return {field_.name: getattr(effective, field_.name) for field_ in fields(config)
            if budget_fraction(field_) is not None}


def default_text(fraction: float) -> str:
    """How `ctxbench strategies NAME` shows a scaled default: "0.5 x budget (100,000 at 200k)"."""
    return f"{fraction:g} x budget ({scaled(fraction, REFERENCE_BUDGET):,} at {REFERENCE_BUDGET // 1000}k)"


def warnings(config: Any, budget: int | None, label: str) -> list[str]:
    """A token threshold set at or above the input budget never acts before the context overflows: one
    line per such key, naming its value and one that would act (its scaled default, else just under the
    budget); a default held at a provider's minimum that is at or above the budget cannot act at all. Nothing
    when the budget is unknown."""
    if not is_dataclass(config) or not budget:
        return []
    lines = []
    for field_ in fields(config):
        value = getattr(config, field_.name)
        fraction, floor = budget_fraction(field_), least_default(field_)
        if value is None and floor is not None and scaled(fraction, budget, floor) >= budget:
            lines.append(f"strategy {label}: {field_.name} cannot be under the provider's minimum, {floor:,} tokens, "
                         f"which is at or above the {budget:,}-token input budget: it never acts in this run, which "
                         "then behaves as without it")
            continue
        if not field_.metadata.get(TOKENS) or not isinstance(value, int) or isinstance(value, bool) or value < budget:
            continue
        acting = (f"{scaled(fraction, budget, floor):,} ({fraction:g} x budget, its default)" if fraction
                  else f"{budget - 1:,}")
        lines.append(f"strategy {label}: {field_.name} {value:,} is at or above the {budget:,}-token input budget, "
                     f"so it never acts before the context overflows; {acting} would act")
    return lines
