"""Inspect AI eval logs (`.eval` zip, `.json`), read with Inspect's own `read_eval_log`.

One trace per sample and epoch (`<task>/<sample id>/<epoch>`): `sample.messages` as chat
messages (text content; tool calls' argument dicts as JSON strings; tool errors appended to
the tool result as the model was shown them), the tools of its first model call as OpenAI
schemas, the scores as the outcome (`{"scores": {scorer: value}}`, plus `error` when the sample
failed).

Usage: each ModelEvent of the evaluated model (no `role`, e.g. not a grader) records its output's
usage; it is keyed to the assistant message it produced (same message id) and summed into
`recorded_input_tokens` (calls whose message is not in `sample.messages`, e.g. before a
compaction, count only there). Inspect's `input_tokens` leaves out cache reads and writes
(its OpenAI provider subtracts them), so a call's input is input_tokens + input_tokens_cache_read
+ input_tokens_cache_write, and cached_tokens is the cache read.

Needs the `inspect` extra (imported only when such a file is read).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness.core.errors import ConfigError
from harness.traces import Message, Trace, TraceError, check_trace

FORMAT = "inspect"


def detect(path: Path, head: Any) -> bool:
    """An `.eval` file, or a JSON log: an object with `eval` (task, model) and `version`."""
    if Path(path).suffix == ".eval":
        return True
    return isinstance(head, dict) and isinstance(head.get("eval"), dict) and "version" in head and (
        "task" in head["eval"])


def read(path: Path) -> list[Trace]:
    """Every sample of the log, each epoch its own trace."""
    try:
        from inspect_ai.log import read_eval_log
    except ImportError as exc:
        raise ConfigError(f"{path}: reading Inspect AI logs needs the inspect extra: "
                          f"pip install 'ctxbench[inspect]'") from exc
    try:
        log = read_eval_log(str(path))
    except Exception as exc:  # Inspect raises what its parsers raise (zip, JSON, pydantic)
        raise TraceError(path, f"Inspect AI could not read the log: {type(exc).__name__}: {exc}") from exc
    if not log.samples:
        raise TraceError(path, "the log holds no samples (written with --no-log-samples, or unfinished)")
    return [check_trace(_trace(path, log.eval.task, log.eval.model, sample)) for sample in log.samples]


def _trace(path: Path, task: str, model: str, sample: Any) -> Trace:
    trace_id = f"{task}/{sample.id}/{sample.epoch}"
    messages, index_of = [], {}
    for index, message in enumerate(sample.messages):
        index_of[message.id] = index
        messages.append(_message(message))
    trace = Trace(trace_id=trace_id, source_format=FORMAT, path=str(path), messages=messages, model=model,
                  outcome={"scores": {name: score.value for name, score in (sample.scores or {}).items()}})
    if sample.error is not None:
        trace.outcome["error"] = sample.error.message
    totals = []
    for event in sample.events or []:
        if event.event != "model" or event.role is not None:
            continue
        if not trace.tools:
            trace.tools = [_tool_schema(info) for info in event.tools]
        usage = event.output.usage
        if usage is None:
            continue
        cached = usage.input_tokens_cache_read
        sent = usage.input_tokens + (cached or 0) + (usage.input_tokens_cache_write or 0)
        totals.append(sent)
        produced = event.output.message.id if event.output.choices else None
        if produced in index_of and messages[index_of[produced]]["role"] == "assistant":
            trace.usage[index_of[produced]] = {"input_tokens": sent, "cached_tokens": cached,
                                               "output_tokens": usage.output_tokens}
    trace.recorded_input_tokens = sum(totals) if totals else None
    return trace


def _message(message: Any) -> Message:
    """One Inspect ChatMessage as an OpenAI chat message with string content."""
    if message.role == "assistant":
        out: Message = {"role": "assistant", "content": message.text}
        if message.tool_calls:
            out["tool_calls"] = [{"id": call.id, "type": "function", "function": {
                "name": call.function, "arguments": json.dumps(call.arguments, ensure_ascii=False)}}
                for call in message.tool_calls]
        return out
    if message.role == "tool":
        content = message.text
        if message.error is not None:  # what Inspect shows the model for a failed call
            content = f"{content}\n{message.error.message}".strip()
        return {"role": "tool", "tool_call_id": message.tool_call_id, "name": message.function or "",
                "content": content}
    return {"role": message.role, "content": message.text}


def _tool_schema(info: Any) -> dict[str, Any]:
    """An Inspect ToolInfo as an OpenAI function-tool schema."""
    return {"type": "function", "function": {"name": info.name, "description": info.description,
                                             "parameters": info.parameters.model_dump(exclude_none=True)}}
