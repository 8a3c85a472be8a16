"""Claude Code session logs: `~/.claude/projects/<project>/<sessionId>.jsonl`, one JSON entry per line,
read line by line (real files run to tens of MB; nothing holds the whole text). A project directory
holds the sessions and, in `<sessionId>/subagents/agent-<agentId>.jsonl`, their subagents' threads.

What is read (harness.traces.claude_code_threads rebuilds the threads from the entries' links):
* the main thread as the model saw it: rewound and abandoned branches are left out; a compaction
  (`system` entry, subtype `compact_boundary`, then the `isCompactSummary` user entry holding the
  summary) is crossed, the earlier messages kept, and the summary's index recorded in `resets` as
  "compaction": the recorded agent's own context reset;
* `assistant` entries: one streamed response is written as several entries with the same `message.id`
  (one content block each, the same or growing usage): they become ONE assistant message (tool results
  written between them follow it), with the usage of the last entry. Text blocks join with newlines;
  `tool_use` blocks become tool calls (`input` as JSON arguments); `thinking` blocks are not content
  (as in the anthropic reader: the replay counts none of them, so where the recorded provider kept
  earlier turns' thinking in the context, the replay's input undercounts it); other blocks become
  `[<type> block]`. Entries Claude Code made up itself (model `<synthetic>`, `isApiErrorMessage`: an
  API error or an interruption shown as a reply) are no model response: skipped;
* `user` entries: text (a string or text blocks) -> a user message (compaction summaries, meta and
  local-command messages included: Claude Code sends them); each `tool_result` block -> a `tool`
  message before it (text parts joined, an image `[image block]`). `is_error` is not kept, as in the
  anthropic reader: Claude Code's error results say so in their text (`<tool_use_error>`, `Exit code 1`).
* usage per response: input = input_tokens + cache_read_input_tokens + cache_creation_input_tokens,
  cached = cache reads, cache writes = cache creation, hour-long writes from
  `cache_creation.ephemeral_1h_input_tokens`; `recorded_input_tokens` their sum; `model` the model of
  the most responses; `times` each message's `timestamp` (a merged response: its first entry's).

Skipped, as not sent to the model: `summary`, `file-history-snapshot`, `queue-operation`, `progress`
(kept only as links), `system` entries (a compaction boundary marks the reset), `attachment` entries
(written only for some hook context), titles, tags, modes and other metadata entries. Not recorded at
all: the system prompt and the tool schemas, so a replay's input undercounts each request by them.

Subagents (sidechains): the main thread only by default. `include_sidechains` adds each subagent's
thread as its own trace `<sessionId>/<agentId>` (entries without an agentId, as older versions wrote
them inside the session file: `<sessionId>/<uuid of the subagent's first entry>`). A file that is
wholly sidechain (a subagent's own file) holds no trace without it (NoTrace: skipped in a directory).
The compaction's own call (`agent-acompact-*.jsonl`: the main thread's messages, linked to in the session
file, and the summary prompt; its answer the summary) is no subagent: left out.
Trace id: the `sessionId` (the file's stem when absent). Refused (TraceError naming the file and line):
a line that is not a JSON object, a message without content, a malformed content block, a tool
result answering no earlier tool use, a `parentUuid` naming no entry of the file, a session with no
assistant response (NoTrace).
"""
from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any, BinaryIO

from harness.core.errors import ConfigError
from harness.core.user_files import open_regular
from harness.traces import Message, NoTrace, Trace, TraceError, check_trace
from harness.traces.anthropic_messages import assistant_message, recorded_usage, user_messages
from harness.traces.claude_code_threads import (Entry, Thread, index_session, is_compaction_call, parse_line,
                                                threads)
from harness.traces.records import Fail

FORMAT = "claude-code"
SYNTHETIC_MODEL = "<synthetic>"
# Claude Code's entry types (its session storage): a file's first line is one of them.
ENTRY_TYPES = frozenset({
    "user", "assistant", "system", "attachment", "progress", "summary", "file-history-snapshot",
    "queue-operation", "custom-title", "ai-title", "tag", "agent-name", "agent-color", "agent-setting", "mode",
    "permission-mode", "last-prompt", "worktree-state", "pr-link", "attribution-snapshot", "content-replacement",
    "task-summary"})


def detect(path: Path, head: Any) -> bool:
    """A .jsonl file whose first entry has one of Claude Code's entry types and its marks: `sessionId` or
    `parentUuid` (thread and most metadata entries), `leafUuid` (a summary), `messageId` with `snapshot`
    (a file-history snapshot)."""
    return (path.suffix == ".jsonl" and isinstance(head, dict) and head.get("type") in ENTRY_TYPES
            and ("sessionId" in head or "parentUuid" in head or "leafUuid" in head
                 or ("messageId" in head and "snapshot" in head)))


