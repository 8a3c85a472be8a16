"""mini-swe-agent trajectories (`<instance>.traj.json`): `messages` as the agent kept them, `info`.

Written by `DefaultAgent.serialize` (trajectory_format "mini-swe-agent-1.1", v2) or `save_traj`
("mini-swe-agent-1", v1). What each kind of recorded message becomes:

* tool-calling models (v2 default): assistant messages carry litellm's `tool_calls`, results are
  `tool` messages: kept as recorded. Responses-API models record the whole response object
  (`object: "response"`, output items) and `function_call_output` items: mapped to the same.
* text-based models (v1, v2 `*_textbased`): the command is a fenced block in the assistant's text
  and its output comes back as a user message. The assistant keeps its text and gains a `bash`
  tool call per parsed action (v2: `extra.actions`; v1: the config's `action_regex`, one match,
  as the agent itself parsed it); the user message(s) that answer it become tool results, so
  masking and output limits see observations as tool output (see harness.traces.agent_text).
  Format-error and interrupt messages (v2 `extra.interrupt_type`) stay user messages.
* the closing `exit` message is not sent to the model: its exit_status/submission become the outcome.

Usage: litellm's usage of each response (`extra.response.usage`, or the response object's own)
per assistant message; `recorded_input_tokens` sums every recorded call, including those whose
response failed the format (kept only on the format-error message). `info.model_stats` records
cost and calls but no tokens, so without responses there are no recorded tokens (None).
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from harness.models.usage import normalize_usage
from harness.traces import Message, Trace, TraceError, check_trace
from harness.traces.agent_text import bash_call, text_of, tool_result
from harness.traces.records import load_json

FORMAT = "mini-swe-agent"
V1_ACTION_REGEX = r"```bash\s*\n(.*?)\n```"  # DefaultAgent's action_regex in v1
BASH_TOOL = {"type": "function", "function": {
    "name": "bash", "description": "Execute a bash command",
    "parameters": {"type": "object", "required": ["command"],
                   "properties": {"command": {"type": "string", "description": "The bash command to execute"}}}}}


def detect(path: Path, head: Any) -> bool:
    """A JSON object with a `messages` list and mini-swe-agent's trajectory_format or version."""
    if not (isinstance(head, dict) and isinstance(head.get("messages"), list)):
        return False
    info = head.get("info")
    return str(head.get("trajectory_format", "")).startswith("mini-swe-agent") or (
        isinstance(info, dict) and "mini_version" in info)


def read(path: Path) -> list[Trace]:
    """The file's one trajectory."""
    data = load_json(path)
    if not detect(path, data):
        raise TraceError(path, "not a mini-swe-agent trajectory (an object with `messages` and `trajectory_format`)")
    name = Path(path).name
    trace_id = name[: -len(".traj.json")] if name.endswith(".traj.json") else Path(path).stem
    info = data.get("info") if isinstance(data.get("info"), dict) else {}
    config = info.get("config") if isinstance(info.get("config"), dict) else {}
    trace = _Reader(path, trace_id, _action_regex(config)).convert(data["messages"])
    trace.outcome = {"exit_status": info.get("exit_status"), "submission": info.get("submission"),
                     **trace.outcome}
    trace.model = (config.get("model") or {}).get("model_name") if isinstance(config.get("model"), dict) else None
    return [check_trace(trace)]


def _action_regex(config: dict[str, Any]) -> str:
    """The regex the recording agent parsed actions with (v1 kept it in the agent's config)."""
    for part in ("agent", "model"):
        section = config.get(part)
        if isinstance(section, dict) and isinstance(section.get("action_regex"), str):
            return section["action_regex"]
    return V1_ACTION_REGEX


