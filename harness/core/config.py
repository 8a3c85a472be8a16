"""Validation of plain-data configuration at the edge: unknown keys and bad values fail early."""
from __future__ import annotations

import functools
import math
import tempfile
from dataclasses import MISSING, Field, field, fields, is_dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, TypeVar, get_args, get_origin, get_type_hints


from harness.core.errors import ConfigError
from harness.core.secrets import remember
from harness.core.user_files import INT64_MAX

T = TypeVar("T")
HELP = "help"  # a config field's metadata key: its one-line meaning (`ctxbench strategies NAME`)
TOKENS = "tokens"  # a config field's metadata key: the field counts tokens, so it is at most MAX_TOKENS
BUDGET_FRACTION = "of_budget"  # a config field's metadata key: its default, a fraction of the run's input budget
AT_LEAST = "at_least"  # a config field's metadata key: the least its scaled default comes to (a provider's minimum)
MAX_TOKENS = 10**9  # 100x the largest context window offered (10M tokens): a token count past it is a mistake


def load_data_file(path: str | Path) -> Any:
    """Read a JSON or YAML file into plain data, within harness.core.user_files' bounds."""
    from harness.core.user_files import load_data

    data = load_data(path)
    remember(data)  # its secrets stay out of every output, the errors about it included
    return data


def parse_inline_or_file(value: str, what: str) -> dict[str, Any]:
    """Accept inline JSON (`{"a": 1}`) or a path to a JSON/YAML file; either must hold a mapping."""
    stripped = value.strip()
    if stripped.startswith(("{", "[")):
        from harness.core.user_files import parse_json

        data = parse_json(stripped, f"{what}: inline JSON")
        remember(data)
        source = "inline JSON"
    else:
        try:
            data = load_data_file(stripped)
        except ConfigError as exc:
            raise ConfigError(f"{what}: {exc}") from exc
        source = stripped
    if not isinstance(data, dict):
        raise ConfigError(f"{what} ({source}): expected a mapping, got {data!r}")
    return data


def _check_type(value: Any, annotation: Any, where: str) -> Any:
    origin = get_origin(annotation)
    if annotation is Any:
        return value
    if origin is None:
        if annotation is float:
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ConfigError(f"{where}: expected a number, got {value!r}")
            if not math.isfinite(value) or abs(value) > INT64_MAX:
                raise ConfigError(f"{where}: expected a finite number within +-2**63, got {value!r:.40}")
            return float(value)
        if annotation is int:
            if isinstance(value, bool) or not isinstance(value, int):
                raise ConfigError(f"{where}: expected an integer, got {value!r}")
            if abs(value) > INT64_MAX:  # every integer of a config is written to config.json and read as 64 bits
                raise ConfigError(f"{where}: expected an integer within +-(2**63 - 1), got {value:.3g}")
            return value
        if annotation is bool:
            if not isinstance(value, bool):
                raise ConfigError(f"{where}: expected true or false, got {value!r}")
            return value
        if annotation is str:
            if not isinstance(value, str):
                raise ConfigError(f"{where}: expected a string, got {value!r}")
            return value
        if annotation is type(None):
            if value is not None:
                raise ConfigError(f"{where}: expected null, got {value!r}")
            return value
        if is_dataclass(annotation):
            return build_dataclass(annotation, value, where)
        return value
    args = get_args(annotation)
    if origin in (list, tuple):
        if not isinstance(value, (list, tuple)):
            raise ConfigError(f"{where}: expected a list, got {value!r}")
        item_type = args[0] if args else Any
        return [_check_type(item, item_type, f"{where}[{i}]") for i, item in enumerate(value)]
    if origin is dict:
        if not isinstance(value, Mapping):
            raise ConfigError(f"{where}: expected a mapping, got {value!r}")
        return dict(value)
    # Optional / Union: accept the first alternative that fits. A value given (not null) is reported
    # against the other alternatives alone, so an Optional's error says what is wrong inside it.
    errors = []
    for alternative in args:
        try:
            return _check_type(value, alternative, where)
        except ConfigError as exc:
            if value is None or alternative is not type(None):
                errors.append(str(exc))
    raise ConfigError(errors[0] if len(errors) == 1 else f"{where}: {value!r} fits none of the allowed types")


@functools.cache
def _type_hints(cls: type) -> dict[str, Any]:
    """A config class's resolved field types, worked out once: profiles and strategies are built for every run."""
    return get_type_hints(cls)