def read(path: Path, *, include_sidechains: bool = False) -> list[Trace]:
    """The session's main thread (and its subagents' threads with `include_sidechains`) as traces."""
    path = Path(path)
    session = index_session(path)
    if not any(entry.kind in ("user", "assistant") for entry in session.entries):
        raise NoTrace(path, "holds no conversation (only Claude Code's metadata entries)")
    found = threads(session, include_sidechains)
    if not found and all(is_compaction_call(entry) for entry in session.entries):
        raise NoTrace(path, "holds the compaction's own call (agentId acompact-...), no subagent's thread: "
                            "its request is the main thread's, replayed in the session's trace")
    if not found:
        raise NoTrace(path, "is a subagent's thread (every entry isSidechain): --include-sidechains reads it")
    name = session.session_id or path.stem
    del session  # the threads' entries are all the second pass needs
    traces = []
    try:
        with open_regular(path) as handle:
            for thread in found:
                trace_id = name if thread.agent is None else f"{name}/{thread.agent}"
                trace = _Converter(path, handle, trace_id).convert(thread)
                if any(m["role"] == "assistant" for m in trace.messages):
                    traces.append(check_trace(trace))
                elif thread.agent is None:
                    raise NoTrace(path, "holds no assistant response (an empty session)", trace=trace_id)
    except ConfigError as exc:
        if isinstance(exc, TraceError):
            raise
        raise TraceError(path, str(exc).removeprefix(f"{path}: ")) from None
    return traces


class _Converter:
    """One thread's entries, read again one by one, as OpenAI messages with their usage, times and resets."""

    def __init__(self, path: Path, handle: BinaryIO, trace_id: str):
        self.path, self.handle = path, handle
        self.trace = Trace(trace_id=trace_id, source_format=FORMAT, path=str(path), messages=[])
        self.names: dict[str, str] = {}  # tool_use id -> tool name
        self.response: tuple[str, int, list[Any]] | None = None  # the open response: message.id, index, blocks
        self.models: Counter[str] = Counter()  # responses per recorded model
        self.output_at_start: dict[int, int | None] = {}  # each response's output count in its first entry
        self.reset = False  # a compaction boundary passed: the next message is the first one kept

    def convert(self, thread: Thread) -> Trace:
        for entry in thread.entries:
            if entry.boundary:
                self.reset = True
            elif entry.kind in ("user", "assistant"):
                record = self.load(entry)
                (self.assistant if entry.kind == "assistant" else self.user)(entry, record)
        trace = self.trace
        recorded = [u["input_tokens"] for u in trace.usage.values() if isinstance(u.get("input_tokens"), int)]
        trace.recorded_input_tokens = sum(recorded) if recorded else None
        trace.model = self.models.most_common(1)[0][0] if self.models else None
        return trace

    def load(self, entry: Entry) -> dict[str, Any]:
        """The entry's line, read again; refused if the file changed under it since the first pass."""
        self.handle.seek(entry.offset)
        record = parse_line(self.handle.readline(), self.path, entry.line)
        if (record.get("uuid") or None) != entry.uuid or record.get("type") != entry.kind:
            raise TraceError(self.path, "the file changed while it was read", line=entry.line)
        return record

    def fail(self, entry: Entry) -> Fail:
        return lambda problem: TraceError(self.path, problem, trace=self.trace.trace_id, line=entry.line)

    def add(self, entry: Entry, message: Message) -> int:
        index = len(self.trace.messages)
        if self.reset and index:
            self.trace.resets[index] = "compaction"
        self.reset = False
        if entry.time is not None:
            self.trace.times[index] = entry.time
        self.trace.messages.append(message)
        return index

    def assistant(self, entry: Entry, record: dict[str, Any]) -> None:
        message = record["message"]
        if message.get("model") == SYNTHETIC_MODEL or record.get("isApiErrorMessage"):
            return
        if isinstance(record.get("version"), str):  # the latest wins: a resumed session may run a newer Claude Code
            self.trace.agent_version = record["version"]
        content = message["content"]
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
        response = self.response
        if response and entry.message_id == response[0] and self.only_tool_results_after(response[1]):
            index, blocks = response[1], response[2] + blocks
            self.trace.messages[index] = assistant_message(blocks, self.names, self.fail(entry))
        else:
            index = self.add(entry, assistant_message(blocks, self.names, self.fail(entry)))
            if isinstance(message.get("model"), str):
                self.models[message["model"]] += 1
        self.response = (entry.message_id, index, blocks) if entry.message_id else None
        usage = recorded_usage(message.get("usage"))
        if usage:
            # A later entry of the response holds the same or grown usage. Claude Code logs each content block as
            # it completes, with the usage known then: the input and cache counts are final from the stream's
            # start, the output count only once the stream has ended. A response whose output never grew past
            # its first entry's, with no `stop_reason`, was logged before its end: its output is not recorded (None), not
            # its start count (on recorded 2.1.3x sessions, about half of the main thread's responses, every subagent's).
            start = self.output_at_start.setdefault(index, usage["output_tokens"])
            ended = message.get("stop_reason") is not None  # logged after the stream's end (versions 1.0.x)
            if not ended and usage["output_tokens"] is not None and start is not None \
                    and usage["output_tokens"] <= start:
                usage["output_tokens"] = None
            self.trace.usage[index] = usage

    def only_tool_results_after(self, index: int) -> bool:
        """Whether only tool results came after message `index`: a response's later entries still join it."""
        return all(m["role"] == "tool" for m in self.trace.messages[index + 1:])

    def user(self, entry: Entry, record: dict[str, Any]) -> None:
        for message in user_messages(record["message"]["content"], self.names, self.fail(entry)):
            self.add(entry, message)
