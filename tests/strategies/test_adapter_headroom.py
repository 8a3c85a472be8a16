"""headroom-ai's compress() (strategies/adapters/headroom.py) against headroom itself.

Sources, headroom-ai 0.42.0: headroom/compress.py (`compress`, `CompressConfig`, its fail-open), headroom/offline.py
(the air-gap switch), transforms/pipeline.py (compression never adds, drops or reorders messages),
transforms/kompress_compressor.py (Kompress downloads its model), agent_savings.py (its named profiles).
"""
from __future__ import annotations

import json
import random
import subprocess
import sys
from typing import Any

import pytest

from harness.conversation.events import event_log_name, read_events
from harness.conversation.replay import replay_file
from harness.core.errors import ConfigError
from harness.core.frozen import thaw
from harness.results.metrics import compute_metrics
from strategies import StrategySpec, build_strategy
from strategies.adapters import HEADROOM
from tests.adapter_helpers import refused_before_any_run, requires
from tests.reset_helpers import context, tool_call

pytestmark = requires(HEADROOM)

NAME = "headroom.compress"


def _adapter(config: dict[str, Any] | None = None) -> Any:
    return build_strategy(StrategySpec(NAME, config or {}))


def _rows(seed: int, count: int = 300) -> str:
    """A JSON array of records: what headroom's SmartCrusher compresses without a model."""
    rng = random.Random(seed)
    return json.dumps([{"id": f"ORD-{rng.randrange(10 ** 5)}", "qty": rng.randrange(100),
                        "status": rng.choice(["ok", "late"])} for _ in range(count)])


def _history(ctx: Any, results: int = 3) -> list[int]:
    """`results` calls answered by JSON arrays, then the agent's note and a user question; the results' ids."""
    ids = []
    for n in range(results):
        ctx.add_message({"role": "assistant", "content": "", "tool_calls": [tool_call(f"c{n}", "list_orders",
                                                                                     {"page": n})]}, origin="agent")
        ids.append(ctx.add_message({"role": "tool", "tool_call_id": f"c{n}", "name": "list_orders",
                                    "content": _rows(n)}, origin="tool")["id"])
    ctx.add_message({"role": "assistant", "content": "I have the orders."}, origin="agent")
    ctx.add_message({"role": "user", "content": "Which orders are late?"}, origin="user")
    return ids


def _started(config: dict[str, Any] | None = None, **main: Any) -> tuple[Any, Any]:
    adapter = _adapter(config)
    ctx = context(**main)
    ctx.tools = []
    adapter.on_run_start(ctx)
    return adapter, ctx


def _events(ctx: Any, kind: str) -> list[dict[str, Any]]:
    return [event for event in ctx.log.events if event["type"] == kind]


def test_the_view_sent_is_what_compress_returns_for_the_agents_history():
    """compress.py: users call compress(messages, model=...) on the conversation and send result.messages."""
    from headroom import CompressConfig, compress

    adapter, ctx = _started()
    _history(ctx)
    history = [thaw(m) for m in ctx.view.to_messages()]
    adapter.before_request(ctx)
    direct = compress(history, model="claude-sonnet-4-6", model_limit=ctx.budget(),
                      config=CompressConfig(kompress_model="disabled"))
    assert direct.tokens_saved > 0 and any("smart_crusher" in t for t in direct.transforms_applied)
    assert [thaw(m) for m in ctx.view.to_messages()] == direct.messages
    compaction = _events(ctx, "compaction")[-1]
    assert compaction["step"] == "headroom" and compaction["library_tokens_saved"] == direct.tokens_saved
    assert compaction["transforms_applied"] == {t: direct.transforms_applied.count(t)
                                                 for t in direct.transforms_applied}


