"""The shared Task / Environment / Tool interface.

A task family is one module exposing `FAMILY`, a `Params` dataclass (its scale knobs, with
range checks) and `build(params, seed) -> Environment`. The environment simulates every
tool in memory and checks success from its own final state or the submitted answer.
"""
from __future__ import annotations

import json
from abc import ABC, abstractmethod
from copy import deepcopy
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, ClassVar

from harness.core.config import require


DEFAULT_TOOL_S = (0.5, 2.0)  # a file read, a note written, a lookup: about a second (ours)


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    parameters: dict[str, Any]
    # Whether a call changes the environment's state (writes, submits, edits): calls repeated after a
    # condensation are counted as re-executed (OpenHands #10508). Never sent to the model.
    changes_state: bool = False

    @cached_property
    def argument_rules(self) -> tuple[tuple[str, ...], dict[str, type | tuple[type, ...] | None]]:
        """(required names, each property's Python type or None) for `require_args`, read once per spec: a spec is
        fixed, and every call was checked against it afresh (ours)."""
        properties = self.parameters.get("properties", {})
        return (tuple(self.parameters.get("required", [])),
                {name: _KINDS.get(schema.get("type", "")) for name, schema in properties.items()})

    def schema(self) -> dict[str, Any]:
        """The OpenAI function-tool schema, as litellm expects it."""
        return {"type": "function", "function": {"name": self.name, "description": self.description,
                                                  "parameters": self.parameters}}


@dataclass
class ToolCall:
    id: str
    name: str
    arguments: str
    args: dict[str, Any] | None = None
    parse_error: str | None = None

    @classmethod
    def from_message(cls, call: dict[str, Any]) -> "ToolCall":
        function = call.get("function") or {}
        raw = function.get("arguments") or ""
        parsed: dict[str, Any] | None = None
        error = None
        try:
            value = json.loads(raw) if raw.strip() else {}
            if isinstance(value, dict):
                parsed = value
            else:
                error = f"arguments must be a JSON object, got {type(value).__name__}"
        except json.JSONDecodeError as exc:
            error = f"arguments are not valid JSON ({exc.msg} at position {exc.pos})"
        return cls(id=call.get("id") or "", name=function.get("name") or "", arguments=raw, args=parsed,
                   parse_error=error)


@dataclass
class ToolResult:
    content: str
    is_error: bool = False
    payload: dict[str, Any] | None = None  # a typed observation (e.g. CondenseObservation), logged with the message


@dataclass
class Score:
    success: bool
    score: float
    detail: dict[str, Any] = field(default_factory=dict)


class Knobs:
    """Base of a family's `Params`: every knob has a [low, high] range in `BOUNDS`, checked before generation.

    A row is validated by generating its instance, so an unbounded size knob (`filler_lines: 1000000000`)
    would hang validation or exhaust memory. The bounds keep the largest instance to a few
    seconds and a few hundred MB on a 2-core, 24 GiB machine (measured: docs/reliability.md); a family adds
    rules that tie knobs together (a total size) in its own `__post_init__`, after `super().__post_init__()`.
    """

    BOUNDS: ClassVar[dict[str, tuple[int, int]]] = {}

    def __post_init__(self) -> None:
        for name, (low, high) in self.BOUNDS.items():
            value = getattr(self, name)
            require(low <= value <= high, f"{name} must be in [{low}, {high}], got {value}")


def tool_error(message: str) -> ToolResult:
    return ToolResult(content=f"Error: {message}", is_error=True)


_KINDS: dict[str, type | tuple[type, ...]] = {"string": str, "integer": int, "number": (int, float), "boolean": bool}


