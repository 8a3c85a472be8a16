"""Claude Code session files, first pass: one streamed read keeping a small record per thread entry (where
its line is, what it links to), and the threads as the model saw them, rebuilt from those links the way
Claude Code rebuilds a session it resumes (its `loadTranscriptFile`, `buildConversationChain` and
`recoverOrphanedParallelToolResults`, in the CLI's session storage):

* `progress` entries (hook and tool progress) are links, not messages: an entry whose `parentUuid`
  names one is linked to that entry's own parent, as Claude Code's loader bridges them;
* a thread's tip is its newest `user` / `assistant` leaf (the entries no other entry names as parent,
  each walked up to its nearest user / assistant entry; the later in the file on equal timestamps): a
  rewound or abandoned branch ends in an older leaf and is left out;
* from the tip, `parentUuid` back to the root. A `compact_boundary` system entry has no parent (Claude
  Code resumes from it); its `logicalParentUuid` continues the thread before the compaction. Claude
  Code does not write every entry it links to (attachments), so a logical parent missing from the file
  continues from the thread's last user / assistant entry before the boundary (ours);
* parallel tool calls stream as one assistant entry per `tool_use` (the same `message.id`), and each
  tool result's `parentUuid` names its own one (`sourceToolAssistantUUID`): the walk keeps one branch,
  so, as Claude Code does, the other entries of that response and their results are put back right
  after the response's last entry on the thread, sorted by timestamp.

A file whose `user` / `assistant` entries lack a `uuid` cannot be followed: its threads are its entries
in file order (ours). Errors (TraceError) name the file and the line.
"""
from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, BinaryIO, Iterator

from harness.core.errors import ConfigError
from harness.core.user_files import check_depth, open_regular
from harness.traces import TraceError

MESSAGES = ("user", "assistant")
THREAD_KINDS = frozenset({"user", "assistant", "system", "attachment"})  # what Claude Code links into threads
LINKS_ONLY = "progress"
COMPACTION_AGENT = "acompact"  # the agentId prefix of the compaction call's transcript


@dataclass(slots=True)
class Entry:
    """What the first pass keeps of one thread entry; the second reads its line again at `offset`."""

    line: int
    offset: int
    position: int  # among the file's thread entries
    kind: str  # user / assistant / system / attachment
    uuid: str | None
    parent: str | None
    logical_parent: str | None
    boundary: bool  # a compact_boundary system entry
    sidechain: bool
    agent: str | None
    message_id: str | None  # an assistant entry's message.id: the response it is part of
    answers: bool  # a user entry holding a tool_result
    time: float | None


@dataclass
class Session:
    """A session file's thread entries, in file order, and their links."""

    path: Path
    entries: list[Entry] = field(default_factory=list)
    by_uuid: dict[str, Entry] = field(default_factory=dict)
    bridges: dict[str, str | None] = field(default_factory=dict)  # progress uuid -> its parent
    session_id: str | None = None
    names: dict[str, str] = field(default_factory=dict)  # one str object per uuid: a parent shares its entry's

    def name(self, record: dict[str, Any], key: str, number: int) -> str | None:
        """A uuid field (a string or null), kept once however many entries name it; TraceError otherwise."""
        value = record.get(key)
        if not (value is None or isinstance(value, str)):
            raise TraceError(self.path, f"`{key}` must be a string or null, got {type(value).__name__}", line=number)
        return self.names.setdefault(value, value) if value else None

    @property
    def linked(self) -> bool:
        """Whether threads can follow parentUuid: every user / assistant entry has a uuid."""
        return all(e.uuid for e in self.entries if e.kind in MESSAGES)

    def parent_of(self, uuid: str | None) -> str | None:
        """A parent uuid with progress entries bridged (each names the entry before it)."""
        seen: set[str] = set()
        while uuid in self.bridges and uuid not in seen:
            seen.add(uuid)
            uuid = self.bridges[uuid]
        return uuid


@dataclass
class Thread:
    """One thread's entries in the order the model saw them; `agent` is None for the main thread."""

    agent: str | None
    entries: list[Entry]


def read_lines(handle: BinaryIO, path: Path) -> Iterator[tuple[int, int, dict[str, Any]]]:
    """(line number, byte offset, parsed object) of each non-blank line, streamed; TraceError naming the line."""
    offset = 0
    for number, raw in enumerate(handle, start=1):
        start, offset = offset, offset + len(raw)
        if raw.strip():
            yield number, start, parse_line(raw, path, number)