def test_headroom_is_handed_the_history_as_logged_never_its_own_rewrite(monkeypatch):
    """The agent keeps its own history; headroom rewrites only the copy sent (compress.py's examples)."""
    adapter, ctx = _started()
    ids = _history(ctx)
    adapter.before_request(ctx)
    assert all(ctx.view.is_replaced(cid) for cid in ids)
    seen: list[list[dict[str, Any]]] = []
    real = adapter.lib.compress

    def spy(messages: list[dict[str, Any]], **kwargs: Any) -> Any:
        seen.append(messages)
        return real(messages, **kwargs)

    monkeypatch.setattr(adapter.lib, "compress", spy)
    adapter.before_request(ctx)
    assert [m["content"] for m in seen[0] if m["role"] == "tool"] == [_rows(n) for n in range(3)]
    assert len(_events(ctx, "compaction")) == 1  # the same answer again: the view does not change


def test_a_message_headroom_now_leaves_alone_is_sent_whole_again(monkeypatch):
    adapter, ctx = _started()
    ids = _history(ctx)
    adapter.before_request(ctx)
    monkeypatch.setattr(adapter.lib, "compress", lambda messages, **_: adapter.lib.CompressResult(messages=messages))
    adapter.before_request(ctx)
    assert [ctx.view.message(cid)["content"] for cid in ids] == [_rows(n) for n in range(3)]


def test_every_request_records_what_it_saved_and_the_metrics_sum_it():
    """The numbers behind headroom's claim ("50-90% lower cost"): per request, in ctxbench's count and its own."""
    adapter, ctx = _started()
    _history(ctx)
    adapter.before_request(ctx)
    adapter.before_request(ctx)
    records = _events(ctx, "compression")
    assert [r["request"] for r in records] == [1, 1]  # no response in between: the same request again
    assert all(r["tokens_saved"] == r["tokens_before"] - r["tokens_after"] > 0 for r in records)
    assert records[0]["tokens_after"] == ctx.view.total_tokens
    metrics = compute_metrics(ctx.log.events)
    assert metrics["compressed_requests"] == 2
    assert metrics["compression_saved_tokens"] == sum(r["tokens_saved"] for r in records)


@pytest.mark.parametrize("answer, reason", [
    (lambda messages: messages[:-1], "returned"),
    (lambda messages: [{**m, "role": "user"} if m["role"] == "tool" else m for m in messages], "role or tool call"),
])
def test_an_answer_the_view_cannot_take_is_said_and_sent_uncompressed(answer, reason, monkeypatch):
    """transforms/pipeline.py: compression never adds, drops or reorders messages; an answer that does is not mapped."""
    adapter, ctx = _started()
    ids = _history(ctx)
    before = ctx.view.to_messages()
    monkeypatch.setattr(adapter.lib, "compress",
                        lambda messages, **_: adapter.lib.CompressResult(messages=answer(messages)))
    adapter.before_request(ctx)
    assert reason in " ".join(_events(ctx, "compression_unmapped")[0]["reasons"])
    assert ctx.view.to_messages() == before and not any(ctx.view.is_replaced(cid) for cid in ids)


def test_a_compression_headroom_gives_up_is_sent_as_is_and_its_warning_is_an_event(monkeypatch):
    """compress.py: any error inside is caught, logged ("Compression failed, returning original messages")."""
    import importlib

    adapter, ctx = _started()
    _history(ctx)
    pipeline = importlib.import_module("headroom.compress")._get_pipeline()
    monkeypatch.setattr(pipeline, "apply", lambda *a, **k: (_ for _ in ()).throw(RuntimeError("boom")))
    adapter.before_request(ctx)
    assert not _events(ctx, "compaction")
    assert any("Compression failed" in w["message"] for w in _events(ctx, "library_warning"))


def test_what_headroom_says_once_a_process_is_recorded_by_every_run():
    """Its content detector's warning (once a process) and its tokenizer's (once a model) go to every run alike."""
    runs = []
    for _ in range(2):
        adapter, ctx = _started()
        _history(ctx)
        adapter.before_request(ctx)
        runs.append([(w["logger"], w["message"]) for w in _events(ctx, "library_warning")])
    assert runs[0] == runs[1]


