"""The house holds to its layers (harness.layers): no import runs up the data path, no modules import each
other in a circle, and the public imports users' code and the docs rely on still work."""
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

from harness import layers

ROOT = Path(__file__).resolve().parents[2]


def test_no_import_runs_up_the_path_and_no_circle():
    assert layers.problems() == []


def test_every_module_is_in_a_layer():
    for name in layers.modules():
        layers.layer_of(name)  # raises LookupError naming a module no layer holds


def test_the_walk_sees_an_import_up_the_path_and_a_circle(tmp_path, monkeypatch):
    """The walk is not blind: an import from a lower layer into a higher one, and two modules importing each
    other, are each reported (lazy imports inside a function count)."""
    found = [layers.Import("harness.core.tokens", "harness.models.llm", 1),
             layers.Import("harness.models.llm", "harness.models.usage", 2),
             layers.Import("harness.models.usage", "harness.models.llm", 3)]
    assert layers.upward(found) == [found[0]]
    assert layers.circles(found) == [["harness.models.llm", "harness.models.usage"]]
    module = tmp_path / "lazy.py"
    module.write_text("def f():\n    from harness.models import llm\n")
    monkeypatch.setattr(layers, "modules", lambda: {"harness.core.lazy": module, "harness.models.llm": module})
    assert [(e.source, e.target) for e in layers.imports(layers.modules())] == [("harness.core.lazy",
                                                                                  "harness.models.llm")]


@pytest.mark.parametrize("module, names", [
    ("harness.api", ("run", "sweep", "load_results", "mock_profiles")),
    ("strategies.base", ("Strategy",)),
    ("tasks.base", ("Environment", "ToolSpec", "ToolCall", "ToolResult")),
    ("harness.core.config", ("require", "option")),
])
def test_the_public_imports_of_users_code_and_the_docs_work(module, names):
    imported = importlib.import_module(module)
    assert all(hasattr(imported, name) for name in names)


def test_the_command_reports_a_clean_house():
    done = subprocess.run([sys.executable, "-m", "harness.layers"], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0 and "no import up the path, no circle" in done.stdout


def test_the_module_paths_users_strategies_imported_before_the_layout_still_import_with_a_warning():
    """A user's strategy written against the old flat layout (`from harness.config import require`, `from
    harness.context import RunContext`) keeps working: the old path is the module at its new place."""
    code = ("import warnings, importlib\n"
            "warnings.simplefilter('error', DeprecationWarning)\n"
            "try:\n    import harness.context\nexcept DeprecationWarning as w:\n    print(w)\n"
            "warnings.simplefilter('ignore')\n"
            "from harness.config import require\n"
            "import harness.core.config, harness.llm, harness.models.llm\n"
            "print(require is harness.core.config.require, harness.llm is harness.models.llm)\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert done.stdout.splitlines() == ["harness.context is now harness.conversation.context; import it from there",
                                        "True True"], done.stderr
