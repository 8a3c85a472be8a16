"""The own-strategy example of docs/extending.md (the README points to it) works as written (issue 2.7)."""
import re
import sys
from pathlib import Path

import pandas as pd

from harness.cli import main

EXTENDING = Path(__file__).resolve().parents[1] / "docs" / "extending.md"


def test_readme_strategy_example_runs_by_import_path(tmp_path, monkeypatch):
    text = EXTENDING.read_text()
    code = re.search(r"```python\n(# mystrategies\.py\n.*?)```", text, re.S).group(1)
    (tmp_path / "mystrategies.py").write_text(code)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    sys.modules.pop("mystrategies", None)
    out = tmp_path / "out"
    assert main(["run", "--suite", "smoke", "--strategies", "mystrategies:KeepLastToolResults", "--strategy-config",
                 '{"mystrategies:KeepLastToolResults": {"keep_last": 2}}', "--out", str(out), "--workers", "1",
                 "--no-progress"]) == 0
    runs = pd.read_json(out / "runs.jsonl", lines=True)
    assert (runs["compactions"] > 0).all()
