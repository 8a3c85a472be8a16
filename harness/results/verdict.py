"""The checker's verdict of a run (runs.jsonl `detail`, run_end's `detail`) as short text.

Apart from harness.results.report so that readers that must start fast (`ctxbench show`) need no pandas.
"""
from __future__ import annotations

import json
import re
from typing import Any

# "ContextWindowExceededError: litellm.BadRequestError: prompt is too long" -> "prompt is too long"
EXCEPTION_PREFIXES = re.compile(r"^(?:[\w.]+(?:Error|Exception): )+")


def as_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def expected_given_items(expected: Any, given: Any) -> list[str]:
    """Expected vs given, one item per difference; of two mappings, only the keys whose values differ (case
    aside), and the keys given that were not expected; [] when two mappings agree."""
    if isinstance(expected, dict) and isinstance(given, dict):
        wrong = [f"{key}: expected {as_json(value)}, given {as_json(given.get(key))}" for key, value in expected.items()
                 if str(given.get(key)).lower() != str(value).lower()]
        extra = [key for key in given if key not in expected]
        return wrong + ([f"also given: {', '.join(map(str, extra))}"] if extra else [])
    return [f"expected {as_json(expected)}, given {as_json(given)}"]


def checker_parts(detail: Any, error: Any = None) -> list[str]:
    """A run's checker detail and error as short parts: expected vs given first, then the detail's other
    fields as key=value, then the error without its exception-class prefixes."""
    parts = []
    if isinstance(detail, dict):
        if "expected" in detail or "given" in detail:
            parts.append("; ".join(expected_given_items(detail.get("expected"), detail.get("given"))) or "answers match")
        parts += [f"{key}={as_json(value)}" for key, value in detail.items() if key not in ("expected", "given")]
    else:
        parts.append("(no detail recorded)")
    if isinstance(error, str) and error:
        parts.append(f"error: {EXCEPTION_PREFIXES.sub('', error)}")
    return parts
