"""Google ADK's summary request read back as the conversation it shows (for the mock summarizer).

ADK's LlmEventSummarizer (google-adk apps/llm_event_summarizer.py `_format_events_for_prompt`) sends one user
message: its prompt template with the events rendered in place of `{conversation_history}`, one entry per
part, each opening a line:

* `{author}: {text}` (`{author} (thought): {text}` for a thought);
* `{author} called tool: {name}({args})`, the arguments as Python's `str()` of their dict;
* `Tool response from {name}: {response}`, the response dict's `str()` (a tool's text under "result");

arguments and responses cut at 2,000 characters and marked `... [truncated N chars]`. Read back, each entry is
the message it shows (the user's, the agent's, a tool result paired with the earliest unanswered call of that
tool, under an id made here), and the template around the history is the closing instruction: what the
summarizer is shown, in the shape the mock's readers know (a conversation followed by one instruction).
"""
from __future__ import annotations

import ast
import json
import re
from typing import Any

from harness.core.tokens import message_text

ENTRY = re.compile(r"^(?:(?P<caller>[A-Za-z_][\w-]*) called tool: (?P<tool>[^\s(]+)\("
                   r"|Tool response from (?P<responder>[^\s:]+): "
                   r"|(?P<author>[A-Za-z_][\w-]*)(?P<thought> \(thought\))?: )", re.MULTILINE)
TRUNCATED = re.compile(r"\.\.\. \[truncated \d+ chars\]$")
ESCAPE = re.compile(r"\\(.)", re.DOTALL)
ESCAPES = {"n": "\n", "t": "\t", "r": "\r"}
USER = "user"
SEED_AUTHOR = "model"  # the author of an earlier summary ADK passes on (apps/compaction.py, the seed event)


def transcript(messages: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
    """The conversation an ADK summary request shows, then its instruction; None when it is not one."""
    if len(messages) != 1 or messages[0].get("role") != USER:
        return None
    text = message_text(messages[0])
    entries = _entries(text)
    if not entries:
        return None
    start, end = entries[0][0], entries[-1][2]
    instruction = (text[:start] + text[end:]).strip()
    return [*_messages(entries), {"role": USER, "content": instruction}]


def _entries(text: str) -> list[tuple[int, re.Match[str], int]]:
    """(start, head, end) of each history entry: from the first head after a blank line, the heads of the
    authors the history names (the user, earlier summaries, whoever called a tool)."""
    heads = list(ENTRY.finditer(text))
    authors = {USER, SEED_AUTHOR} | {head["caller"] for head in heads if head["caller"]}
    heads = [head for head in heads if head["author"] is None or head["author"] in authors]
    first = next((i for i, head in enumerate(heads) if head.start() == 0 or text.startswith("\n\n", head.start() - 2)),
                 None)
    if first is None or not any(head["caller"] or head["responder"] or head["author"] == USER for head in heads[first:]):
        return []
    heads = heads[first:]
    ends = [head.start() - 1 for head in heads[1:]] + [len(text)]
    return [(head.start(), head, end) for head, end in zip(heads, ends)]


def _messages(entries: list[tuple[int, re.Match[str], int]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    pending: dict[str, list[str]] = {}  # tool name -> ids of its calls not yet answered, oldest first
    for _, head, end in entries:
        body = head.string[head.end():end]
        if head["caller"]:
            call_id = f"adk-call-{sum(len(m.get('tool_calls') or ()) for m in out)}"
            pending.setdefault(head["tool"], []).append(call_id)
            call = {"id": call_id, "type": "function",
                    "function": {"name": head["tool"], "arguments": _arguments(body.removesuffix(")"))}}
            if out and out[-1]["role"] == "assistant" and not out[-1].get("tool_calls"):
                out[-1]["tool_calls"] = [call]
            elif out and out[-1]["role"] == "assistant":
                out[-1]["tool_calls"].append(call)
            else:
                out.append({"role": "assistant", "content": "", "tool_calls": [call]})
        elif head["responder"]:
            waiting = pending.get(head["responder"]) or [f"adk-result-{len(out)}"]
            out.append({"role": "tool", "tool_call_id": waiting.pop(0), "name": head["responder"],
                        "content": _result(body)})
        elif not head["thought"]:
            out.append({"role": USER if head["author"] == USER else "assistant", "content": body})
    return out


def _arguments(text: str) -> str:
    """A call's arguments as JSON (the shown text under "value" when cut or not a dict)."""
    try:
        parsed = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return json.dumps({"value": text})
    return json.dumps(parsed if isinstance(parsed, dict) else {"value": parsed}, default=str)


def _result(text: str) -> str:
    """A tool response's text: its "result" when the dict is whole, else what is shown of it, unescaped."""
    try:
        parsed = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        cut = TRUNCATED.sub("", text)
        for prefix in ("{'result': '", '{\'result\': "'):
            if cut.startswith(prefix):
                return ESCAPE.sub(lambda m: ESCAPES.get(m[1], m[1]), cut[len(prefix):])
        return cut
    if isinstance(parsed, dict) and set(parsed) == {"result"}:
        return str(parsed["result"])
    return str(parsed)
