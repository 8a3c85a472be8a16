"""Threshold sweeps: a grid over one strategy's parameters, each point a labelled StrategySpec.

A grid names dotted keys into the strategy's config (`keep_last`, `stages.0.level`, ...) and
the values to try. Keys under `mock.` set the simulated agent's knobs (`mock.narrate`) and keys
under `summarizer.` the mock summarizer's (`summarizer.summary_completeness`) at that point: each
point's runs get their own profiles (runner.Matrix.strategy_knobs), and its label names the knob. The key
`cache_policy` sets the cache policy (harness.models.cache_policy) of the main and summary profiles at that point
(runner.Matrix.strategy_profiles).
Every point's strategy and knobs are checked before any model call. Points are ordered by value,
axis by axis in grid order (null, booleans, numbers numerically, strings, then lists and mappings
by their JSON; a secret axis keeps its given order). The sweep runs like `ctxbench run` and writes,
next to the usual layout, `sweep.json` (the grid and its points) and `tuning.csv`: one row per
point, and one per strategy run alongside (`--also`, `baseline` True), all of which take part in
the Pareto flag and the recommendation.

The recommendation (docs/sweeps.md):
1. the leader is the row with the highest success rate (then the lowest cost per success, then
   the lowest mean cost, then table order);
2. every other row's success is compared with the leader's by the paired difference over the same
   (task_id, seed) runs, its 95% interval resampling tasks (harness.results.stats.paired_difference); a row
   ties with the leader unless that interval lies wholly below 0 (an unknown interval ties too);
3. the recommended row is the cheapest per success among the leader and the rows tying with it
   (unknown cost last; then the higher success rate, the lower mean cost, table order).
So a difference no larger than its interval never decides; a baseline can be the recommendation.
"""
from __future__ import annotations

import copy
import itertools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from harness.core.config import load_data_file
from harness.core.errors import ConfigError, did_you_mean
from harness.core.secrets import is_secret_path, redact, remember
from harness.results.tuning import value_text
from harness.core.user_files import parse_json, parse_yaml
from strategies import StrategySpec, build_strategy

GRID_FILE_KEYS = {"strategy", "config", "label", "grid"}
# Grid key prefix -> (the profile whose mock knobs it sets, what those are the knobs of)
KNOB_PREFIXES = {"mock": ("main", "simulated agent (mock/agent)"), "summarizer": ("summary", "mock summarizer")}
POLICY_KEY = "cache_policy"  # the grid key of the cache policy, set on these profiles
POLICY_PROFILES = ("main", "summary")


@dataclass
class Grid:
    """One strategy, its base config, and the values to try for each dotted key."""

    strategy: str
    axes: dict[str, list[Any]]
    base: dict[str, Any] = field(default_factory=dict)
    label: str = ""

    @property
    def prefix(self) -> str:
        return self.label or self.strategy


def split_values(text: str) -> list[str]:
    """Split on commas outside brackets and quotes, so `[0.7,0.9],[0.8]` is two values."""
    parts, depth, quote, current = [], 0, "", []
    for char in text:
        if quote:
            quote = "" if char == quote else quote
        elif char in "\"'":
            quote = char
        elif char in "[{":
            depth += 1
        elif char in "]}":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append("".join(current))
            current = []
            continue
        current.append(char)
    parts.append("".join(current))
    return [part.strip() for part in parts]


def _parse_value(key: str, text: str) -> Any:
    """JSON first (so 1e3 is a number), then YAML (bare words, quoted strings)."""
    try:
        return parse_json(text, f"--grid {key}")
    except ConfigError:
        pass
    return parse_yaml(text, f"--grid {key}: value {text[:80]!r}") if text else None


def parse_grid_args(items: Iterable[str]) -> dict[str, list[Any]]:
    """`key=v1,v2` items -> {key: [v1, v2]}; values are JSON or YAML (numbers, booleans, lists, words)."""
    axes: dict[str, list[Any]] = {}
    for item in items:
        key, sep, values = item.partition("=")
        key = key.strip()
        if not sep or not key or not values.strip():
            raise ConfigError(f"--grid {item!r}: expected key=value1,value2,...")
        if key in axes:
            raise ConfigError(f"--grid: key {key!r} given twice")
        axes[key] = [_parse_value(key, value) for value in split_values(values)]
        remember({key: axes[key]})  # a secret-named key's values stay out of every output
    return axes


def check_grid_mapping(data: Any, where: str) -> dict[str, Any]:
    """A grid as a grid file holds it: {strategy, config (base), label, grid: {dotted key: [values]}}."""
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: expected a mapping with keys {sorted(GRID_FILE_KEYS)}, got {data!r:.80}")
    unknown = sorted(set(data) - GRID_FILE_KEYS)
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {unknown}{did_you_mean(str(unknown[0]), GRID_FILE_KEYS)}; "
                          f"known keys: {sorted(GRID_FILE_KEYS)}")
    if not isinstance(data.get("grid") or {}, dict):
        raise ConfigError(f"{where}: 'grid' must be a mapping of dotted key to a list of values, got {data['grid']!r}")
    return data


