"""Read-only messages: what the view holds cannot be changed in place, only by view ops.

A strategy that edited a message dict in place fooled the mock (the agent's
memory kept the old reading, the provider billed it as cached, the log never recorded the edit).
Every message is frozen once, as a run logs it (harness.conversation.context.RunContext.emit; a replayed log's as the
view folds it, harness.conversation.view), so an in-place edit raises
`MessageEditError` at once instead of changing what is sent unseen. Frozen values are dict and list
subclasses (json, orjson through harness.core.fast_json, litellm and `isinstance` checks read them as
usual); copies (`dict(m)`, `{**m}`, `m.copy()`, `copy.copy`, `copy.deepcopy`, slices) are plain and
free to edit, which is how a strategy makes the message of a `replace` op.
"""
from __future__ import annotations

from typing import Any, NoReturn

RULE = ("messages handed to strategies are read-only: change what is sent with view ops "
        "(replace, drop, set), never by editing a message in place")


class MessageEditError(TypeError):
    """A message of the view (or a value inside it) was changed in place."""


def _refusal(name: str) -> Any:
    def refuse(self: Any, *args: Any, **kwargs: Any) -> NoReturn:
        raise MessageEditError(f"{RULE}; tried {type(self).__name__}.{name}")
    refuse.__name__ = name
    return refuse


class FrozenDict(dict):
    """A dict whose mutators raise MessageEditError; its copies are plain dicts.

    `token_count` and `cache_key` (None until first asked for) hold what the harness's token count
    (harness.core.tokens.count_message) and the mock provider's prefix-cache key (harness.models.mock.provider) work out
    of a message: it cannot change in place, so they never go stale, and a copy (an edit) has neither. Ours:
    the view, the metrics and the provider each read a new message once, not once apiece.
    Both start as None however the message is made (frozen, built by the LLM layer, unpickled), so a reader
    tests for None: an unset slot made it raise and catch an AttributeError per message (~2% of a `long` pass)."""

    __slots__ = ("token_count", "cache_key")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        dict.__init__(self, *args, **kwargs)
        self.token_count: int | None = None
        self.cache_key: int | None = None

    def __copy__(self) -> dict[str, Any]:
        return dict(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[str, Any]:
        return thaw(self)

    def __reduce__(self) -> tuple[Any, ...]:
        return (FrozenDict, (dict(self),))


class FrozenList(list):
    """A list whose mutators raise MessageEditError; its copies and slices are plain lists."""

    __slots__ = ()

    def __copy__(self) -> list[Any]:
        return list(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> list[Any]:
        return thaw(self)

    def __reduce__(self) -> tuple[Any, ...]:
        return (FrozenList, (list(self),))


_MUTATORS = {
    FrozenDict: ("__setitem__", "__delitem__", "__ior__", "clear", "pop", "popitem", "setdefault", "update"),
    FrozenList: ("__setitem__", "__delitem__", "__iadd__", "__imul__", "append", "extend", "insert", "pop", "remove",
                 "clear", "sort", "reverse"),
}
for _kind, _names in _MUTATORS.items():
    for _name in _names:
        setattr(_kind, _name, _refusal(_name))


_ATOMS = frozenset({str, int, bool, float, type(None), FrozenDict, FrozenList})  # nothing inside to freeze


def freeze(value: Any) -> Any:
    """`value` with every dict and list in it made read-only; frozen parts are reused, not copied.
    Once per message as it enters the view: values that hold nothing to freeze are not visited again."""
    if type(value) in _ATOMS:
        return value
    if isinstance(value, dict):
        frozen = FrozenDict(value)
        for key, item in value.items():
            if type(item) not in _ATOMS:
                dict.__setitem__(frozen, key, freeze(item))
        return frozen
    if isinstance(value, (list, tuple)):
        return FrozenList([item if type(item) in _ATOMS else freeze(item) for item in value])
    return value


def thaw(value: Any) -> Any:
    """A plain, editable deep copy of a (frozen) value."""
    if isinstance(value, dict):
        return {key: thaw(item) for key, item in value.items()}
    if isinstance(value, list):
        return [thaw(item) for item in value]
    return value

