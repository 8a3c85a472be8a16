"""Helpers for the adapter tests: skip, with the reason, where a library's extra is not installed."""
from __future__ import annotations


import pytest

from strategies.adapters import Library


def requires(library: Library) -> pytest.MarkDecorator:
    """Skip a test or module unless `library` is installed and importable on this Python."""
    missing = not library.available()
    return pytest.mark.skipif(missing, reason=f"{library.distribution} is not installed here: "
                                              f"{library.install_hint()}")
