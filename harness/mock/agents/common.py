"""What every simulated agent shares: a reading of the visible context and seeded knobs."""
from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import Any

from harness.config import build_dataclass, require
from harness.mock.agents.memo import arguments
from harness.tokens import stable_hash

@dataclass(frozen=True)
class Knobs:
    """Seeded imperfections of the simulated agent (a careless agent is a set of knobs)."""

    narrate: float = 0.5  # chance it restates a fact it found in its reply text
    reread_budget: int = 2  # times it fetches a lost or unreadable fact again before giving up
    reset_stage: float | None = 0.8  # warning stage at which it saves notes and condenses (None: never)
    notes_completeness: float = 1.0  # chance each fact it holds makes it into its notes before a reset

    def __post_init__(self) -> None:
        require(self.reset_stage is None or 0.0 < self.reset_stage < 1.0,
                f"reset_stage must be in (0, 1) or null, got {self.reset_stage}")
        require(0.0 <= self.notes_completeness <= 1.0,
                f"notes_completeness must be in [0, 1], got {self.notes_completeness}")
        require(0.0 <= self.narrate <= 1.0, f"narrate must be in [0, 1], got {self.narrate}")
        require(self.reread_budget >= 0, f"reread_budget must be 0 or more, got {self.reread_budget}")


def build_knobs(data: dict[str, Any] | None) -> Knobs:
    return build_dataclass(Knobs, data or {}, "mock knobs")


@dataclass
class Exchange:
    """One tool call the agent can still see, with its result if that is visible too."""

    call_id: str
    name: str
    args: dict[str, Any]
    result: str | None
    position: int  # index of the assistant message that made the call


class Visible:
    """The request as the agent sees it: nothing more."""

    def __init__(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *, seed: int, knobs: Knobs):
        self.messages = messages
        self.tool_names = {t.get("function", {}).get("name") for t in tools}
        self.seed = seed
        self.knobs = knobs
        self._texts: dict[tuple[str, ...], list[str]] = {}
        results = {m.get("tool_call_id"): _content(m) for m in messages if m.get("role") == "tool"}
        self.exchanges: list[Exchange] = []
        for position, message in enumerate(messages):
            for call in message.get("tool_calls") or ():
                function = call.get("function", {})
                self.exchanges.append(Exchange(call.get("id", ""), function.get("name", ""),
                                               arguments(function.get("arguments") or "{}"),
                                               results.get(call.get("id")), position))

    def texts(self, roles: tuple[str, ...] = ("system", "user", "assistant", "tool")) -> list[str]:
        """Contents of the messages with these roles, in order (shared between callers: read-only)."""
        found = self._texts.get(roles)
        if found is None:
            found = self._texts[roles] = [_content(m) for m in self.messages if m.get("role") in roles]
        return found

    def last_result(self) -> Exchange | None:
        """The exchange answered by the latest tool message, if the context ends with one."""
        if not self.messages or self.messages[-1].get("role") != "tool":
            return None
        call_id = self.messages[-1].get("tool_call_id")
        return next((e for e in reversed(self.exchanges) if e.call_id == call_id), None)

    def rng(self, *key: Any) -> random.Random:
        """A generator seeded by the run seed and a key of visible facts: same input, same choice."""
        return random.Random(stable_hash([self.seed, *map(str, key)]))

    def chance(self, probability: float, *key: Any) -> bool:
        return self.rng(*key).random() < probability

    def call(self, name: str, args: dict[str, Any], content: str = "") -> dict[str, Any]:
        """An assistant message with one tool call, its id derived from the visible context."""
        last = _content(self.messages[-1]) if self.messages else ""
        previous = self.exchanges[-1].call_id if self.exchanges else ""
        call_id = "call_" + stable_hash([self.seed, len(self.messages), previous, last[-200:], name, args])[:16]
        return {"role": "assistant", "content": content,
                "tool_calls": [{"id": call_id, "type": "function",
                                "function": {"name": name, "arguments": json.dumps(args, sort_keys=True)}}]}


def _content(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return "\n".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content or ""


def text_reply(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}
