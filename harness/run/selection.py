"""Which tasks of a suite an invocation runs: `--family`, `--task-ids`, `--limit`.

Filters apply in this order: families, then task ids, then the limit, which keeps the first N
tasks of each family in the suite's order (as lm-evaluation-harness's `--limit` is per task, so
`--limit 1` still tries every family). A name the suite does not hold, or a selection left empty,
is a ConfigError before any model call. config.json records the selection beside the tasks it
chose, so `--resume` runs exactly those tasks.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass
from typing import Any, Sequence

from harness.core.errors import ConfigError, did_you_mean
from tasks.suites import TaskRow


@dataclass(frozen=True)
class TaskSelection:
    """Plain-data filters over a suite's rows; all empty selects the whole suite."""

    families: tuple[str, ...] = ()
    task_ids: tuple[str, ...] = ()
    limit: int | None = None  # first N tasks per family, after the other filters

    def __post_init__(self) -> None:
        if self.limit is not None and (isinstance(self.limit, bool) or not isinstance(self.limit, int)
                                       or self.limit < 1):
            raise ConfigError(f"--limit: expected a positive integer, got {self.limit!r}")

    @property
    def empty(self) -> bool:
        return not (self.families or self.task_ids or self.limit)

    def as_dict(self) -> dict[str, Any]:
        """What config.json records (lists, so it reads back as JSON wrote it)."""
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}

    def apply(self, tasks: Sequence[TaskRow], suite: str) -> list[TaskRow]:
        """The selected tasks, in the suite's order; unknown names and an empty result are ConfigErrors."""
        _check_known("--family", self.families, [t.family for t in tasks], suite)
        _check_known("--task-ids", self.task_ids, [t.task_id for t in tasks], suite)
        chosen = [t for t in tasks if (not self.families or t.family in self.families)
                  and (not self.task_ids or t.task_id in self.task_ids)]
        if self.limit is not None:
            taken: Counter[str] = Counter()
            kept = []
            for task in chosen:
                taken[task.family] += 1
                if taken[task.family] <= self.limit:
                    kept.append(task)
            chosen = kept
        if not chosen:
            raise ConfigError(f"the task selection ({self.describe()}) leaves no task of suite {suite}: "
                              "see `ctxbench tasks list`")
        return chosen

    def describe(self) -> str:
        parts = [f"--family {','.join(self.families)}" if self.families else "",
                 f"--task-ids {','.join(self.task_ids)}" if self.task_ids else "",
                 f"--limit {self.limit}" if self.limit else ""]
        return " ".join(p for p in parts if p) or "the whole suite"


def _check_known(option: str, given: Sequence[str], present: Sequence[str], suite: str) -> None:
    known = list(dict.fromkeys(present))
    for name in given:
        if name not in known:
            listed = ", ".join(known[:12]) + (", ..." if len(known) > 12 else "")
            raise ConfigError(f"{option}: {name!r} is not in suite {suite}{did_you_mean(name, known)}; "
                              f"it has {listed}")


def parse_names(text: str | None, option: str) -> tuple[str, ...]:
    """A comma-separated CLI list (blank entries dropped, duplicates kept once); empty text is a ConfigError."""
    if text is None:
        return ()
    names = tuple(dict.fromkeys(part.strip() for part in text.split(",") if part.strip()))
    if not names:
        raise ConfigError(f"{option}: expected comma-separated names, got {text!r}")
    return names