def parse_line(raw: bytes, path: Path, number: int) -> dict[str, Any]:
    """One line as a JSON object, or TraceError naming the line."""
    try:
        check_depth(raw, f"{path}, line {number}")
        record = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise TraceError(path, f"not UTF-8 text ({exc.reason} at byte {exc.start} of the line)", line=number) from None
    except json.JSONDecodeError as exc:
        raise TraceError(path, f"not JSON ({exc.msg}, column {exc.colno})", line=number) from None
    except ConfigError as exc:
        raise TraceError(path, str(exc).removeprefix(f"{path}, line {number}: "), line=number) from None
    if not isinstance(record, dict):
        raise TraceError(path, f"an entry is a JSON object, got {type(record).__name__}", line=number)
    return record


def index_session(path: Path) -> Session:
    """The first pass: every line parsed once, a small Entry kept per thread entry."""
    session = Session(path)
    try:
        with open_regular(path) as handle:
            for number, offset, record in read_lines(handle, path):
                _keep(session, record, number, offset)
    except ConfigError as exc:
        if isinstance(exc, TraceError):
            raise
        raise TraceError(path, str(exc).removeprefix(f"{path}: ")) from None
    session.names.clear()
    return session


def _keep(session: Session, record: dict[str, Any], number: int, offset: int) -> None:
    kind = record.get("type")
    if not isinstance(kind, str):
        raise TraceError(session.path, "an entry needs a `type`", line=number)
    if session.session_id is None and isinstance(record.get("sessionId"), str):
        session.session_id = record["sessionId"]
    uuid = session.name(record, "uuid", number)
    parent = session.name(record, "parentUuid", number)
    if kind == LINKS_ONLY and uuid:
        session.bridges[uuid] = parent
        return
    if kind not in THREAD_KINDS:
        return  # summaries, file-history snapshots, queue operations, titles, ...: not sent to the model
    message = record.get("message")
    if kind in MESSAGES:
        if not isinstance(message, dict):
            raise TraceError(session.path, f"a {kind} entry needs a `message` object", line=number)
        if not isinstance(message.get("content"), (str, list)):
            raise TraceError(session.path, f"a {kind} message needs content (a string or a list of blocks)",
                             line=number)
    content = message.get("content") if isinstance(message, dict) else None
    message_id = message.get("id") if kind == "assistant" and isinstance(message.get("id"), str) else None
    entry = Entry(
        line=number, offset=offset, position=len(session.entries), kind=kind, uuid=uuid, parent=parent,
        logical_parent=session.name(record, "logicalParentUuid", number),
        boundary=kind == "system" and record.get("subtype") == "compact_boundary",
        sidechain=record.get("isSidechain") is True,
        agent=record["agentId"] if isinstance(record.get("agentId"), str) else None,
        message_id=message_id,
        answers=kind == "user" and isinstance(content, list) and any(
            isinstance(block, dict) and block.get("type") == "tool_result" for block in content),
        time=_time(record.get("timestamp"), session.path, number))
    session.entries.append(entry)
    if uuid:
        session.by_uuid[uuid] = entry


def _time(value: Any, path: Path, number: int) -> float | None:
    """An ISO 8601 timestamp as Unix seconds (UTC when it names no zone); None when absent."""
    if value is None:
        return None
    try:
        moment = datetime.fromisoformat(value[:-1] + "+00:00" if value.endswith("Z") else value)
    except (TypeError, ValueError, AttributeError):
        raise TraceError(path, f"`timestamp` is not an ISO 8601 time: {value!r}", line=number) from None
    return (moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)).timestamp()


def threads(session: Session, include_sidechains: bool) -> list[Thread]:
    """The main thread (when the file has one), then, with `include_sidechains`, each subagent's thread
    (keyed by `agentId`, else by the uuid of its root entry), in the order their first entries come.
    The compaction's own call (agentId `acompact-...`: the main thread's messages, which its first entries
    link to in the session file, and the summary prompt) is no subagent: left out."""
    groups: dict[str | None, list[Entry]] = defaultdict(list)
    roots: dict[str, str] = {}
    for entry in session.entries:
        if not entry.sidechain:
            groups[None].append(entry)
        elif include_sidechains and not is_compaction_call(entry):
            groups[entry.agent or _root(session, entry, roots)].append(entry)
    return [Thread(agent, _thread(session, members)) for agent, members in groups.items()]


def is_compaction_call(entry: Entry) -> bool:
    """An entry of the compaction's own call (its agentId starts `acompact`)."""
    return (entry.agent or "").startswith(COMPACTION_AGENT)


