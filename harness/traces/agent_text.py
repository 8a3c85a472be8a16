"""Pieces the agent-trajectory formats share (mini-swe-agent, SWE-agent): text of content blocks,
and a bash action written in the assistant's text turned into a tool call.

Text-based agents put their command in a fenced block and get its output back as a user message.
The replay's strategies (observation masking, tool-result clearing, ToolOutputLimits) act on tool
results only, so such a pair becomes an assistant message with a `bash` tool call (its text kept as
recorded) and a tool message answering it: the strategies then treat those observations as the agent's
own history processors treat them.
"""
from __future__ import annotations

import json
from typing import Any

from harness.traces import Message


def text_of(content: Any) -> str | None:
    """A message's content as one string: strings as they are, the text parts of content blocks
    joined by newlines (images and other parts carry no text); None stays None."""
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(part.get("text", "") for part in content
                         if isinstance(part, dict) and isinstance(part.get("text"), str))
    return content  # anything else: left for check_trace to refuse with its index


def bash_call(call_id: str, command: str) -> dict[str, Any]:
    """An OpenAI tool call of the `bash` tool with this command (mini-swe-agent's tool schema)."""
    return {"id": call_id, "type": "function",
            "function": {"name": "bash", "arguments": json.dumps({"command": command}, ensure_ascii=False)}}


def tool_result(call: dict[str, Any], content: Any) -> Message:
    """The tool message answering `call`."""
    return {"role": "tool", "tool_call_id": call["id"], "name": call["function"]["name"], "content": text_of(content)}