def require_args(call: ToolCall, spec: ToolSpec) -> ToolResult | None:
    """Check a call's arguments against its spec's required keys and basic types."""
    if call.parse_error:
        return tool_error(f"{call.name}: {call.parse_error}. Call it again with a JSON object of arguments.")
    assert call.args is not None
    required, kinds = spec.argument_rules
    for name in required:
        if name not in call.args:
            return tool_error(f"{call.name}: missing required argument {name!r}")
    unknown = call.args.keys() - kinds.keys()
    if unknown:
        return tool_error(f"{call.name}: unknown argument(s) {', '.join(sorted(unknown))}")
    for name, value in call.args.items():
        expected = kinds[name]
        if expected is not None and (not isinstance(value, expected) or
                                     (expected is int and isinstance(value, bool))):
            return tool_error(f"{call.name}: argument {name!r} must be of type "
                              f"{spec.parameters['properties'][name]['type']}")
    return None


class Environment(ABC):
    """One task instance's simulated world."""

    family: str = ""
    system_prompt: str = ""
    # True when a deep copy of a freshly built instance is as good as building it again (plain
    # data only: no open files, threads or outside state). Such instances are generated once
    # per process and copied for each run (tasks.suites.TaskRow.build).
    copyable: bool = False
    # Attributes made when the instance is generated and never changed by a run: the copies made
    # for runs share them instead of copying them again (~2% of the default suite's CPU).
    # Everything else (what a run changes) is deep-copied.
    generated: tuple[str, ...] = ()
    # Simulated seconds a call of each tool takes, [low, high] (harness.core.clock draws in it); a family
    # names its slow and fast tools, every other tool (strategies' too) takes DEFAULT_TOOL_S. Ours.
    tool_seconds: dict[str, tuple[float, float]] = {}
    # Simulated seconds before each later user message arrives (a user replying takes minutes). Ours.
    user_delay_s: tuple[float, float] = (60.0, 600.0)

    def __init__(self) -> None:
        self.submitted = False
        self.answer: Any = None

    def __deepcopy__(self, memo: dict[int, Any]) -> "Environment":
        duplicate = memo[id(self)] = self.__class__.__new__(self.__class__)
        for name, value in vars(self).items():
            setattr(duplicate, name, value if name in self.generated else deepcopy(value, memo))
        return duplicate

    @abstractmethod
    def initial_user_messages(self) -> list[str]: ...

    @abstractmethod
    def tool_specs(self) -> list[ToolSpec]: ...

    @abstractmethod
    def run_tool(self, call: ToolCall) -> ToolResult:
        """Run a call whose name is one of tool_specs() and whose arguments passed validation."""

    @abstractmethod
    def score(self) -> Score: ...

    def progress(self) -> int:
        """A monotone count of the task's milestones reached so far (hops resolved, items submitted, edits
        applied, questions answered...), read from this environment's state: the runner logs each change as
        a `progress` event, so condensations repeating with no milestone between them show as a loop.
        The model never sees it. Here: whether the answer is submitted."""
        return int(self.submitted)

    def user_messages_due(self, requests_done: int) -> list[str]:
        """Genuine user messages that arrive before request number `requests_done` (0-based)."""
        return []

    def has_pending_user_messages(self) -> bool:
        return False

    def tool_seconds_range(self, name: str) -> tuple[float, float]:
        """[low, high] simulated seconds of a call of tool `name` (this family's table, else the default)."""
        return self.tool_seconds.get(name, DEFAULT_TOOL_S)

    def execute(self, call: ToolCall) -> ToolResult:
        specs = self._specs_by_name()
        spec = specs.get(call.name)
        if spec is None:
            return tool_error(f"unknown tool {call.name!r}; available tools: {', '.join(sorted(specs))}")
        problem = require_args(call, spec)
        if problem is not None:
            return problem
        return self.run_tool(call)

    def _specs_by_name(self) -> dict[str, ToolSpec]:
        """`tool_specs()` by name, made at this instance's first call: its tools are fixed (the runner sends their
        schemas once per run), and making them again for every call was ~1% of a run's CPU."""
        specs = self.__dict__.get("_tool_specs_by_name")
        if specs is None:
            specs = self._tool_specs_by_name = {spec.name: spec for spec in self.tool_specs()}
        return specs
