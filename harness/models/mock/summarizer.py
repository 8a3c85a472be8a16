"""The mock summarizer (models `mock/summarizer...`): summarizes only what its request shows.

Its request holds previews of events in OpenHands' `<EVENT>` blocks (what OpenHands' condenser and
ctxbench's summarizing strategies send, strategies.summaries), or it is the conversation itself
followed by one instruction (Inspect AI's CompactionSummary; litellm's compact_20260112, whose instruction
ends the last user turn and asks for the summary inside a `<summary></summary>` block, which the reply then
is, as a model following it writes it), or it is one message embedding the conversation as LangChain's
SummarizationMiddleware sends it (each message to summarize a `<message type="...">` element: langchain_core's XML
rendering), read back into that conversation, or the conversation between a summarizer's instructions (the system
prompt) and a closing request to summarize it (Strands Agents' conversation managers), where the instructions are
not part of what it reads, or Google ADK's one message rendering the events into its prompt, read back as the
conversation it shows (harness.models.mock.adk_prompt). When a family agent recognizes a task statement in them,
the summary is that agent's `notes()` over the previews: the task and the facts it can see.
Otherwise, not knowing the task, it keeps what the agent itself said (assistant previews),
the body of any earlier summary of its own, and the shown lines that name an identifier
(a word with a digit, such as a record code) the agent named: what it was looking for. Whatever a preview cut off is
missing from the summary, as with a real model. It sees nothing but the request's messages.

Its own knobs (`SummarizerKnobs`, the summary profile's `mock.knobs`) make it as fallible as the
agent: each fact it is shown makes it into a summary with chance
`summary_completeness`, drawn per run seed and fact (`Writer`).
"""
from __future__ import annotations

import re
from xml.sax.saxutils import unescape
from dataclasses import dataclass
from typing import Any

from harness.core.config import build_dataclass, require
from harness.core.tokens import message_text
from harness.models.mock import adk_prompt
from harness.models.mock.agents import AGENTS
from harness.models.mock.agents.common import Knobs, Visible, Writer, text_reply
from harness.models.mock.agents.memo import Readings

SUMMARIZER_PREFIX = "summarizer"
HEADER = "USER_CONTEXT and CURRENT_STATE (from the events shown):\n"
# OpenHands' summarizing prompt (openhands-sdk condenser/prompts/summarizing_events.j2): one
# `<EVENT>\nstr(event)\n</EVENT>` block per event, str(event) opening with "Class (source)".
OPENHANDS_EVENT = re.compile(r"<EVENT>\n(\w+) \((\w+)\)\n(.*?)\n</EVENT>", re.DOTALL)
EVENT_OPEN, EVENT_CLOSE = "<EVENT>\n", "\n</EVENT>"
EVENT_HEAD = re.compile(r"(\w+) \((\w+)\)\n")  # OPENHANDS_EVENT's header, matched right after EVENT_OPEN
OPENHANDS_ROLES = {"ActionEvent": "assistant", "ObservationEvent": "tool", "CondensationSummaryEvent": "summary"}
IDENTIFIER = re.compile(r"\b[A-Za-z][\w-]*\d[\w-]*\b")  # codes, ids, versioned names: words with a digit
# An instruction asking for the summary inside a summary block (Anthropic's compaction prompt, which litellm's
# compact_20260112 sends and reads the summary back out of: context_management/editors/compact.py).
SUMMARY_BLOCK = re.compile(r"<summary>\s*</summary>")
# A closing user turn that only asks for a summary of the conversation (Strands Agents' generate_summary and its
# summarization agent: strands/agent/conversation_manager/compression/context_compression.py,
# summarizing_conversation_manager.py): the request's system prompt is then the summarizer's instructions.
SUMMARIZE_REQUEST = re.compile(r"\W*(please\W+)?summari[sz]e\W+(this|the)\W+conversation\W*", re.IGNORECASE)
# LangChain's XML rendering of messages (langchain_core messages/utils.py get_buffer_string(format="xml")): a
# message element per message, its type human / ai / system / tool; an AI message with tool calls holds its text
# in <content> and each call as <tool_call id=".." name="..">arguments</tool_call>; texts escaped as XML.
LANGCHAIN_MESSAGE = re.compile(r'<message type="(\w+)">(.*?)</message>', re.DOTALL)
LANGCHAIN_CONTENT = re.compile(r"^  <content>(.*?)</content>$", re.DOTALL | re.MULTILINE)
LANGCHAIN_CALL = re.compile(r'^  <tool_call id="(.*?)" name="(.*?)">(.*?)</tool_call>$', re.DOTALL | re.MULTILINE)
LANGCHAIN_ROLES = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool"}


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
            for kind, source, body in _event_blocks(text)]


def _event_blocks(text: str) -> list[tuple[str, str, str]]:
    """`OPENHANDS_EVENT.findall(text)`, found with `str.find`: the pattern's lazy body tries the closing
    tag at every character of a ~30k-character request; this jumps from tag to tag. As the regex, a block
    whose header does not match, or that is never closed, is skipped and the scan resumes one character
    past its opening tag (the next match can only start at a later opening tag)."""
    blocks: list[tuple[str, str, str]] = []
    start = text.find(EVENT_OPEN)
    while start >= 0:
        head = EVENT_HEAD.match(text, start + len(EVENT_OPEN))
        end = text.find(EVENT_CLOSE, head.end()) if head else -1
        if end < 0:
            start = text.find(EVENT_OPEN, start + 1)
            continue
        blocks.append((head[1], head[2], text[head.end():end]))
        start = text.find(EVENT_OPEN, end + len(EVENT_CLOSE))
    return blocks


