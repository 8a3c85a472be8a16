"""OpenAI Codex CLI session logs ("rollouts"): `~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<uuid>.jsonl`.

The format is Codex's own (openai/codex, codex-rs/protocol/src/protocol.rs `RolloutLine`): one JSON object a
line, `{timestamp, type, payload}`, with `type` one of `session_meta`, `response_item`, `compacted`,
`turn_context`, `event_msg`. A `response_item` payload is a Responses-API item (codex-rs/protocol/src/models.rs
`ResponseItem`). The file is read a line at a time. What each line becomes:

* `session_meta`: the trace id (`id`), and `base_instructions.text`, sent as the Responses API's `instructions`
  ("a system (or developer) message inserted into the model's context", OpenAI API reference) with every
  request: the first message, role system. Older sessions record none (the model's built-in prompt).
  `instructions` holds the user's AGENTS.md text, which Codex also records as a user message: not repeated.
* `response_item`, input items: a `user` message stays user (its `input_text` parts joined by newlines; an
  image becomes `[input_image part]`); a `developer` message becomes system, as the Responses API ranks it
  (as `openai` traces map `developer`); a `system`-role item is not sent by Codex and is skipped;
  `function_call_output` / `custom_tool_call_output` become tool messages answering their call.
* `response_item`, output items: one model response is the run of output items up to the next input item,
  one assistant message: `message` text (joined by newlines), `function_call` (arguments as recorded),
  `custom_tool_call` (arguments `{"input": ...}`), `local_shell_call` (tool `local_shell`, arguments the
  recorded `action`) as tool calls; `reasoning` is not content (the API drops earlier turns' reasoning) but
  still marks a response; `web_search_call` becomes the text `[web_search_call <action>]`.
  `ghost_snapshot` (Codex's undo snapshot) and unknown items are not sent to the model
  (codex-rs/core/src/context_manager/history.rs `for_prompt`): skipped.
* `event_msg` `token_count`: the usage of one sampling request (`info.last_token_usage`; `info.total_token_usage`
  is the running sum, `TokenUsageInfo::append_last_usage`). Codex writes it once per request and again,
  unchanged, at later points of a turn: an event whose totals repeat the previous event's is a repeat, and one
  with no input (`info` null, or the estimate Codex writes after a compaction) is no request. Codex 0.58 writes a
  request's event before its output items, later versions after them: the first event says which, and each
  request's usage goes to its own response. `input_tokens` includes the cached ones (OpenAI's usage), cached =
  `cached_input_tokens`, cache writes = `cache_write_input_tokens` when recorded (None otherwise: OpenAI reports
  none before GPT-5.6). A request that left no response (the compaction request) counts only in
  `recorded_input_tokens`.
* `compacted`: Codex's own compaction (codex-rs/core/src/compact.rs). The next request holds the instructions and
  `replacement_history` (newer Codex, and its remote compaction, whose encrypted `compaction` items become the
  placeholder `[compaction item]`); without one (older Codex) it held what `build_compacted_history` rebuilt:
  the session's initial context messages, the user's own messages, newest first up to 20,000 tokens (4 bytes a
  token; the one crossing the limit cut in the middle), then the summary `message` as a user message. Those
  messages follow, and `Trace.resets` marks the first as a "compaction": earlier messages are gone from the
  context. A replacement history's assistant items and tool items are skipped (OpenAI's compaction returns none).
* `turn_context`: its `model`; the trace's model is the most common one (the first on a tie).

Every message's time is its line's `timestamp`. Not replayed: tool outputs Codex truncated in its history
beyond the model's truncation policy (the log keeps them whole), `thread_rolled_back` (an undo of turns), and
the tool schemas (not logged).
"""
from __future__ import annotations

import json
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

from harness.traces import Message, Trace, TraceError, check_trace
from harness.traces.openai_chat import content_text
from harness.traces.records import jsonl_records

