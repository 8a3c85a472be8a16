"""The adapters' shared base (strategies.adapters): what a missing library says, how a library's
answer becomes view ops, and that the core never imports a library."""
import re
import subprocess
import sys

import pytest

from harness.cli import main
from harness.core.errors import ConfigError
from harness.conversation.view import fold
from reset_helpers import context
from strategies import REGISTRY, comparison_strategies, strategy_class
from adapter_helpers import requires
from strategies.adapters import (ANTHROPIC_SDK, ANTHROPIC_SDK_FOR_INSPECT, GOOGLE_ADK, HEADROOM, INSPECT_AI, LANGCHAIN,
                                 LITELLM, OPENHANDS_SDK, PYDANTIC_AI_HARNESS, STRANDS, Library, LibraryError, apply_view)

ADAPTERS = sorted(name for name in REGISTRY if strategy_class(name).library is not None)
LIBRARIES = (PYDANTIC_AI_HARNESS, INSPECT_AI, ANTHROPIC_SDK_FOR_INSPECT, ANTHROPIC_SDK, OPENHANDS_SDK, LITELLM, LANGCHAIN,
             STRANDS, HEADROOM, GOOGLE_ADK)


def _tool_history(ctx, results=3):
    ids = []
    for n in range(results):
        call = {"id": f"c{n}", "type": "function", "function": {"name": "read", "arguments": "{}"}}
        ids.append(ctx.add_message({"role": "assistant", "content": "", "tool_calls": [call]}, origin="agent")["id"])
        ids.append(ctx.add_message({"role": "tool", "tool_call_id": f"c{n}", "name": "read",
                                    "content": f"result {n} " * 200}, origin="tool")["id"])
    return ids


def test_a_view_the_library_leaves_as_it_is_logs_nothing_and_keeps_every_message_object():
    ctx = context()
    _tool_history(ctx)
    before = ctx.view.to_messages()
    assert apply_view(ctx, [(i, None) for i in ctx.view.ids], "compaction", step="x") is None
    assert apply_view(ctx, [(i, ctx.view.message(i)) for i in ctx.view.ids], "compaction", step="x") is None
    assert all(a is b for a, b in zip(before, ctx.view.to_messages()))


def test_another_rendering_is_a_replace_and_only_messages_that_left_are_a_drop():
    ctx = context()
    ids = _tool_history(ctx)
    cleared = {**ctx.view.message(ids[1]), "content": "[cleared]"}
    wanted = [(i, None) for i in ctx.view.ids if i != ids[3] and i != ids[2]]
    wanted = [(i, cleared if i == ids[1] else r) for i, r in wanted]
    event = apply_view(ctx, wanted, "compaction", step="x")
    assert [op["op"] for op in event["view_ops"]] == ["replace", "drop"]
    assert event["view_ops"][1]["ids"] == [ids[2], ids[3]]
    assert ctx.view.message(ids[1])["content"] == "[cleared]"
    assert event["tokens_after"] == ctx.prompt_tokens_estimate()
    assert event["reclaimed_tokens"] == event["tokens_before"] - event["tokens_after"] > 0
    assert fold(ctx.log.events).ids == ctx.view.ids


def test_a_message_the_library_made_is_logged_unplaced_then_set_into_the_view():
    ctx = context()
    ids = _tool_history(ctx)
    head = ctx.view.ids[:2]
    summary = {"role": "user", "content": "summary of what happened"}
    event = apply_view(ctx, [(i, None) for i in head] + [(None, summary)] + [(ids[-2], None), (ids[-1], None)],
                       "condensation", kind="summary")
    new_id = event["new_ids"][0]
    assert ctx.log.events[new_id]["placement"] == "none" and ctx.log.events[new_id]["origin"] == "strategy"
    assert event["view_ops"] == [{"op": "set", "ids": head + [new_id, ids[-2], ids[-1]]}]
    assert ctx.view.ids == head + [new_id, ids[-2], ids[-1]]
    assert event["tokens_after"] == ctx.prompt_tokens_estimate()


@pytest.mark.parametrize("library", LIBRARIES, ids=lambda library: library.distribution)
def test_a_missing_library_is_a_config_error_naming_the_extra_to_install(library, monkeypatch):
    monkeypatch.setattr(Library, "version", lambda self: None)
    hint = rf"pip install -e '\.\[{library.extra}\]'" if library.extra else re.escape(library.install_hint())
    with pytest.raises(ConfigError, match=hint):
        library.load("strategy x")


def test_a_release_older_than_the_code_the_adapter_runs_is_refused_by_name(monkeypatch):
    """A core dependency's range admits releases without the code (litellm's polyfill from 1.109.0)."""
    library = Library("ctxbench", "", "harness", min_version="1.109.0")
    monkeypatch.setattr(Library, "version", lambda self: "1.108.14")
    assert not library.available()
    with pytest.raises(ConfigError, match=r"from release 1\.109\.0 on; this is 1\.108\.14: "
                                          r"pip install -U 'ctxbench>=1\.109\.0'"):
        library.load("strategy x")
    monkeypatch.setattr(Library, "version", lambda self: "1.110.0rc1")
    assert library.available()


