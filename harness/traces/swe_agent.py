"""SWE-agent trajectories (`<instance>.traj`, JSON): `history`, `trajectory`, `info`.

`history` is what the agent kept of its conversation with the model (before its history
processors, which are a context strategy of their own and what a replay re-decides), so it is
what is replayed; `trajectory` (per-step action/observation/state) adds nothing the model saw.

* function-calling configs record `tool_calls` on the assistant entry and the observation as a
  `tool` entry with `tool_call_ids` (one call per step: SWE-agent's parser refuses more): kept.
* thought-action configs (backticks, XML) write the command in the text and record it in the
  entry's `action`; the observation is the next user entry. Mapped like mini-swe-agent: the
  assistant keeps its text and gains a `bash` call with that command, the observation becomes its
  tool result (harness.traces.agent_text says why).
* demonstrations put into the history (`is_demo`) were shown to the model, not produced by it:
  each run of them becomes one user message (their contents joined by newlines, as SWE-agent
  renders a demonstration it does not put in the history), so the replay does not count them as
  model responses.
* RetryAgent files (`attempts`): one trace per attempt, `<instance>/attempt<N>`.
* entries of another agent than the first (`agent`) are not in this agent's requests: skipped.

Usage: `info.model_stats.tokens_sent` is the total input tokens of the run's calls (including
requeries after format errors, which the history does not keep) -> `recorded_input_tokens`; it
records nothing per call. `info.exit_status` and `submission` are the outcome.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness.traces import Message, Trace, TraceError, check_trace
from harness.traces.agent_text import bash_call, text_of, tool_result
from harness.traces.records import load_json

FORMAT = "swe-agent"


def detect(path: Path, head: Any) -> bool:
    """A JSON object with a `history` list (beside `trajectory` or `info`, or of entries naming
    their `agent` / `message_type`, as demonstrations are saved), or RetryAgent's `attempts`."""
    if not isinstance(head, dict):
        return False
    history = head.get("history")
    if isinstance(history, list):
        first = history[0] if history else None
        return "trajectory" in head or "info" in head or (
            isinstance(first, dict) and ("agent" in first or "message_type" in first))
    attempts = head.get("attempts")
    return isinstance(attempts, list) and bool(attempts) and all(
        isinstance(a, dict) and isinstance(a.get("history"), list) for a in attempts)


def read(path: Path) -> list[Trace]:
    """One trace per attempt recorded in the file."""
    data = load_json(path)
    if not detect(path, data):
        raise TraceError(path, "not a SWE-agent trajectory (an object with `history` and `trajectory`)")
    stem = Path(path).stem
    if isinstance(data.get("attempts"), list) and data["attempts"]:
        runs = [(f"{stem}/attempt{n}", attempt) for n, attempt in enumerate(data["attempts"])]
    else:
        runs = [(stem, data)]
    model = _model_name(data.get("replay_config"))
    return [check_trace(_trace(path, trace_id, run, model)) for trace_id, run in runs]


def _trace(path: Path, trace_id: str, run: dict[str, Any], model: str | None) -> Trace:
    info = run.get("info") if isinstance(run.get("info"), dict) else {}
    stats = info.get("model_stats") if isinstance(info.get("model_stats"), dict) else {}
    sent = stats.get("tokens_sent")
    return Trace(trace_id=trace_id, source_format=FORMAT, path=str(path),
                 messages=_messages(path, trace_id, run.get("history")),
                 recorded_input_tokens=sent if isinstance(sent, int) and sent > 0 else None,  # 0: not recorded (replays)
                 outcome={"exit_status": info.get("exit_status"), "submission": info.get("submission")},
                 model=model)


def _messages(path: Path, trace_id: str, history: Any) -> list[Message]:
    """The history entries as chat messages (errors name the entry's index in `history`)."""
    if not isinstance(history, list):
        raise TraceError(path, "`history` must be a list", trace=trace_id)
    messages: list[Message] = []
    pending: dict[str, Any] | None = None  # a bash call parsed from text, awaiting its observation
    names: dict[str, str] = {}
    demo: list[str] = []
    agent = history[0].get("agent") if history and isinstance(history[0], dict) else None
    for index, entry in enumerate(history):
        def bad(problem: str) -> TraceError:
            return TraceError(path, problem, trace=trace_id, index=index)

        if not isinstance(entry, dict):
            raise bad(f"a history entry must be an object, got {type(entry).__name__}")
        if entry.get("agent", agent) != agent:
            continue
        role, content = entry.get("role"), text_of(entry.get("content"))
        if entry.get("is_demo") and role != "system":
            demo.append(content if isinstance(content, str) else "")
            continue
        if demo:
            messages.append({"role": "user", "content": "\n".join(demo)})
            demo = []
        if role == "assistant":
            message: Message = {"role": "assistant", "content": content}
            pending = None
            if entry.get("tool_calls"):
                message["tool_calls"] = [_native_call(call, bad) for call in entry["tool_calls"]]
            elif isinstance(entry.get("action"), str) and entry["action"].strip():
                pending = bash_call(f"call_{index}", entry["action"].strip())
                message["tool_calls"] = [pending]
            names.update((call["id"], call["function"]["name"]) for call in message.get("tool_calls", []))
            messages.append(message)
        elif role == "tool":
            ids = entry.get("tool_call_ids")
            if not (isinstance(ids, list) and ids and ids[0] in names):
                raise bad(f"tool entry's tool_call_ids {ids!r} answer no earlier tool call")
            messages.append(tool_result({"id": ids[0], "function": {"name": names[ids[0]]}}, content))
        elif role == "user" and pending is not None:
            messages.append(tool_result(pending, content))
            pending = None
        elif role in ("system", "user"):
            messages.append({"role": role, "content": content})
        else:
            raise bad(f"role must be system, user, assistant or tool, got {role!r}")
    if demo:
        messages.append({"role": "user", "content": "\n".join(demo)})
    return messages


def _native_call(call: Any, bad: Any) -> dict[str, Any]:
    function = call.get("function") if isinstance(call, dict) else None
    if not (isinstance(function, dict) and isinstance(call.get("id"), str) and isinstance(function.get("name"), str)):
        raise bad("a tool call needs an id and a function name")
    arguments = function.get("arguments")
    if isinstance(arguments, dict):  # some providers' dumps keep them parsed
        arguments = json.dumps(arguments, ensure_ascii=False)
    if not isinstance(arguments, str):
        raise bad("a tool call's arguments must be a JSON string or object")
    return {"id": call["id"], "type": "function", "function": {"name": function["name"], "arguments": arguments}}


def _model_name(replay_config: Any) -> str | None:
    """The model's name from the run's replay config (a JSON string), when recorded."""
    try:
        config = json.loads(replay_config) if isinstance(replay_config, str) else replay_config
        return config["agent"]["model"]["name"]
    except (ValueError, TypeError, KeyError):
        return None
