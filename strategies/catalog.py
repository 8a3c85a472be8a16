"""`ctxbench strategies [NAME]`: what each strategy does, where its rules come from, and its config keys.

The keys come from the same config dataclasses that validate `--strategy-config`
(harness.core.config.option puts each key's meaning beside its type and default), so the listing
cannot drift from what a config may say.
"""
from __future__ import annotations

import json
import sys
import textwrap
from dataclasses import MISSING, Field, is_dataclass
from typing import Any, get_args

from harness.core.config import budget_fraction, config_fields, field_help, least_default, type_text
from strategies import COMPOSE_KEY, REGISTRY, comparison_strategies, strategy_class
from strategies.base import Strategy
from strategies.thresholds import default_text

WIDTH = 100
NAME_WIDTH = 28


def summary_of(cls: type[Strategy]) -> str:
    """Its one-line description; a user's strategy without one: its docstring's first line."""
    if cls.summary:
        return cls.summary
    doc = (cls.__dict__.get("__doc__") or sys.modules[cls.__module__].__doc__ or "").strip()
    return doc.splitlines()[0] if doc else "(no description)"


def source_of(cls: type[Strategy], name: str) -> str:
    return cls.source or f"user strategy {name}"


def _install_note(cls: type[Strategy]) -> str:
    """An adapter's library: the installed version it runs, or how to install it."""
    library = cls.library
    if library is None:
        return ""
    if library.available():
        return f"; runs {library.distribution} {library.version()}"
    return f"; needs {library.distribution}: {library.install_hint()}"


def list_text() -> str:
    """Every registered strategy: name, one-line description, source (and an adapter's library)."""
    compared = set(comparison_strategies())
    lines = ["Strategies (`--strategies all` runs those marked *):", ""]
    for name in REGISTRY:
        cls = strategy_class(name)
        lines.append(f"{'*' if name in compared else ' '} {name:{NAME_WIDTH}s}{summary_of(cls)}")
        lines.append(f"  {'':{NAME_WIDTH}s}source: {source_of(cls, name)}{_install_note(cls)}")
    lines += ["", "`ctxbench strategies NAME` shows a strategy's config keys with types, defaults and meanings.",
              "Your own strategy: --strategies mypkg.module:MyStrategy (docs/extending.md)."]
    return "\n".join(lines)


def show_text(name: str) -> str:
    """One strategy: description, source, class, and every config key (nested ones dotted)."""
    cls = strategy_class(name)  # an unknown name is a ConfigError with close matches
    target = REGISTRY.get(name, name)
    if name in comparison_strategies():
        included = "yes"
    elif cls.library is not None:
        included = "no (an adapter: name it in --strategies)"
    elif cls.provider is not None:
        included = f"no (the provider's own: it needs {cls.provider}'s API or the mock; name it in --strategies)"
    else:
        included = "no (an observe-only add-on: compose it with `with`)" if not cls.standalone else "no"
    lines = [f"{name}: {summary_of(cls)}", f"source: {source_of(cls, name)}{_install_note(cls)}",
             f"class: {target} (details: python -m pydoc {target.partition(':')[0]})",
             f"in --strategies all: {included}", ""]
    keys = _key_lines(cls.Config, "")
    if keys:
        lines += [f"config keys (--strategy-config '{{\"{name}\": {{KEY: VALUE, ...}}}}'; "
                  "a sweep's --grid takes the dotted names):", *keys]
    elif not cls.other_keys:
        lines.append("config keys: none")
    if cls.other_keys:
        lines += [""] if keys else []
        lines.append("keys validated by the library's own constructor (its types and defaults):"
                     if cls.library is not None else "other keys:")
        for key, meaning in cls.other_keys.items():
            lines += [f"  {key}", *_wrapped(meaning or "(see the library's documentation)")]
    lines += ["", f"every strategy also takes `{COMPOSE_KEY}`: a list of strategies composed after it, "
                  f"e.g. {{\"{COMPOSE_KEY}\": [\"tool_output_limits\"]}}"]
    return "\n".join(lines)


def _key_lines(config: type, prefix: str) -> list[str]:
    lines = []
    for field_, hint in config_fields(config):
        key = prefix + field_.name
        nested = _nested_config(hint)
        default = "" if nested is not None and field_.default is MISSING else f", default {_default_text(field_)}"
        lines += [f"  {key}  ({type_text(hint)}{default})", *_wrapped(field_help(field_))]
        if nested is not None:
            lines += _key_lines(nested, key + ".")
    return lines


def _nested_config(hint: Any) -> type | None:
    """The config dataclass a field holds (itself, or inside an Optional), else None."""
    if is_dataclass(hint):
        return hint  # type: ignore[return-value]
    return next((arg for arg in get_args(hint) if is_dataclass(arg)), None)


def _default_text(field_: Field) -> str:
    fraction = budget_fraction(field_)
    if fraction is not None:  # a token threshold that scales with the run's input budget
        floor = least_default(field_)
        return default_text(fraction) + (f", at least {floor:,}" if floor else "")
    if field_.default is not MISSING:
        value = field_.default
    elif field_.default_factory is not MISSING:  # type: ignore[misc]
        value = field_.default_factory()  # type: ignore[misc]
    else:
        return "required"
    try:
        return json.dumps(value)
    except TypeError:
        return repr(value)


def _wrapped(text: str) -> list[str]:
    return textwrap.wrap(text, WIDTH, initial_indent="      ", subsequent_indent="      ") or []
