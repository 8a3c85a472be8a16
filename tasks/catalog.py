"""What `ctxbench tasks list` and `ctxbench tasks show` print: families, suites, one instance."""
from __future__ import annotations

import json
import textwrap
from collections import Counter
from dataclasses import asdict, fields

from harness.core.errors import ConfigError, TaskFileError
from tasks import FAMILIES, family_module
from tasks.base import Environment
from tasks.suites import TaskRow, load_tasks, suite_names


KNOBS_NOTE = ("Knobs: default [low..high]; some families also bound a total (archive lines, dump characters),\n"
              "so that generating an instance stays within seconds and a few hundred MB (docs/reliability.md).")
SEEDS_NOTE = ("Run seeds are samples: `--seeds 0` runs each row's own instance, any other run seed draws a fresh\n"
              "instance of the row's family and params (a row with \"pinned\": true keeps its own); intervals\n"
              "resample tasks. `tasks show ID --seed N` shows the instance of run seed N.")


def _summary(name: str, doc: str | None) -> str:
    first = (doc or "").strip().splitlines()[0] if doc else ""
    return first.removeprefix(f"{name}:").strip()


def _bound(params: type, name: str) -> str:
    bounds = getattr(params, "BOUNDS", {})
    return f" [{bounds[name][0]}..{bounds[name][1]}]" if name in bounds else ""


def list_text() -> str:
    """Every family with its knobs, defaults and [low..high] bounds, then every built-in suite with its instances
    per family and their task ids (what `tasks show ID` and a task file's rows name)."""
    lines = ["Families:"]
    for name in FAMILIES:
        module = family_module(name)
        knobs = ", ".join(f"{f.name}={f.default}{_bound(module.Params, f.name)}" for f in fields(module.Params))
        lines.append(f"  {name:22s} {_summary(name, module.__doc__)}")
        lines.append(f"  {'':22s} knobs: {knobs}")
    lines.append("")
    lines.append("Suites:")
    for suite in suite_names():
        rows = load_tasks(suite)
        per_family = Counter(row.family for row in rows)
        counts = ", ".join(f"{family} {n}" for family, n in sorted(per_family.items()))
        pinned = sum(row.pinned for row in rows)
        lines.append(f"  {suite:10s} {len(rows):3d} tasks: {counts}" + (f"; {pinned} pinned" if pinned else ""))
        lines.extend(textwrap.wrap(" ".join(row.task_id for row in rows), width=100,
                                   initial_indent=" " * 17, subsequent_indent=" " * 17, break_on_hyphens=False))
    lines += ["", KNOBS_NOTE, "", SEEDS_NOTE]
    return "\n".join(lines)


def find_row(task_id: str, source: str | None = None) -> TaskRow:
    """The row named `task_id` in `source`, or in any built-in suite when no source is given."""
    sources = [source] if source else suite_names()
    for name in sources:
        for row in load_tasks(name):
            if row.task_id == task_id:
                return row
    where = source or f"the suites {', '.join(suite_names())}"
    raise TaskFileError(f"no task {task_id!r} in {where}; `ctxbench tasks list` shows the suites")


def show_text(row: TaskRow, run_seed: int = 0) -> str:
    """One instance as the agent first meets it under `run_seed`: prompt, opening messages and tools."""
    if run_seed < 0:
        raise ConfigError(f"tasks show --seed: a run seed is an integer >= 0, got {run_seed}")
    environment = row.build(run_seed)
    module = family_module(row.family)
    params = asdict(module.Params(**row.params))
    drawn = "pinned: the row's own instance" if row.pinned else "the row's own instance" if run_seed == 0 else "drawn"
    lines = [f"Task {row.task_id}: family {row.family}, seed {row.seed}; run seed {run_seed}: instance seed "
             f"{row.instance_seed(run_seed)} ({drawn})",
             f"params: {json.dumps(params, sort_keys=True)}"]
    if row.max_requests:
        lines.append(f"max_requests: {row.max_requests}")
    lines += ["", "System prompt:", environment.system_prompt, ""]
    for number, text in enumerate(environment.initial_user_messages(), 1):
        lines += [f"User message {number}:", text, ""]
    if type(environment).user_messages_due is not Environment.user_messages_due:
        lines += ["(Further user messages arrive during the run, as the work progresses.)", ""]
    lines.append("Tools:")
    for spec in environment.tool_specs():
        arguments = ", ".join(f"{name}: {schema.get('type', '?')}"
                              for name, schema in spec.parameters.get("properties", {}).items())
        lines.append(f"  {spec.name}({arguments}) - {spec.description}")
    return "\n".join(lines)
