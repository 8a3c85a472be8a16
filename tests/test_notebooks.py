"""notebooks/: stripped in git, and both execute without a cell error on smoke results (nbclient)."""
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def test_both_notebooks_exist():
    assert {p.name for p in NOTEBOOKS} == {"report.ipynb", "tuning.ipynb"}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_outputs_are_stripped(path):
    book = nbformat.read(path, as_version=4)
    for index, cell in enumerate(book.cells):
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, f"{path.name} cell {index} has outputs"
    assert "widgets" not in book.metadata


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_first_cell_names_the_results_directory(path):
    first = nbformat.read(path, as_version=4).cells[0]
    assert first.cell_type == "code" and "RESULTS_DIR = " in first.source


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_executes_on_smoke_results(path, smoke_sweep):
    """Any cell error fails the test (nbclient raises CellExecutionError)."""
    book = nbformat.read(path, as_version=4)
    book.cells[0].source = f"RESULTS_DIR = {str(smoke_sweep)!r}"
    # The repository root as working directory: the kernel imports this checkout's harness.
    NotebookClient(book, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(ROOT)}}).execute()
    outputs = [o for cell in book.cells if cell.cell_type == "code" for o in cell.outputs]
    assert any("image/png" in o.get("data", {}) for o in outputs), "no plot was shown"
    if path.name == "tuning.ipynb":
        assert any("recommended: mask[keep=3]" in o.get("text", "") for o in outputs)
