"""DESIGN.md, the mock LLM rule 1: it knows only what it was shown."""
import ast
from pathlib import Path

import harness.models.mock.agents as agents_pkg
from harness.models.mock.agents import respond


def test_placeholder_everything_fails_every_smoke_instance(run_suite):
    runs = run_suite("smoke", strategies="forgetful:PlaceholderEverything")
    assert len(runs) >= 3
    assert not runs["success"].any(), runs[["task_id", "termination"]]


def test_none_with_a_large_window_solves_every_smoke_instance(run_suite):
    runs = run_suite("smoke", strategies="none", window=1_000_000)
    assert runs["success"].all(), runs[["task_id", "termination", "error"]]
    assert (runs["termination"] == "submitted").all()


def test_agent_modules_never_import_tasks():
    """The simulated agent cannot reach the task generator or its ground truth."""
    for path in Path(agents_pkg.__file__).parent.glob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            assert not any(n == "tasks" or n.startswith("tasks.") for n in names), f"{path.name} imports {names}"


def test_agent_without_a_task_statement_does_not_act():
    reply = respond([{"role": "system", "content": "You are an agent."}], [], seed=0)
    assert not reply.get("tool_calls")
    assert "cannot find a task" in reply["content"]
