"""tau-bench result files: what sierra-research/tau-bench's `run()` (tau_bench/run.py) writes.

The file is a JSON list of `EnvRunResult.model_dump()` (tau_bench/types.py): {task_id, reward,
info, traj, trial}. `traj` is the agent's `messages`:
* tool-calling and few-shot agents (agents/tool_calling_agent.py, few_shot_agent.py): OpenAI
  messages from litellm's `message.model_dump()`, one tool call per assistant message (the agent
  keeps `tool_calls[:1]`), its `tool` result, and a `user` message after each reply;
* react / act agents (agents/chat_react_agent.py): the action is text, `...Action:\\n{"name",
  "arguments"}`, parsed from what follows the last `Action:`; a non-`respond` action's observation
  comes back as a user message starting `API output: `. Such a pair becomes a tool call (id
  `react-<index>`, the assistant keeps the text before `Action:`) and a `tool` message (the
  observation without the prefix), so tool-result strategies see tool results.
A task whose agent raised is written with `traj: []` and `info.error`: it has nothing to replay
and is skipped. Trace id `<task_id>-trial<trial>`; outcome {reward, success: reward == 1 within
1e-6, as tau-bench's `display_metrics`}. The tools' schemas are not in the file (tools = []);
the model is read from the file name run() gives it (`<strategy>-<model>-<temperature>_range_...`).
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from harness.traces import Message, Trace, TraceError, check_trace
from harness.traces.openai_chat import convert_messages
from harness.traces.records import load_json

FORMAT = "tau-bench"
FIELDS = ("task_id", "reward", "traj")
OBSERVATION_PREFIX = "API output: "  # chat_react_agent.py, before a non-respond action's observation
RESPOND = "respond"  # tau_bench.types.RESPOND_ACTION_NAME
FILE_NAME = re.compile(r"^(?:tool-calling|act|react|few-shot)-(?P<model>.+)-[0-9.]+_range_")


def detect(path: Path, head: Any) -> bool:
    """A JSON list whose first item has task_id, reward and traj."""
    return (isinstance(head, list) and bool(head) and isinstance(head[0], dict)
            and all(name in head[0] for name in FIELDS))


def read(path: Path) -> list[Trace]:
    """Every result with a trajectory (TraceError names file, trace and message index)."""
    path = Path(path)
    results = load_json(path)
    if not isinstance(results, list):
        raise TraceError(path, "a tau-bench result file is a JSON list of results")
    named = FILE_NAME.match(path.name)
    traces = []
    for position, result in enumerate(results):
        if not isinstance(result, dict) or any(name not in result for name in FIELDS):
            raise TraceError(path, f"result {position} needs {', '.join(FIELDS)}")
        trace_id = str(result["task_id"]) + (f"-trial{result['trial']}" if "trial" in result else "")
        traj, reward = result["traj"], result["reward"]
        if not isinstance(traj, list):
            raise TraceError(path, "traj must be a list of messages", trace=trace_id)
        if not isinstance(reward, (int, float)):
            raise TraceError(path, f"reward must be a number, got {reward!r}", trace=trace_id)
        if not traj and isinstance(result.get("info"), dict) and "error" in result["info"]:
            continue
        messages, _ = convert_messages(_react_actions(traj, path, trace_id), path, trace_id)
        traces.append(check_trace(Trace(
            trace_id=trace_id, source_format=FORMAT, path=str(path), messages=messages,
            outcome={"reward": reward, "success": abs(reward - 1) <= 1e-6},
            model=named["model"] if named else None)))
    if results and not traces:
        raise TraceError(path, "every task in the file raised before acting (traj [] with info.error): "
                               "nothing to replay")
    return traces


def _react_actions(traj: list[Any], path: Path, trace_id: str) -> list[Any]:
    """The react/act agents' text actions as tool calls, their observations as tool results."""
    out: list[Any] = list(traj)
    for index in range(len(traj) - 1):
        message, after = traj[index], traj[index + 1]
        if not (isinstance(message, dict) and message.get("role") == "assistant" and not message.get("tool_calls")
                and isinstance(after, dict) and after.get("role") == "user"
                and isinstance(after.get("content"), str) and after["content"].startswith(OBSERVATION_PREFIX)):
            continue
        call_id = f"react-{index}"
        out[index] = _action_call(message, call_id, TraceError(
            path, "an `API output:` observation follows a message whose text holds no JSON action "
                  "after `Action:`", trace=trace_id, index=index))
        out[index + 1] = {"role": "tool", "tool_call_id": call_id, "name": out[index]["tool_calls"][0]["function"]["name"],
                          "content": after["content"][len(OBSERVATION_PREFIX):]}
    return out


def _action_call(message: dict[str, Any], call_id: str, error: TraceError) -> Message:
    """`Thought: ... Action: {"name", "arguments"}` as an assistant message with that tool call."""
    content = message.get("content")
    if not isinstance(content, str) or "Action:" not in content:
        raise error
    thought, action_text = content.rsplit("Action:", 1)
    try:
        action = json.loads(action_text.strip())
    except json.JSONDecodeError:
        raise error from None
    if not (isinstance(action, dict) and isinstance(action.get("name"), str) and action["name"] != RESPOND
            and "arguments" in action):
        raise error
    return {"role": "assistant", "content": thought.strip() or None,
            "tool_calls": [{"id": call_id, "type": "function",
                            "function": {"name": action["name"],
                                         "arguments": json.dumps(action["arguments"], ensure_ascii=False)}}]}