def load_grid_file(path: str | Path) -> dict[str, Any]:
    """A YAML/JSON grid file (`check_grid_mapping`)."""
    return check_grid_mapping(load_data_file(path), str(path))


def grid_from_mapping(data: Any, where: str = "sweep grid") -> Grid:
    """The Grid of a grid file's mapping (what `harness.api.sweep` takes besides a Grid)."""
    data = check_grid_mapping(data, where)
    return make_grid(data.get("strategy"), dict(data.get("grid") or {}), data.get("config"), data.get("label"), where)


def make_grid(strategy: str | None, axes: dict[str, Any], base: Any = None, label: str | None = None,
              where: str = "sweep") -> Grid:
    """Check the grid's shape (not yet the keys' meaning: `validate_grid` builds each point)."""
    if not strategy or not isinstance(strategy, str):
        raise ConfigError(f"{where}: name the strategy to sweep (--strategy NAME or 'strategy:' in the grid file)")
    if not isinstance(axes, dict) or not axes:
        raise ConfigError(f"{where}: the grid is empty; give at least one key=value1,value2")
    for key, values in axes.items():
        if not isinstance(values, list) or not values:
            raise ConfigError(f"{where}: grid key {key!r}: expected a non-empty list of values, got {values!r}")
    if base is not None and not isinstance(base, dict):
        raise ConfigError(f"{where}: the base config must be a mapping, got {base!r}")
    if label is not None and not isinstance(label, str):
        raise ConfigError(f"{where}: the label must be a string, got {label!r}")
    return Grid(strategy=strategy, axes={str(k): list(v) for k, v in axes.items()}, base=dict(base or {}),
                label=label or "")


def set_dotted(config: dict[str, Any], key: str, value: Any) -> dict[str, Any]:
    """A copy of `config` with `value` at dotted `key`; digits index into lists (`with.0.config.n`)."""
    result = copy.deepcopy(config)
    parts = key.split(".")
    node: Any = result
    for depth, part in enumerate(parts):
        last = depth == len(parts) - 1
        if isinstance(node, list):
            if not part.isdigit() or int(part) >= len(node):
                raise ConfigError(f"sweep: grid key {key!r}: {part!r} is not an index of a list of {len(node)}")
            index: Any = int(part)
        elif isinstance(node, dict):
            index = part
            if not last and index not in node:
                node[index] = {}
        else:
            raise ConfigError(f"sweep: grid key {key!r}: {'.'.join(parts[:depth])!r} is {node!r}, not a mapping")
        if last:
            node[index] = copy.deepcopy(value)
        else:
            node = node[index]
    return result


def knob_target(key: str) -> tuple[str, str] | None:
    """(profile name, knob) of a `mock.<knob>` or `summarizer.<knob>` grid key; None for a strategy key."""
    prefix, dot, knob = key.partition(".")
    if prefix not in KNOB_PREFIXES:
        return None
    if not dot or not knob or "." in knob:
        raise ConfigError(f"sweep: grid key {key!r}: expected {prefix}.<knob>, one knob of the "
                          f"{KNOB_PREFIXES[prefix][1]}")
    return KNOB_PREFIXES[prefix][0], knob


def check_knob_axis(key: str, values: list[Any]) -> None:
    """A knob axis names a knob of its mock and each value is one that knob takes (its dataclass's
    own type and range checks), with close matches for a mistyped name."""
    from dataclasses import fields

    from harness.models.mock.agents.common import Knobs, build_knobs
    from harness.models.mock.summarizer import SummarizerKnobs, build_summarizer_knobs

    profile, knob = knob_target(key) or ("", "")
    cls, build = (Knobs, build_knobs) if profile == "main" else (SummarizerKnobs, build_summarizer_knobs)
    known = [f.name for f in fields(cls)]
    prefix = key.split(".")[0]
    if knob not in known:
        raise ConfigError(f"sweep: grid key {key!r}: {knob!r} is not a knob of the {KNOB_PREFIXES[prefix][1]}"
                          f"{did_you_mean(knob, known)}; its knobs: {', '.join(known)}")
    for index, value in enumerate(values):
        try:
            build({knob: value}, f"{prefix} knobs")
        except ConfigError as exc:
            shown = value_text(shown_value(key, values, index))
            raise ConfigError(f"sweep: grid key {key!r} = {shown}: {exc}") from exc


def shown_value(key: str, values: list[Any], index: int) -> Any:
    """The value at `index` of axis `key` as labels, sweep.json and tuning.csv show it: a secret (a
    secret-named key's, or one inside the value) as `<redacted-N>`, N its 1-based place on the axis,
    so the points stay apart without holding the value."""
    value = values[index]
    if is_secret_path(key) or redact(value) != value:
        return f"<redacted-{index + 1}>"
    return value