def test_what_the_library_raises_is_a_library_error_naming_it_and_its_version():
    library = Library("ctxbench", "test", "harness")  # any installed distribution
    with pytest.raises(LibraryError, match=r"ctxbench \S+ raised in compact: ValueError: bad"):
        with library.calling("compact"):
            raise ValueError("bad")
    with pytest.raises(ConfigError, match="refused the configuration: bad"):
        with library.configuring("strategy x"):
            raise TypeError("bad")


def test_adapters_are_registered_but_left_out_of_the_native_comparison():
    assert ADAPTERS == ["adk.compaction", "anthropic_sdk.compaction", "headroom.compress", "inspect.compaction_auto",
                        "inspect.compaction_edit", "inspect.compaction_native", "inspect.compaction_summary",
                        "inspect.compaction_trim", "langchain.clear_tool_uses", "langchain.summarization",
                        "litellm.context_management", "openhands.llm_summarizing", "openhands.pipeline",
                        "pai.tiered_compaction", "pai.tool_output_limits", "pai.warn_on_cache_busts",
                        "strands.sliding_window", "strands.summarizing"]
    assert not set(ADAPTERS) & set(comparison_strategies())
    for name in ADAPTERS:
        assert strategy_class(name).library in LIBRARIES


def test_the_strategy_list_names_each_adapters_library_and_its_version_or_how_to_install_it(capsys):
    assert main(["strategies"]) == 0
    out = capsys.readouterr().out.splitlines()  # a strategy's entry: its name line and its source line
    lines = {line.lstrip("* ").split()[0]: line + out[i + 1] for i, line in enumerate(out[:-1])
             if line.startswith(("* ", "  ")) and not line.startswith("   ")}
    for name in ADAPTERS:
        library = strategy_class(name).library
        if library.available():
            assert f"runs {library.distribution} {library.version()}" in lines[name]
        else:
            assert library.install_hint() in lines[name]
    assert "runs" not in lines["none"]


def test_the_core_never_imports_a_library():
    code = ("import sys; from harness import api; from harness.cli import main; "
            "import strategies; [strategies.strategy_class(n) for n in strategies.REGISTRY]; "
            "main(['strategies']); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('pydantic_ai_harness', 'pydantic_ai', 'inspect_ai', 'anthropic', 'openhands', 'langchain', "
            "'langchain_core', 'langgraph', 'strands', 'headroom') "
            "or m.startswith('google.adk') "
            "or m.startswith('litellm.llms.anthropic.messages.context_management')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_cpu_inside_the_library_is_counted_apart_from_the_side_calls_it_makes(monkeypatch):
    """runs.jsonl's library_cpu_s: the library's own time, so an adapter's overhead can be told from it."""
    import strategies.adapters as adapters

    clock = {"now": 0.0}
    monkeypatch.setattr(adapters.time, "thread_time", lambda: clock["now"])
    ctx = context()
    library = Library("ctxbench", "test", "harness")
    with library.calling("compact", ctx):
        clock["now"] += 3.0  # the library's own work
        ctx.side_call_cpu_s += 2.0  # a summary it asked for, timed by ctx.call_llm
        clock["now"] += 2.0
    with pytest.raises(LibraryError):
        with library.calling("compact", ctx):
            clock["now"] += 1.0
            raise RuntimeError("boom")
    assert ctx.library_cpu_s == 4.0


@requires(PYDANTIC_AI_HARNESS)
def test_a_result_names_the_library_release_it_measured(run_suite):
    """runs.jsonl `libraries` per row (a `with` stack too), config.json `versions` for the invocation."""
    import json

    configs = {"pai.tool_output_limits": {"with": ["warn_on_cache_busts"]}}
    runs = run_suite("smoke", strategies="none,pai.tool_output_limits", strategy_configs=configs)
    label = f"pydantic-ai-harness {PYDANTIC_AI_HARNESS.version()}"
    assert set(runs[runs.strategy == "pai.tool_output_limits"].libraries.map(tuple)) == {(label,)}
    assert set(runs[runs.strategy == "none"].libraries.map(tuple)) == {()}
    versions = json.loads((runs.attrs["out"] / "config.json").read_text())["versions"]
    assert versions["pydantic-ai-harness"] == PYDANTIC_AI_HARNESS.version()


@pytest.mark.parametrize("name", ADAPTERS)
def test_run_with_an_adapter_whose_library_is_missing_exits_2_naming_the_extra_and_writes_nothing(
        name, monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(Library, "version", lambda self: None)
    out = tmp_path / "r"
    assert main(["run", "--suite", "smoke", "--strategies", f"none,{name}", "--no-progress", "--out", str(out)]) == 2
    assert strategy_class(name).library.install_hint() in capsys.readouterr().err
    assert not (out / "runs.jsonl").exists()