def test_the_mock_is_compressed_as_the_model_it_is_billed_as_and_model_limit_is_the_window():
    """compress(model=..., model_limit=200000): headroom's window default, scaled as the other thresholds are."""
    adapter, ctx = _started(mock={"window": 32000})
    assert adapter.model(ctx) == "claude-sonnet-4-6"
    assert adapter.limits.model_limit == 32000
    assert adapter.threshold_values(None) == {"model_limit": 200_000}
    explicit, ctx = _started({"model": "gpt-4o", "model_limit": 50_000})
    assert explicit.model(ctx) == "gpt-4o" and explicit.limits.model_limit == 50_000


def test_kompress_is_off_by_headrooms_own_switch_and_another_model_is_refused():
    """kompress_compressor.py: Kompress downloads chopratejas/kompress-v2-base from HuggingFace on first use."""
    assert _adapter().options.kompress_model == "disabled"
    with pytest.raises(ConfigError, match=r"kompress_model: only 'disabled' runs offline"):
        _adapter({"kompress_model": "chopratejas/kompress-v2-base"})


@pytest.mark.parametrize("config, message", [
    ({"protect_recnt": 2}, r"unknown key\(s\) 'protect_recnt'"),
    ({"protect_recent": "two"}, r"protect_recent"),
    ({"mode": "fast"}, r"mode: headroom knows null .* and 'agent'"),
    ({"savings_profile": "agent-99"}, r"savings_profile: headroom has no profile 'agent-99'"),
    ({"model_limit": 0}, r"model_limit"),
])
def test_a_configuration_headroom_cannot_take_is_refused_naming_the_option(config, message):
    with pytest.raises(ConfigError, match=message):
        _adapter(config)


def test_a_refused_option_exits_2_before_any_run(tmp_path, capsys):
    assert "mode" in refused_before_any_run(tmp_path, capsys, NAME, {"mode": "fast"})


def test_it_never_reaches_the_network():
    """offline.py: HEADROOM_OFFLINE refuses its beacon, update check and model downloads; tiktoken's encodings are
    litellm's bundled copies, and a model whose encoding is not there (davinci: r50k_base) is counted with headroom's
    estimate, never fetched. Run in a fresh process with every connection refused and recorded."""
    code = """
import json, os, socket
tried = []
def refuse(*args, **kwargs):
    tried.append(repr(args[:2]))
    raise OSError("no network in this test")
socket.getaddrinfo = refuse
socket.socket.connect = lambda self, address: refuse(address)
from strategies import StrategySpec, build_strategy
from tests.reset_helpers import context
for model in ("claude-sonnet-4-6", "gpt-4o", "gpt-5.4", "davinci"):
    adapter = build_strategy(StrategySpec("headroom.compress", {"model": model, "protect_recent": 0}))
    ctx = context()
    ctx.tools = []
    adapter.on_run_start(ctx)
    ctx.add_message({"role": "tool", "tool_call_id": "c0", "content": json.dumps(list(range(2000)))}, origin="tool")
    ctx.add_message({"role": "user", "content": "and now?"}, origin="user")
    adapter.before_request(ctx)
    assert any(e["type"] == "compression" for e in ctx.log.events)
    if model == "davinci":
        assert any("r50k_base" in e["message"] for e in ctx.log.events if e["type"] == "library_warning")
print(json.dumps([os.environ.get("HEADROOM_OFFLINE"), tried]))
"""
    env = {"PYTHONPATH": ".", "LITELLM_LOCAL_MODEL_COST_MAP": "True", "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    assert json.loads(out.stdout.strip().splitlines()[-1]) == ["1", []]


def test_a_suite_run_records_a_compression_per_request_and_replays(run_suite):
    runs = run_suite("smoke", strategies=NAME)
    assert (runs.termination != "error").all()
    assert (runs.libraries.map(tuple) == (HEADROOM.label,)).all()
    for row in runs.itertuples():
        path = runs.attrs["out"] / "events" / event_log_name(row.run_id)
        assert replay_file(path).ok
        events = read_events(path)
        assert len([e for e in events if e["type"] == "compression"]) == \
               len([e for e in events if e["type"] == "llm_call" and e["profile"] == "main"])