FORMAT = "codex"
LINE_TYPES = ("session_meta", "response_item", "compacted", "turn_context", "event_msg")
CALLS = ("function_call", "custom_tool_call", "local_shell_call")
OUTPUTS = ("function_call_output", "custom_tool_call_output")
COMPACTION_ITEMS = ("compaction", "compaction_summary")  # Codex reads both names (ResponseItem::Compaction)
CONTEXT_PREFIXES = ("<environment_context>", "<user_instructions>", "# agents.md instructions for")
KEPT_USER_TOKENS = 20_000  # compact.rs COMPACT_USER_MESSAGE_MAX_TOKENS
BYTES_PER_TOKEN = 4  # Codex's approx_token_count
NO_SUMMARY = "(no summary available)"  # what build_compacted_history sends for an empty summary


def detect(path: Path, head: Any) -> bool:
    """The first record is a rollout line: a `type` Codex writes and a `payload` object."""
    return isinstance(head, dict) and head.get("type") in LINE_TYPES and isinstance(head.get("payload"), dict)


def read(path: Path) -> list[Trace]:
    """The session's one trace; TraceError names the file and line of what cannot be read."""
    path = Path(path)
    reader = _Reader(path)
    for number, record in jsonl_records(path):
        reader.line = number
        reader.record(record)
    return [reader.finish()]


