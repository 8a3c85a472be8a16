"""Which leading objects two requests share: the mock provider's prefix cache and the simulated
agent's memory both reuse what they worked out for the very objects a request repeats."""
from __future__ import annotations

from itertools import compress, count
from operator import is_not
from typing import Any, Sequence


def shared_prefix(old: Sequence[Any], new: Sequence[Any]) -> int:
    """How many leading items of `new` are the very same objects as in `old`.

    Usually all of `old` is: comparing whole slices first settles that in C (a sequence
    comparison takes an identical item as equal at once). Items that are equal but not the
    same object count as shared there, which is as good: a reading depends on content alone.
    """
    shared = min(len(old), len(new))
    if list(old[:shared]) == list(new[:shared]):
        return shared
    return next(compress(count(), map(is_not, old, new)), shared)
