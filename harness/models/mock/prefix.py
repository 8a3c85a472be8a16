"""Which leading objects two requests share: the mock provider's prefix cache and the simulated
agent's memory both reuse what they worked out for the very objects a request repeats."""
from __future__ import annotations

from typing import Any, Sequence


def shared_prefix(old: Sequence[Any], new: Sequence[Any]) -> int:
    """How many leading items of `new` are the same as in `old`.

    Usually all of `old` is: comparing whole slices settles that in C (a sequence comparison
    takes an identical item as equal at once). Otherwise the first difference is found by
    halving, comparing only slices in C: a strategy that masks one result ~20 messages back
    on every request makes this the common case (500 messages: ~7 µs, against ~14 µs for an
    item-by-item identity scan; 2,000: ~21 against ~85). Items that are equal but not the
    same object count as shared, which is as good: a reading depends on content alone.
    """
    shared = min(len(old), len(new))
    before, after = old[:shared], new[:shared]
    if type(before) is not type(after):  # a tuple against a list: compared as lists
        before, after = list(before), list(after)
    if before == after:
        return shared
    low, high = 0, shared  # the first `low` items are equal; a difference lies in [low, high)
    while high - low > 1:
        middle = (low + high) // 2
        if before[low:middle] == after[low:middle]:
            low = middle
        else:
            high = middle
    return low