class _Reader:
    """Converts one `messages` list, message by message (errors name the recorded index)."""

    def __init__(self, path: Path, trace_id: str, action_regex: str):
        self.path, self.trace_id, self.action_regex = path, trace_id, action_regex
        self.trace = Trace(trace_id=trace_id, source_format=FORMAT, path=str(path), messages=[])
        self.pending: list[dict[str, Any]] = []  # bash calls parsed from text, awaiting their user observation
        self.names: dict[str, str] = {}  # tool call id -> tool name
        self.native_tools = False
        self.recorded: list[int] = []  # input tokens of every recorded call

    def bad(self, index: int, problem: str) -> TraceError:
        return TraceError(self.path, problem, trace=self.trace_id, index=index)

    def convert(self, messages: list[Any]) -> Trace:
        for index, raw in enumerate(messages):
            if not isinstance(raw, dict):
                raise self.bad(index, f"a message must be an object, got {type(raw).__name__}")
            self.message(index, raw)
        if self.native_tools:
            self.trace.tools = [BASH_TOOL]
        if self.recorded:
            self.trace.recorded_input_tokens = sum(self.recorded)
        return self.trace

    def message(self, index: int, raw: dict[str, Any]) -> None:
        extra = raw.get("extra") if isinstance(raw.get("extra"), dict) else {}
        role, kind = raw.get("role"), raw.get("type")
        if raw.get("object") == "response":
            return self.assistant(index, *self.responses_output(index, raw.get("output")), raw.get("usage"))
        if kind == "function_call_output":
            return self.tool(index, raw.get("call_id"), raw.get("output"))
        if role == "exit":
            self.trace.outcome = {k: extra[k] for k in ("exit_status", "submission") if k in extra}
            return None
        if role == "assistant":
            return self.assistant(index, raw.get("content"), raw.get("tool_calls"), _response_usage(extra),
                                  extra.get("actions"))
        if role == "tool":
            return self.tool(index, raw.get("tool_call_id"), raw.get("content"))
        if role not in ("system", "user"):
            raise self.bad(index, f"role must be system, user, assistant, tool or exit, got {role!r}")
        if usage := _response_usage(extra):  # a response that failed the format is kept here
            self.record(usage)
        if role == "user" and self.pending and "interrupt_type" not in extra:
            self.trace.messages.append(tool_result(self.pending.pop(0), raw.get("content")))
            return None
        self.pending = []
        self.trace.messages.append({"role": role, "content": text_of(raw.get("content"))})
        return None

    def assistant(self, index: int, content: Any, tool_calls: Any, usage: Any, actions: Any = None) -> None:
        message: Message = {"role": "assistant", "content": text_of(content)}
        if tool_calls:
            message["tool_calls"] = [self.native_call(index, call) for call in tool_calls]
            self.native_tools = True
        else:
            commands = self.text_actions(message["content"], actions)
            self.pending = [bash_call(f"call_{index}_{n}", command) for n, command in enumerate(commands)]
            if self.pending:
                message["tool_calls"] = list(self.pending)
        for call in message.get("tool_calls", []):
            self.names[call["id"]] = call["function"]["name"]
        if usage is not None:
            self.trace.usage[len(self.trace.messages)] = self.record(usage)
        self.trace.messages.append(message)

    def text_actions(self, content: str | None, actions: Any) -> list[str]:
        """The commands a text-based agent parsed from this message (v2 records them, v1 not)."""
        if isinstance(actions, list):
            return [a["command"] for a in actions
                    if isinstance(a, dict) and isinstance(a.get("command"), str) and "tool_call_id" not in a]
        found = re.findall(self.action_regex, content or "", re.DOTALL)
        return [found[0].strip()] if len(found) == 1 else []

    def native_call(self, index: int, call: Any) -> dict[str, Any]:
        function = call.get("function") if isinstance(call, dict) else None
        if not (isinstance(function, dict) and isinstance(call.get("id"), str) and isinstance(function.get("name"), str)
                and isinstance(function.get("arguments"), str)):
            raise self.bad(index, "a tool call needs an id, a function name and arguments as a string")
        return {"id": call["id"], "type": "function",
                "function": {"name": function["name"], "arguments": function["arguments"]}}

    def responses_output(self, index: int, output: Any) -> tuple[str, list[dict[str, Any]]]:
        """A Responses-API response's output items as (text, chat tool calls)."""
        if not isinstance(output, list):
            raise self.bad(index, "a response object needs an `output` list")
        texts, calls = [], []
        for item in output:
            if not isinstance(item, dict):
                raise self.bad(index, "a response output item must be an object")
            if item.get("type") == "message":
                texts.append(text_of(item.get("content")) or "")
            elif item.get("type") == "function_call":
                calls.append({"id": item.get("call_id") or item.get("id"),
                              "function": {"name": item.get("name"), "arguments": item.get("arguments")}})
        return "\n".join(texts), calls

    def tool(self, index: int, call_id: Any, content: Any) -> None:
        if call_id not in self.names:
            raise self.bad(index, f"tool result {call_id!r} answers no earlier tool call")
        self.trace.messages.append(tool_result({"id": call_id, "function": {"name": self.names[call_id]}}, content))

    def record(self, usage: Any) -> dict[str, int | None]:
        tokens = normalize_usage(usage)
        if tokens.input_tokens is None:  # Responses API names them input/output_tokens
            details = usage.get("input_tokens_details") if isinstance(usage, dict) else None
            tokens.input_tokens, tokens.output_tokens = usage.get("input_tokens"), usage.get("output_tokens")
            tokens.cached_tokens = (details or {}).get("cached_tokens")
        if isinstance(tokens.input_tokens, int):
            self.recorded.append(tokens.input_tokens)
        return {"input_tokens": tokens.input_tokens, "cached_tokens": tokens.cached_tokens,
                "output_tokens": tokens.output_tokens}


def _response_usage(extra: dict[str, Any]) -> dict[str, Any] | None:
    """The usage of the litellm response kept in a message's `extra`, if recorded."""
    response = extra.get("response")
    usage = response.get("usage") if isinstance(response, dict) else None
    return usage if isinstance(usage, dict) else None
