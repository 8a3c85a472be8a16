"""Helpers for the adapter tests: skip, with the reason, where a library's extra is not installed."""
from __future__ import annotations

from typing import Any


import pytest

from strategies.adapters import Library


def requires(library: Library) -> pytest.MarkDecorator:
    """Skip a test or module unless `library` is installed and importable on this Python."""
    missing = not library.available()
    return pytest.mark.skipif(missing, reason=f"{library.distribution} is not installed here: "
                                              f"{library.install_hint()}")


def user_turns(turns: int, words: int) -> list[dict[str, Any]]:
    """`turns` user turns, each naming a code, a tool call answered by `words` filler words, and a closing reply."""
    from tests.reset_helpers import tool_call

    out: list[dict[str, Any]] = []
    for turn in range(turns):
        out += [{"role": "user", "content": f"turn {turn}: the code is K{turn}7"},
                {"role": "assistant", "content": "", "tool_calls": [tool_call(f"u{turn}", "look", {"n": turn})]},
                {"role": "tool", "tool_call_id": f"u{turn}", "name": "look", "content": f"r{turn} " * words},
                {"role": "assistant", "content": f"done {turn}"}]
    return out


def tool_steps(ctx: Any, strategy: Any, steps: int, words: int) -> None:
    """`steps` requests as the runner makes them, each answered by a read call whose result is `words` filler words."""
    from tests.reset_helpers import success, tool_call

    for step in range(steps):
        strategy.before_request(ctx)
        success(ctx, strategy, {"role": "assistant", "content": "", "tool_calls": [tool_call(f"s{step}", "read", {})]},
                input_tokens=ctx.prompt_tokens_estimate())
        ctx.add_message({"role": "tool", "tool_call_id": f"s{step}", "name": "read", "content": "w " * words},
                        origin="tool")


def refused_before_any_run(tmp_path: Any, capsys: Any, name: str, config: dict[str, Any]) -> str:
    """`ctxbench run` of strategy `name` with `config`: exit 2 and no result written; returns what it said."""
    import json

    from harness.cli import main

    out = tmp_path / "r"
    assert main(["run", "--suite", "smoke", "--strategies", name, "--no-progress", "--out", str(out),
                 "--strategy-config", json.dumps({name: config})]) == 2
    assert not (out / "runs.jsonl").exists()
    return capsys.readouterr().err


def long_context(turns: int, words: int, cache: str = "anthropic", summary: dict[str, Any] | None = None) -> Any:
    """A run context (tests.reset_helpers.context) with `turns` read calls whose results are `words` filler words,
    each naming a code; the mock's cache style `cache` for both profiles (`summary`: another summary profile)."""
    from tests.reset_helpers import context, tool_call

    ctx = context({"main": {"model": "mock/agent", "mock": {"cache": cache}},
                   "summary": summary or {"model": "mock/summarizer", "mock": {"cache": cache}}})
    ctx.tools = [{"type": "function", "function": {"name": "read", "description": "Read a row.",
                                                   "parameters": {"type": "object", "properties": {}}}}]
    for index in range(turns):
        ctx.add_message({"role": "assistant", "content": "", "tool_calls": [tool_call(f"c{index}", "read", {})]},
                        origin="agent")
        ctx.add_message({"role": "tool", "tool_call_id": f"c{index}", "name": "read",
                         "content": f"row {index}: code K{index}7 " + "lorem ipsum " * (words // 2)}, origin="tool")
    return ctx


def record_wire_requests(monkeypatch: pytest.MonkeyPatch) -> list[dict]:
    """Every request a library's SDK client sends through ctxbench's transport, as (path, beta header, body)."""
    import json

    from strategies.adapters import provider_wire

    requests: list[dict] = []
    answer = provider_wire.WireSideCalls.answer

    def recording(self: Any, path: str, headers: Any, body: bytes) -> Any:
        requests.append({"path": path, "beta": headers.get("anthropic-beta"), "body": json.loads(body)})
        return answer(self, path, headers, body)

    monkeypatch.setattr(provider_wire.WireSideCalls, "answer", recording)
    return requests


def rows_in_process_and_over_route(tmp_path: Any, server: Any, run: list[str]) -> list[dict]:
    """`ctxbench run` with the mock in process, then with the main and summary profiles on serve-mock's Messages API
    (`anthropic/...`; the summary profile served as the mock summarizer there too): the rows must be the same, but for
    times and the model's name. Returns the in-process rows."""
    import json

    from harness.cli import main

    base_url = server.url.removesuffix("/v1")
    assert main([*run, "--out", str(tmp_path / "local")]) == 0
    summary = {"summary": {"model": "anthropic/mock-summarizer", "api_base": base_url}}
    assert main([*run, "--model", "anthropic/claude-sonnet-4-6", "--api-base", base_url,
                 "--profiles", json.dumps(summary), "--out", str(tmp_path / "http")]) == 0
    rows = {place: [json.loads(line) for line in (tmp_path / place / "runs.jsonl").read_text().splitlines()]
            for place in ("local", "http")}
    skip = {"wall_s", "cpu_s", "library_cpu_s", "model"}
    assert [{k: v for k, v in row.items() if k not in skip} for row in rows["http"]] == \
           [{k: v for k, v in row.items() if k not in skip} for row in rows["local"]]
    return rows["local"]