def shown_axes(grid: Grid) -> dict[str, list[Any]]:
    """The grid's axes with every secret value replaced (`shown_value`)."""
    return {key: [shown_value(key, values, i) for i in range(len(values))] for key, values in grid.axes.items()}


def value_order(value: Any) -> tuple[int, Any]:
    """Sort key of a grid value: null, booleans, numbers (numerically: 3, 5, 10, 20), strings, then
    lists and mappings by their JSON (points sorted as text put 10 before 3)."""
    if value is None:
        return (0, 0)
    if isinstance(value, bool):
        return (1, value)
    if isinstance(value, (int, float)):
        return (2, value)
    if isinstance(value, str):
        return (3, value)
    return (4, json.dumps(value, sort_keys=True, default=str))


def axis_order(key: str, values: list[Any]) -> list[int]:
    """The indexes of an axis's values in sorted order (`value_order`); an axis holding a secret keeps
    its given order, since sorting by the values would tell the secrets' order."""
    if any(shown_value(key, values, index) != values[index] for index in range(len(values))):
        return list(range(len(values)))
    return sorted(range(len(values)), key=lambda index: value_order(values[index]))


@dataclass(frozen=True)
class Point:
    """One grid point: its values as shown (secrets redacted), its labelled strategy, and the mock
    knobs it sets per profile name (`{"main": {"narrate": 0.2}}`; empty without knob axes)."""

    params: dict[str, Any]
    spec: StrategySpec
    knobs: dict[str, dict[str, Any]]
    profile_fields: dict[str, dict[str, Any]] = field(default_factory=dict)


def grid_points(grid: Grid) -> list[Point]:
    """Every combination of the grid's values, lexicographically by value over the axes in grid order."""
    points = []
    shown = shown_axes(grid)
    orders = [axis_order(key, values) for key, values in grid.axes.items()]
    for indexes in itertools.product(*orders):
        config, knobs, fields = grid.base, {}, {}
        for (key, values), index in zip(grid.axes.items(), indexes):
            target = knob_target(key)
            if key == POLICY_KEY:
                fields = {name: {POLICY_KEY: copy.deepcopy(values[index])} for name in POLICY_PROFILES}
            elif target:
                knobs.setdefault(target[0], {})[target[1]] = copy.deepcopy(values[index])
            else:
                config = set_dotted(config, key, values[index])
        params = {key: shown[key][index] for key, index in zip(grid.axes, indexes)}
        label = f"{grid.prefix}[{','.join(f'{k}={value_text(v)}' for k, v in params.items())}]"
        points.append(Point(params, StrategySpec(name=grid.strategy, config=config, label=label), knobs, fields))
    return points


def validate_grid(grid: Grid) -> list[Point]:
    """Build the base, then each key alone, then every point: errors name the key or point at fault."""
    build_strategy(StrategySpec(name=grid.strategy, config=grid.base, label=f"{grid.prefix} (base config)"))
    for key, values in grid.axes.items():
        if key == POLICY_KEY:
            check_policy_axis(values)
            continue
        if knob_target(key):
            check_knob_axis(key, values)
            continue
        for index, value in enumerate(values):
            try:
                build_strategy(StrategySpec(name=grid.strategy, config=set_dotted(grid.base, key, value),
                                            label=grid.prefix))
            except ConfigError as exc:
                shown = shown_value(key, values, index)
                raise ConfigError(f"sweep: grid key {key!r} = {value_text(shown)}: {exc}") from exc
    points = grid_points(grid)
    for point in points:
        build_strategy(point.spec)
    return points


def check_policy_axis(values: list[Any]) -> None:
    """Each value of the `cache_policy` axis is a policy (harness.models.cache_policy.parse_policy)."""
    from harness.models.cache_policy import parse_policy

    for value in values:
        parse_policy(value, f"sweep: grid key {POLICY_KEY!r} = {value_text(value)}")


def point_profiles(points: list[Point]) -> dict[str, dict[str, dict[str, Any]]]:
    """label -> the profile fields of every point that sets any (runner.Matrix.strategy_profiles)."""
    return {point.spec.display: point.profile_fields for point in points if point.profile_fields}


def point_knobs(points: list[Point]) -> dict[str, dict[str, dict[str, Any]]]:
    """label -> the mock knobs per profile of every point that sets any (runner.Matrix.strategy_knobs)."""
    return {point.spec.display: point.knobs for point in points if point.knobs}


def sweep_file_text(grid: Grid, points: list[Point]) -> str:
    """sweep.json: the grid and its points' labels and values (secrets redacted), which marks a results
    directory as a sweep's."""
    data = {"strategy": grid.strategy, "base": redact(grid.base), "grid": shown_axes(grid),
            "points": [{"label": point.spec.display, "params": point.params} for point in points]}
    return json.dumps(data, indent=2, default=str) + "\n"
