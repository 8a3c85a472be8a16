"""A primed mock conversation of a chosen size and length, stepped one runner request at a time: the
workload of the flat and adapters figures."""
from __future__ import annotations

import json
import time

from harness.conversation.events import event_log_path

STEP_RESULT_TOKENS = 200  # the tool result each measured step adds: the same at every context size

_FILLER = ("amber basalt cedar delta ember fjord garnet harbor iris juniper kestrel lagoon meadow nectar onyx "
           "pewter quartz russet sierra tundra umber velvet willow xenon yarrow zephyr alder birch copper").split()


def filler_line(index: int, row: int) -> str:
    return " ".join(_FILLER[(index * 7 + row + k) % len(_FILLER)] for k in range(12)) + f" {index}.{row}"


def file_text(index: int, tokens: int) -> str:
    """A tool result of about `tokens` tokens: one chain record among distinct filler lines."""
    from harness.core.tokens import count_text

    path = f"archive/f{index:04d}.txt"
    head = [f"== {path} (records) ==", f"record QX-{index:04d} | weight {index % 97} | successor QX-{index + 1:04d}"]
    rows = max(tokens // (count_text(filler_line(index, 0)) + 1) - 2, 0)
    return "\n".join([*head, *(filler_line(index, row) for row in range(rows)), f"== end of {path} =="])


class Session:
    """A run context primed with a chained_lookup conversation of `messages` messages of ~`tokens` tokens."""

    def __init__(self, tmp: str, tokens: int, messages: int, steps: int):
        from harness.api import mock_profiles
        from harness.conversation.context import RunContext
        from harness.models.profiles import MAIN_PROFILE
        from harness.conversation.events import EventLog
        from harness.models.llm import LLMClient
        from harness.models.profiles import build_profiles
        from harness.core.tokens import count_text
        from tasks.suites import TaskRow

        environment = TaskRow("bench", "chained_lookup", 1, {"hops": 4, "files": 2, "distractors": 2}).build()
        profiles = build_profiles(mock_profiles(window=10 * tokens + 100_000))
        name = f"bench-{tokens}-{messages}"
        self.ctx = RunContext(EventLog(event_log_path(tmp, name), in_memory=False), profiles, run_id=name, seed=0)
        self.main = LLMClient(profiles[MAIN_PROFILE], session=name, seed=0)
        self.ctx.tools = [spec.schema() for spec in environment.tool_specs()]
        self.ctx.add_message({"role": "system", "content": environment.system_prompt}, origin="task")
        self.ctx.add_message({"role": "user", "content": "Start at record QX-0000 and follow the successor chain "
                                                         "through 100000 records; submit the sum of their weights."},
                             origin="user")
        exchanges = max((messages - 2) // 2, 1)
        per_result = max((tokens - self.ctx.prompt_tokens_estimate()) // exchanges - 30, 8)
        for index in range(exchanges):
            self._exchange(f"call_{index}", file_text(index, per_result))
        self.results = [file_text(exchanges + i, STEP_RESULT_TOKENS) for i in range(steps)]
        for text in self.results:
            count_text(text)  # tokenized once, before any clock starts

    def _exchange(self, call_id: str, content: str) -> None:
        path = content.split(" ", 2)[1]
        self.ctx.add_message({"role": "assistant", "content": "", "tool_calls": [
            {"id": call_id, "type": "function",
             "function": {"name": "read_file", "arguments": json.dumps({"path": path})}}]}, origin="agent")
        self._result(call_id, content)

    def _result(self, call_id: str, content: str) -> None:
        self.ctx.add_message({"role": "tool", "tool_call_id": call_id, "name": "read_file", "content": content},
                             origin="tool")

    def step(self, index: int) -> float:
        """One runner step; returns its CPU seconds."""
        ctx = self.ctx
        started = time.process_time()
        messages = ctx.view.to_messages()
        request = {"profile": "main", "model": self.main.profile.model, "view_hash": ctx.view.hash(ctx.tools_hash),
                   "view_len": len(messages), "context_tokens": ctx.prompt_tokens_estimate()}
        result = self.main.complete(messages, ctx.tools)
        ctx.record_response(request, result)
        call_id = (result.message.get("tool_calls") or [{"id": f"step_{index}"}])[0]["id"]
        self._result(call_id, self.results[index])
        return time.process_time() - started

    def close(self) -> None:
        self.ctx.log.close()
        self.main.end_session()