def _read_named_lines(body: str) -> tuple[tuple[str, frozenset[str]], ...]:
    """Each line of `body` that names an identifier, with the identifiers it names."""
    return tuple((line, frozenset(names)) for line in body.splitlines() if (names := IDENTIFIER.findall(line)))


def _read_said(body: str) -> tuple[frozenset[str], tuple[str, ...]]:
    """What an assistant preview says: the identifiers it names and its non-blank lines."""
    return frozenset(IDENTIFIER.findall(body)), tuple(line for line in body.splitlines() if line.strip())


# A preview's readings, by its text (pure functions of it, as the agent's memos): a tool result the agent
# fetched again, or an assistant step it repeated, is shown again in the next summary request and read once.
_named_lines = Readings(_read_named_lines)
_said = Readings(_read_said)


def _kept_without_task(previews: list[tuple[str, str]]) -> list[str]:
    """What the agent said, earlier summaries, and shown lines naming an identifier the agent named.
    The identifiers are those of each assistant preview together: none spans a line break, so they are
    the identifiers of the previews joined by line breaks."""
    wanted: set[str] = set()
    for role, body in previews:
        if role == "assistant":
            wanted |= _said[body][0]
    lines: list[str] = []
    for role, body in previews:
        if role == "assistant":
            lines.extend(_said[body][1])
        elif HEADER in body:
            lines.extend(line for line in body.split(HEADER, 1)[1].splitlines() if line.strip())
        else:
            lines.extend(line for line, names in _named_lines[body] if not wanted.isdisjoint(names))
    return list(dict.fromkeys(lines))


def _transcript_previews(messages: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """A request shaped as the conversation itself followed by one summary instruction (Inspect AI's
    CompactionSummary): each message before the instruction is read as a preview of its role."""
    return [(m.get("role", ""), m["content"]) for m in messages[:-1] if isinstance(m.get("content"), str)]


def _without_instructions(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The request without a leading system prompt that only instructs the summarizer: one closed by a request to
    summarize the conversation (Strands' shape). Other requests as they are."""
    if len(messages) > 2 and messages[0].get("role") == "system" and messages[-1].get("role") == "user" and \
            SUMMARIZE_REQUEST.fullmatch(message_text(messages[-1])):
        return messages[1:]
    return messages


def langchain_conversation(messages: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
    """The conversation a request of one message embeds as LangChain's message elements, as chat messages (a
    tool result answers the oldest call shown before it still unanswered, as a reader pairs them: the elements
    name no call of a result); None for another shape."""
    if len(messages) != 1:
        return None
    conversation: list[dict[str, Any]] = []
    unanswered: list[str] = []
    for kind, body in LANGCHAIN_MESSAGE.findall(message_text(messages[0])):
        role = LANGCHAIN_ROLES.get(kind, kind)
        calls = LANGCHAIN_CALL.findall(body) if role == "assistant" else []
        if calls:
            content = LANGCHAIN_CONTENT.search(body)
            unanswered = [unescape(call_id) for call_id, _, _ in calls]
            conversation.append({"role": role, "content": unescape(content[1]) if content else "", "tool_calls": [
                {"id": call_id, "type": "function", "function": {"name": unescape(name), "arguments": unescape(args)}}
                for call_id, (_, name, args) in zip(unanswered, calls)]})
        elif role == "tool":
            conversation.append({"role": role, "content": unescape(body),
                                 "tool_call_id": unanswered.pop(0) if unanswered else ""})
        else:
            conversation.append({"role": role, "content": unescape(body)})
    return conversation or None


def summarize(messages: list[dict[str, Any]], *, seed: int, knobs: SummarizerKnobs | None = None) -> dict[str, Any]:
    """The summary reply to one summary request: the facts shown, each kept as its knobs draw."""
    embedded = langchain_conversation(messages)
    if embedded is not None:  # read as a conversation followed by its instruction, as Inspect's request is
        messages = [*embedded, {"role": "user", "content": ""}]
    if not (messages and EVENT_OPEN in message_text(messages[0])):
        messages = adk_prompt.transcript(messages) or messages
    messages = _without_instructions(messages)
    visible = Visible(messages, [], seed=seed, knobs=Knobs(), writer=(knobs or SummarizerKnobs()).writer)
    asked_for_block = bool(messages) and SUMMARY_BLOCK.search(message_text(messages[-1])) is not None
    for agent in AGENTS:
        task = agent.find_task(visible)
        if task is not None:
            return _reply(HEADER + agent.notes(visible, task), asked_for_block)
    shown = _kept_without_task(openhands_previews("\n".join(visible.texts())) or _transcript_previews(messages))
    kept = [line for line in shown if visible.keeps(line)]
    return _reply(HEADER + ("\n".join(kept) if kept else "(nothing to keep in the events shown)"), asked_for_block)


def _reply(summary: str, in_block: bool) -> dict[str, Any]:
    """The summary, inside the summary block its instruction asked for, if it asked for one."""
    return text_reply(f"<summary>\n{summary}\n</summary>" if in_block else summary)