def _root(session: Session, entry: Entry, roots: dict[str, str]) -> str:
    """The uuid of the first entry of the sidechain holding `entry`, walking its parents (memoized in `roots`)."""
    if not entry.uuid:
        return "sidechain"
    path: list[str] = []
    root: str | None = None
    current: Entry | None = entry
    while current is not None and current.sidechain and current.uuid and current.uuid not in path:
        if current.uuid in roots:
            root = roots[current.uuid]
            break
        path.append(current.uuid)
        parent = session.parent_of(current.parent)
        current = session.by_uuid.get(parent) if parent else None
    root = root or path[-1]
    for uuid in path:
        roots[uuid] = root
    return root


def _thread(session: Session, members: list[Entry]) -> list[Entry]:
    """A thread's entries as the model saw them (linked), or in file order when they cannot be linked."""
    if not session.linked:
        return members
    tip = _tip(session, members)
    if tip is None:
        return []
    chain = _walk(session, tip)
    return _recover_parallel(session, chain, members)


def _tip(session: Session, members: list[Entry]) -> Entry | None:
    """The newest user / assistant leaf of these entries (the later in the file on equal times)."""
    named = {session.parent_of(e.parent) for e in members}
    best: Entry | None = None
    for entry in members:
        if entry.uuid in named:
            continue
        leaf = _nearest_message(session, entry)
        if leaf is not None and (best is None or _when(leaf) >= _when(best)):
            best = leaf
    return best


def _nearest_message(session: Session, entry: Entry) -> Entry | None:
    seen: set[int] = set()
    current: Entry | None = entry
    while current is not None and current.position not in seen:
        if current.kind in MESSAGES:
            return current
        seen.add(current.position)
        parent = session.parent_of(current.parent)
        current = session.by_uuid.get(parent) if parent else None
    return None


def _walk(session: Session, tip: Entry) -> list[Entry]:
    """From the tip back to the root by parentUuid, across compaction boundaries; root first."""
    chain: list[Entry] = []
    seen: set[int] = set()
    current: Entry | None = tip
    while current is not None:
        if current.position in seen:
            raise TraceError(session.path, "parentUuid links loop back to this entry", line=current.line)
        seen.add(current.position)
        chain.append(current)
        parent = session.parent_of(current.parent)
        if parent is not None:
            following = session.by_uuid.get(parent)
            if following is None:
                raise TraceError(session.path, f"parentUuid {parent!r} names no entry of this file (a truncated or "
                                               "excerpted session: the thread's earlier messages are missing)",
                                 line=current.line)
            current = following
        elif current.boundary:
            current = _before_boundary(session, current, seen)
        else:
            current = None
    chain.reverse()
    return chain


def _before_boundary(session: Session, boundary: Entry, seen: set[int]) -> Entry | None:
    """What a compaction boundary continues: its logical parent, else the thread's last user / assistant
    entry before it in the file (Claude Code does not write every entry it links to); None at the start."""
    logical = session.parent_of(boundary.logical_parent)
    if logical in session.by_uuid:
        return session.by_uuid[logical]
    for position in range(boundary.position - 1, -1, -1):
        entry = session.entries[position]
        if (entry.kind in MESSAGES and entry.position not in seen and entry.sidechain == boundary.sidechain
                and entry.agent == boundary.agent):
            return entry
    return None


def _recover_parallel(session: Session, chain: list[Entry], members: list[Entry]) -> list[Entry]:
    """Put back the entries of a streamed response (same message.id) that the walk left off, and the tool
    results answering them, right after the response's last entry on the chain (by timestamp)."""
    on_chain = {e.position for e in chain}
    last_of: dict[str, Entry] = {}
    for entry in chain:
        if entry.kind == "assistant" and entry.message_id:
            last_of[entry.message_id] = entry
    if not last_of:
        return chain
    parts: dict[str, list[Entry]] = defaultdict(list)
    results: dict[str, list[Entry]] = defaultdict(list)  # assistant entry uuid -> tool-result entries naming it
    for entry in members:
        if entry.kind == "assistant" and entry.message_id in last_of:
            parts[entry.message_id].append(entry)
        elif entry.answers and entry.parent:
            results[session.parent_of(entry.parent) or ""].append(entry)
    inserts: dict[int, list[Entry]] = {}
    for message_id, anchor in last_of.items():
        group = parts[message_id]
        orphans = [e for e in group if e.position not in on_chain]
        answers = [r for e in group for r in results.get(e.uuid or "", []) if r.position not in on_chain]
        if orphans or answers:
            found = sorted(orphans, key=_when) + sorted(answers, key=_when)
            on_chain.update(e.position for e in found)
            inserts[anchor.position] = found
    if not inserts:
        return chain
    return [kept for entry in chain for kept in (entry, *inserts.get(entry.position, ()))]


def _when(entry: Entry) -> float:
    return entry.time if entry.time is not None else float("-inf")