class _Reader:
    """Turns rollout lines into a Trace, line by line."""

    def __init__(self, path: Path):
        self.path, self.line, self.time = path, 0, 0.0
        self.trace = Trace(trace_id=path.stem, source_format=FORMAT, path=str(path), messages=[])
        self.meta_seen = False
        self.instructions: str | None = None
        self.initial_context: list[Message] = []  # developer and context messages before the user's first
        self.user_texts: list[str] = []  # the user's own messages in the current context
        self.calls: dict[str, str] = {}  # call id -> tool name
        self.response: int | None = None  # index of the assistant message being built
        self.awaiting: int | None = None  # latest response still without usage (usage after output)
        self.pending: dict[str, int | None] | None = None  # usage awaiting its response (usage first)
        self.usage_first: bool | None = None
        self.last_totals: Any = None
        self.recorded: list[int] = []
        self.models: Counter[str] = Counter()

    def fail(self, problem: str) -> TraceError:
        return TraceError(self.path, problem, line=self.line)

    # ----- lines
    def record(self, record: Any) -> None:
        if not isinstance(record, dict):
            raise self.fail(f"a rollout line is a JSON object, got {type(record).__name__}")
        kind, payload = record.get("type"), record.get("payload")
        if not isinstance(kind, str):
            raise self.fail("a rollout line needs a `type`")
        if not isinstance(payload, dict):
            raise self.fail(f"a {kind!r} line needs a `payload` object")
        self.time = self.timestamp(record.get("timestamp"))
        if kind == "session_meta":
            self.session_meta(payload)
        elif kind == "turn_context" and isinstance(payload.get("model"), str):
            self.models[payload["model"]] += 1
        elif kind == "event_msg" and payload.get("type") == "token_count":
            self.token_count(payload.get("info"))
        elif kind == "response_item":
            self.item(payload)
        elif kind == "compacted":
            self.compacted(payload)

    def timestamp(self, value: Any) -> float:
        try:
            return datetime.fromisoformat(value).timestamp()
        except (TypeError, ValueError):
            raise self.fail(f"`timestamp` must be an ISO 8601 time, got {value!r}") from None

    def session_meta(self, payload: dict[str, Any]) -> None:
        if self.meta_seen:  # a forked session repeats its parent's: the first is this session's
            return
        self.meta_seen = True
        if isinstance(payload.get("id"), str) and payload["id"]:
            self.trace.trace_id = payload["id"]
        base = payload.get("base_instructions")
        text = base.get("text") if isinstance(base, dict) else base
        if isinstance(text, str) and text:
            self.instructions = text
            if not self.trace.messages:
                self.add({"role": "system", "content": text})

    # ----- response items
    def item(self, item: dict[str, Any], replayed: bool = False) -> None:
        kind = item.get("type")
        if not isinstance(kind, str):
            raise self.fail("a response item needs a `type`")
        if kind == "message":
            self.message(item, replayed)
        elif kind in COMPACTION_ITEMS:
            self.close()
            self.add({"role": "user", "content": "[compaction item]"})
        elif replayed:
            return  # a replacement history's outputs and tool items: context, not responses (see the docstring)
        elif kind in CALLS:
            self.call(item, kind)
        elif kind in OUTPUTS:
            self.output(item)
        elif kind == "reasoning":
            self.open()
        elif kind == "web_search_call":
            self.text(f"[web_search_call {json.dumps(item.get('action'), ensure_ascii=False)}]")

    def message(self, item: dict[str, Any], replayed: bool) -> None:
        role = item.get("role")
        if role not in ("user", "developer", "system", "assistant"):
            raise self.fail(f"a message's role must be user, developer, system or assistant, got {role!r}")
        text = content_text(item.get("content"), self.fail) or ""
        if role == "assistant":
            if not replayed:
                self.text(text)
            return
        if role == "system":
            return
        self.close()
        message = {"role": "system" if role == "developer" else "user", "content": text}
        contextual = role == "developer" or text.lstrip().lower().startswith(CONTEXT_PREFIXES)
        if not contextual:
            self.user_texts.append(text)
        elif not replayed and len(self.user_texts) == 0 and not self.trace.resets:
            self.initial_context.append(message)
        self.add(message)

    def text(self, text: str) -> None:
        message = self.trace.messages[self.open()]
        message["content"] = text if message["content"] is None else f"{message['content']}\n{text}"

    def call(self, item: dict[str, Any], kind: str) -> None:
        call_id = item.get("call_id") or item.get("id")
        if kind == "local_shell_call":
            name, arguments = "local_shell", json.dumps(item.get("action"), ensure_ascii=False)
        elif kind == "custom_tool_call":
            name, arguments = item.get("name"), json.dumps({"input": item.get("input")}, ensure_ascii=False)
        else:
            name, arguments = item.get("name"), item.get("arguments")
        if not (isinstance(call_id, str) and call_id and isinstance(name, str) and name):
            raise self.fail(f"a {kind} needs a `call_id` and a `name`")
        if not isinstance(arguments, str):
            raise self.fail(f"a function_call's `arguments` is a JSON string, got {type(arguments).__name__}")
        message = self.trace.messages[self.open()]
        message.setdefault("tool_calls", []).append(
            {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}})
        self.calls[call_id] = name

    def output(self, item: dict[str, Any]) -> None:
        call_id = item.get("call_id")
        if call_id not in self.calls:
            raise self.fail(f"{item['type']} {call_id!r} answers no earlier call")
        self.close()
        output = item.get("output")
        if isinstance(output, dict):  # older Codex wrote {content, success}
            output = output.get("content")
        self.add({"role": "tool", "tool_call_id": call_id, "name": self.calls[call_id],
                  "content": content_text(output, self.fail) or ""})

    # ----- responses and their usage
    def open(self) -> int:
        """The index of the response being built, starting one (with the usage waiting for it) if none is."""
        if self.response is None:
            self.response = self.add({"role": "assistant", "content": None})
            if self.usage_first and self.pending is not None:
                self.trace.usage[self.response], self.pending = self.pending, None
            elif not self.usage_first:
                self.awaiting = self.response
        return self.response

    def close(self) -> None:
        self.response = None

    def token_count(self, info: Any) -> None:
        if not isinstance(info, dict):
            return  # rate limits only
        totals = (info.get("total_token_usage"), last := info.get("last_token_usage"))
        if totals == self.last_totals or not isinstance(last, dict):
            return
        self.last_totals = totals
        usage = {"input_tokens": self.count(last, "input_tokens"),
                 "cached_tokens": self.count(last, "cached_input_tokens"),
                 "cache_write_tokens": self.count(last, "cache_write_input_tokens"),
                 "output_tokens": self.count(last, "output_tokens")}
        if not usage["input_tokens"]:
            return
        self.recorded.append(usage["input_tokens"])
        if self.usage_first is None:
            self.usage_first = self.awaiting is None
        if self.usage_first:
            self.pending = usage
        elif self.awaiting is not None:
            self.trace.usage[self.awaiting], self.awaiting = usage, None

    def count(self, usage: dict[str, Any], name: str) -> int | None:
        value = usage.get(name)
        if value is not None and (type(value) is not int or value < 0):
            raise self.fail(f"token_count `{name}` must be a count, got {value!r}")
        return value

    # ----- compaction
    def compacted(self, payload: dict[str, Any]) -> None:
        self.close()
        self.pending = self.awaiting = None  # the compaction request's usage has no response
        history, summary = payload.get("replacement_history"), payload.get("message")
        if history is None and not isinstance(summary, str):
            raise self.fail("a compacted line needs a `message` or a `replacement_history` list")
        if history is not None and not isinstance(history, list):
            raise self.fail(f"`replacement_history` must be a list, got {type(history).__name__}")
        start = len(self.trace.messages)
        if self.instructions:
            self.add({"role": "system", "content": self.instructions})
        kept, self.user_texts = self.user_texts, []
        if history is not None:
            for item in history:
                if not isinstance(item, dict):
                    raise self.fail("a replacement_history item must be an object")
                self.item(item, replayed=True)
        else:
            for message in self.initial_context:
                self.add(dict(message))
            for text in _newest_within(kept, KEPT_USER_TOKENS):
                self.user_texts.append(text)
                self.add({"role": "user", "content": text})
            self.add({"role": "user", "content": summary or NO_SUMMARY})
        self.close()
        if start:  # a compaction before any message drops nothing
            self.trace.resets[start] = "compaction"

    # ----- the trace
    def add(self, message: Message) -> int:
        index = len(self.trace.messages)
        self.trace.messages.append(message)
        self.trace.times[index] = self.time
        return index

    def finish(self) -> Trace:
        trace = self.trace
        if not any(message["role"] == "assistant" for message in trace.messages):
            raise TraceError(self.path, "the session holds no model response (no assistant message, reasoning or "
                                        "tool call)", trace=trace.trace_id)
        trace.resets = {index: why for index, why in trace.resets.items() if index < len(trace.messages)}
        trace.recorded_input_tokens = sum(self.recorded) if self.recorded else None
        trace.model = self.models.most_common(1)[0][0] if self.models else None
        return check_trace(trace)


def _newest_within(texts: list[str], tokens: int) -> list[str]:
    """The user's messages Codex keeps across an older compaction (compact.rs `build_compacted_history`):
    newest first while they fit in `tokens` (4 bytes a token), the one crossing the limit cut in the middle."""
    kept: list[str] = []
    for text in reversed(texts):
        if tokens <= 0:
            break
        size = -(-len(text.encode("utf-8")) // BYTES_PER_TOKEN)
        if size > tokens:
            text = _middle(text, tokens * BYTES_PER_TOKEN, size - tokens)
        kept.append(text)
        tokens -= size
    return kept[::-1]


def _middle(text: str, budget: int, cut_tokens: int) -> str:
    """`text` cut to about `budget` bytes, its head and tail kept around a marker (Codex's `truncate_text`)."""
    data, half = text.encode("utf-8"), budget // 2
    head, tail = data[:half].decode("utf-8", "ignore"), data[len(data) - half:].decode("utf-8", "ignore")
    return f"{head}…{cut_tokens} tokens truncated…{tail}"