def build_dataclass(cls: type[T], data: Any, where: str) -> T:
    """Build a config dataclass from a mapping, refusing unknown keys and wrong types.

    Range checks belong in the dataclass's ``__post_init__``; they raise ConfigError too.
    """
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        raise ConfigError(f"{where}: expected a mapping of options, got {data!r}")
    hints = _type_hints(cls)
    known = {f.name: f for f in fields(cls)}
    unknown = sorted(set(data) - set(known))
    if unknown:
        allowed = f"known keys: {', '.join(sorted(known))}" if known else "it takes no options"
        raise ConfigError(f"{where}: unknown key(s) {', '.join(map(repr, unknown))}; {allowed}")
    kwargs = {}
    for name, field_ in known.items():
        if name in data:
            kwargs[name] = _check_type(data[name], hints[name], f"{where}.{name}")
            _check_tokens(field_, kwargs[name], f"{where}.{name}")
        elif field_.default is MISSING and field_.default_factory is MISSING:  # type: ignore[misc]
            raise ConfigError(f"{where}: missing required key {name!r}")
    try:
        return cls(**kwargs)
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from exc


def _check_tokens(field_: Field, value: Any, where: str) -> None:
    """A field marked `tokens` holds at most MAX_TOKENS (a threshold of 10**38 tokens is no threshold)."""
    if field_.metadata.get(TOKENS) and isinstance(value, (int, float)) and value > MAX_TOKENS:
        raise ConfigError(f"{where}: {value:,} tokens is more than any model holds; at most {MAX_TOKENS:,}")


def option(default: Any = MISSING, help: str = "", *, factory: Callable[[], Any] | None = None,
           tokens: bool = False, of_budget: float | None = None, at_least: int | None = None) -> Any:
    """A config dataclass field with its meaning beside it: the one schema that both validates
    (build_dataclass reads the type hint, and bounds a `tokens` field by MAX_TOKENS) and documents
    (`ctxbench strategies NAME` reads the help). `of_budget`: a token threshold whose default (None)
    is that fraction of the run's main input budget (strategies.thresholds resolves it at run start), and never
    less than `at_least` (a provider's minimum, which it refuses a smaller value under)."""
    metadata = {HELP: help, TOKENS: tokens or of_budget is not None, BUDGET_FRACTION: of_budget, AT_LEAST: at_least}
    if of_budget is not None:
        default = None
    if factory is not None:
        return field(default_factory=factory, metadata=metadata)
    return field(default=default, metadata=metadata)


def field_help(field_: Field) -> str:
    """A config field's one-line meaning ("" when it has none)."""
    return str(field_.metadata.get(HELP, ""))


def type_text(annotation: Any) -> str:
    """A type hint as a user reads it in a config file: int, number, list[number], object, ... or null."""
    origin = get_origin(annotation)
    if origin is None:
        if annotation is type(None):
            return "null"
        if is_dataclass(annotation):
            return "object"
        return {float: "number", int: "integer", bool: "boolean", str: "string"}.get(annotation, "any")
    args = get_args(annotation)
    if origin in (list, tuple):
        return f"list[{type_text(args[0]) if args else 'any'}]"
    if origin is dict:
        return "object"
    return " or ".join(type_text(arg) for arg in sorted(args, key=lambda arg: arg is type(None)))  # null last


def budget_fraction(field_: Field) -> float | None:
    """The fraction of the input budget a token threshold defaults to (None: not budget-scaled)."""
    return field_.metadata.get(BUDGET_FRACTION)


def least_default(field_: Field) -> int | None:
    """The least a budget-scaled default comes to (None: no floor)."""
    return field_.metadata.get(AT_LEAST)


def config_fields(cls: type) -> list[tuple[Field, Any]]:
    """The fields of a config dataclass with their resolved type hints, in declaration order."""
    hints = _type_hints(cls)
    return [(field_, hints[field_.name]) for field_ in fields(cls)]


def require(condition: bool, message: str) -> None:
    """Raise ConfigError with `message` unless `condition` holds (for __post_init__ range checks)."""
    if not condition:
        raise ConfigError(message)


def check_writable_dir(path: str | Path, what: str) -> None:
    """A directory the invocation will write (--out, --cache) must be creatable and writable: an existing
    file in its place, or a place nothing can be created in, fails now rather than at the first write.
    Tried by creating (and at once removing) a file in the nearest existing directory; nothing is left behind."""
    path = Path(path)
    existing = path
    while not existing.exists() and existing.parent != existing:
        existing = existing.parent
    if not existing.is_dir():
        raise ConfigError(f"{what} {path}: {existing} is a file, not a directory")
    try:
        with tempfile.TemporaryFile(dir=existing):
            pass
    except OSError as exc:
        raise ConfigError(f"{what} {path}: cannot write in {existing}: {exc.strerror}") from exc
