"""Every Python file of the project compiles without a warning on the Python running the tests.

An invalid escape in a string literal (say `\\s` in a docstring quoting a regular expression) is a
DeprecationWarning on Python 3.11, which the default filters hide, a SyntaxWarning printed at import on
3.12 (the OpenHands extra's Python), and slated to become an error: compiled here with warnings as errors.
"""
from __future__ import annotations

import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("harness", "strategies", "tasks", "tests", "notebooks")


def _sources() -> list[Path]:
    return sorted(path for package in PACKAGES for path in (ROOT / package).rglob("*.py"))


def test_the_project_has_sources_to_check():
    assert len(_sources()) > 50


@pytest.mark.parametrize("path", _sources(), ids=lambda path: str(path.relative_to(ROOT)))
def test_source_compiles_without_warnings(path: Path):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        compile(path.read_text(encoding="utf-8"), str(path), "exec", dont_inherit=True)
