"""Task families (one module each) and suites (data files loaded with `datasets`)."""
from __future__ import annotations

import importlib
from types import ModuleType

FAMILIES: dict[str, str] = {
    "chained_lookup": "tasks.chained_lookup",
    "work_queue": "tasks.work_queue",
    "plant_early_ask_late": "tasks.plant_early_ask_late",
    "big_output": "tasks.big_output",
    "repo_maintenance": "tasks.repo_maintenance",
}


def family_module(name: str) -> ModuleType:
    if name not in FAMILIES:
        from harness.core.errors import TaskFileError

        raise TaskFileError(f"unknown task family {name!r}; known families: {', '.join(sorted(FAMILIES))}")
    return importlib.import_module(FAMILIES[name])
