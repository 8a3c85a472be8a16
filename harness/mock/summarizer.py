"""The mock summarizer (models `mock/summarizer...`): summarizes only what its request shows.

Its request holds previews of events in OpenHands' `<EVENT>` blocks (what OpenHands' condenser and
ctxbench's summarizing strategies send, strategies.summaries), or it is the conversation itself
followed by one instruction (Inspect AI's CompactionSummary). When a family agent recognizes a task statement in them,
the summary is that agent's `notes()` over the previews: the task and the facts it can see.
Otherwise, not knowing the task, it keeps what the agent itself said (assistant previews),
the body of any earlier summary of its own, and the shown lines that name an identifier
(a word with a digit, such as a record code) the agent named: what it was looking for. Whatever a preview cut off is
missing from the summary, as with a real model. It sees nothing but the request's messages.

Its own knobs (`SummarizerKnobs`, the summary profile's `mock.knobs`) make it as fallible as the
agent (issue 18 part 1): each fact it is shown makes it into a summary with chance
`summary_completeness`, drawn per run seed and fact (`Writer`).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from harness.config import build_dataclass, require
from harness.mock.agents import AGENTS
from harness.mock.agents.common import Knobs, Visible, Writer, text_reply
from harness.mock.agents.memo import Readings

SUMMARIZER_PREFIX = "summarizer"
HEADER = "USER_CONTEXT and CURRENT_STATE (from the events shown):\n"
# OpenHands' summarizing prompt (openhands-sdk condenser/prompts/summarizing_events.j2): one
# `<EVENT>\nstr(event)\n</EVENT>` block per event, str(event) opening with "Class (source)".
OPENHANDS_EVENT = re.compile(r"<EVENT>\n(\w+) \((\w+)\)\n(.*?)\n</EVENT>", re.DOTALL)
OPENHANDS_ROLES = {"ActionEvent": "assistant", "ObservationEvent": "tool", "CondensationSummaryEvent": "summary"}
IDENTIFIER = re.compile(r"\b[A-Za-z][\w-]*\d[\w-]*\b")  # codes, ids, versioned names: words with a digit


@dataclass(frozen=True)
class SummarizerKnobs:
    """Seeded imperfections of the mock summarizer (a mock profile's `knobs` when its model is `mock/summarizer`)."""

    # Chance each fact it is shown makes it into a summary. Ours: 1.0, on the footing of the agent's
    # notes_completeness default, so that a comparison of summarizing strategies with agent_reset
    # starts from equally careful writers; lower both to model careless ones.
    summary_completeness: float = 1.0

    def __post_init__(self) -> None:
        require(0.0 <= self.summary_completeness <= 1.0,
                f"summary_completeness must be in [0, 1], got {self.summary_completeness}")

    @property
    def writer(self) -> Writer:
        return Writer("summary", self.summary_completeness)


def build_summarizer_knobs(data: dict[str, Any] | None, where: str = "summarizer knobs") -> SummarizerKnobs:
    return build_dataclass(SummarizerKnobs, data or {}, where)


def is_summarizer(model: str) -> bool:
    """Whether a mock model name (without the `mock/` prefix) names the summarizer."""
    return model.split("/")[-1].startswith(SUMMARIZER_PREFIX)


def openhands_previews(text: str) -> list[tuple[str, str]]:
    """(role, shown text) of each event block of OpenHands' summarizing prompt."""
    return [(OPENHANDS_ROLES.get(kind, "assistant" if source == "agent" else source), body)
            for kind, source, body in OPENHANDS_EVENT.findall(text)]


def _read_named_lines(body: str) -> tuple[tuple[str, frozenset[str]], ...]:
    """Each line of `body` that names an identifier, with the identifiers it names."""
    return tuple((line, frozenset(names)) for line in body.splitlines() if (names := IDENTIFIER.findall(line)))


# A preview's named lines, by its text (a pure function of it, as the agent's memos): a tool result the
# agent fetched again is shown again in the next summary request, and each line is scanned once.
_named_lines = Readings(_read_named_lines)


def _kept_without_task(previews: list[tuple[str, str]]) -> list[str]:
    """What the agent said, earlier summaries, and shown lines naming an identifier the agent named."""
    said = "\n".join(body for role, body in previews if role == "assistant")
    wanted = set(IDENTIFIER.findall(said))
    lines: list[str] = []
    for role, body in previews:
        if role == "assistant":
            lines.extend(line for line in body.splitlines() if line.strip())
        elif HEADER in body:
            lines.extend(line for line in body.split(HEADER, 1)[1].splitlines() if line.strip())
        else:
            lines.extend(line for line, names in _named_lines[body] if not wanted.isdisjoint(names))
    return list(dict.fromkeys(lines))

def _transcript_previews(messages: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """A request shaped as the conversation itself followed by one summary instruction (Inspect AI's
    CompactionSummary): each message before the instruction is read as a preview of its role."""
    return [(m.get("role", ""), m["content"]) for m in messages[:-1] if isinstance(m.get("content"), str)]


def summarize(messages: list[dict[str, Any]], *, seed: int, knobs: SummarizerKnobs | None = None) -> dict[str, Any]:
    """The summary reply to one summary request: the facts shown, each kept as its knobs draw."""
    visible = Visible(messages, [], seed=seed, knobs=Knobs(), writer=(knobs or SummarizerKnobs()).writer)
    for agent in AGENTS:
        task = agent.find_task(visible)
        if task is not None:
            return text_reply(HEADER + agent.notes(visible, task))
    shown = _kept_without_task(openhands_previews("\n".join(visible.texts())) or _transcript_previews(messages))
    kept = [line for line in shown if visible.keeps(line)]
    return text_reply(HEADER + ("\n".join(kept) if kept else "(nothing to keep in the events shown)"))
