"""compaction_ladder: each test names the rule of seed 002 ("Compaction") it checks."""
from __future__ import annotations

import json

import pytest
import yaml
from multiturn_lookup import multiturn_suite  # noqa: F401  (a fixture)
from transcripts import exchange, make_ctx, pairing_intact, replays, user, words

from harness import api
from harness.core.errors import ConfigError
from harness.conversation.replay import replay_file
from strategies import StrategySpec, build_strategy, history
from strategies.compaction_ladder import PRESETS, CompactionLadder, LadderConfig

SEED_COMPACT_BLOCK = """
compact:
  turn_boundary: true
  turn_boundary_target: 100000   # routine budget at the start of each turn
  target_tokens: 200000          # emergency ceiling during a turn
  window_max_messages: 100
  window_keep_messages: 20
  clear_tool_max_tokens: 5000    # older tool results above this may be cleared
  clear_tool_keep_pairs: 6       # always keep this many recent pairs
  min_clear_tokens: 10000        # skip a clear that reclaims less than this
"""


LIBRARY_FIELDS = {"clamp_keep_head_chars": 2_000, "clamp_keep_tail_chars": 2_000, "clamp_tool_call_args": True,
                  "clear_tool_placeholder": "[tool result cleared]"}


def ladder(**config) -> CompactionLadder:
    return CompactionLadder.from_config(config)


def compactions(ctx) -> list[dict]:
    return [e for e in ctx.log.events if e["type"] == "compaction"]


# ----- configuration: "Tuning" block, built-in tiny defaults


def test_seed_compact_block_is_accepted_nested_and_as_the_config_itself():
    """Tuning: the seed's own `compact:` YAML block, every key, nested or flat."""
    block = yaml.safe_load(SEED_COMPACT_BLOCK)
    nested = CompactionLadder.from_config(block).config
    flat = CompactionLadder.from_config(block["compact"]).config
    assert nested == flat == LadderConfig(**block["compact"])
    # every seed key is a field; the rest are pydantic-ai-harness's defaults for what the seed leaves open
    assert set(LadderConfig.__dataclass_fields__) - set(block["compact"]) == set(LIBRARY_FIELDS)


def test_defaults_are_the_seeds_real_work_values():
    """Tuning: the seed's values for real work are the defaults, at the 200k window the seed's numbers are for
    (its token values are fractions of the run's input budget: strategies.thresholds)."""
    assert CompactionLadder.from_config({}).limits == LadderConfig(**yaml.safe_load(SEED_COMPACT_BLOCK)["compact"])


def test_tiny_preset_has_the_4000_token_target():
    """'The code's built-in defaults are tiny (a 4,000-token target)': a named preset, overridable."""
    tiny = CompactionLadder.from_config({"preset": "tiny"}).config
    assert tiny.target_tokens == 4_000
    assert tiny.turn_boundary_target <= tiny.target_tokens
    assert CompactionLadder.from_config({"preset": "tiny", "target_tokens": 8_000}).config.target_tokens == 8_000
    assert set(PRESETS) == {"real_work", "tiny"}


@pytest.mark.parametrize("config, words_in_error", [
    ({"target_token": 5}, ["unknown key", "'target_token'"]),
    ({"compact": {"keep_pairs": 3}}, ["compact", "unknown key", "'keep_pairs'"]),
    ({"window_keep_messages": 30, "window_max_messages": 10}, ["window_keep_messages (30)", "window_max_messages (10)"]),
    ({"target_tokens": -1}, ["target_tokens must be positive"]),
    ({"min_clear_tokens": -5}, ["min_clear_tokens must be 0 or more"]),
    ({"clear_tool_max_tokens": -1}, ["clear_tool_max_tokens must be 0 or more"]),
    ({"turn_boundary_target": 300_000, "target_tokens": 200_000},
     ["turn_boundary_target (300000)", "target_tokens (200000)"]),
    ({"turn_boundary": "yes"}, ["turn_boundary", "true or false"]),
    ({"preset": "huge"}, ["unknown preset 'huge'"]),
    ({"compact": {}, "target_tokens": 5}, ["either nested", "'target_tokens'"]),
    ({"compact": [1]}, ["expected a mapping"]),
])
def test_unknown_keys_and_impossible_values_are_refused(config, words_in_error):
    with pytest.raises(ConfigError) as error:
        build_strategy(StrategySpec("compaction_ladder", config))
    for text in words_in_error:
        assert text in str(error.value)


def test_bad_config_fails_before_any_model_call(tmp_path):
    """Refused with a clear error before any model call: no run starts."""
    with pytest.raises(ConfigError, match="window_keep_messages"):
        api.run("smoke", strategies=[StrategySpec("compaction_ladder", {"window_keep_messages": 500})],
                profiles=api.mock_profiles(), out=tmp_path / "out")
    assert not (tmp_path / "out").exists()


# ----- "It never touches the turn in progress"


def two_turns(result_tokens: int = 1_000, pairs: int = 4):
    """A settled turn of `pairs` big tool exchanges, then a turn in progress with as many."""
    ctx = make_ctx()
    user(ctx, "first task")
    settled = [exchange(ctx, "read_file", {"path": f"a{i}"}, words(result_tokens, f"a{i}_")) for i in range(pairs)]
    prompt = user(ctx, "second request")
    ctx.turn_start = False
    current = [exchange(ctx, "read_file", {"path": f"b{i}"}, words(result_tokens, f"b{i}_")) for i in range(pairs)]
    return ctx, settled, prompt, current


def test_the_turn_in_progress_is_never_touched():
    """'It never touches the turn in progress': even a pass that cannot fit leaves it as it was."""
    ctx, settled, prompt, current = two_turns()
    position = ctx.view.ids.index(prompt)
    in_progress = ctx.view.ids[position:]
    before = {i: ctx.view.message(i) for i in in_progress}
    strategy = ladder(turn_boundary_target=100, target_tokens=500, clear_tool_max_tokens=10,
                      clear_tool_keep_pairs=0, min_clear_tokens=0, window_keep_messages=0)
    strategy.before_request(ctx)  # in-turn and over target_tokens: an emergency pass
    assert compactions(ctx), "the settled turn should have been compacted"
    assert ctx.view.ids[-len(in_progress):] == in_progress
    assert all(ctx.view.message(i) == before[i] and not ctx.view.is_replaced(i) for i in in_progress)
    assert all(i not in in_progress for e in compactions(ctx) for i in e["message_ids"])
    assert pairing_intact(ctx) and replays(ctx)


def test_window_only_evicts_messages_before_the_latest_real_user_prompt():
    """'The window only evicts messages before the latest real user prompt'; a strategy's own
    user-role message is not a real prompt."""
    ctx, settled, prompt, current = two_turns(result_tokens=200)
    ctx.add_message({"role": "user", "content": "[a reminder injected by a strategy]"}, origin="strategy")
    strategy = ladder(turn_boundary_target=50, target_tokens=100, clear_tool_keep_pairs=0, min_clear_tokens=10**6,
                      window_keep_messages=0)
    strategy.before_request(ctx)
    dropped = {i for e in compactions(ctx) if e["step"] == "window" for i in e["message_ids"]}
    assert dropped and max(dropped) < prompt
    assert {call for pair in current for call in pair} <= set(ctx.view.ids)


# ----- the three steps


def test_clamp_keeps_head_and_tail_of_an_oversized_message_and_stops_when_it_fits():
    """Step 1: 'Clamp any single oversized message part to its head and tail', stopping as soon as it fits.
    The part is a model response's text (pydantic-ai-harness ClampOversizedMessages.compact), its head and
    tail 2,000 characters each (keep_head_chars, keep_tail_chars) around the library's marker."""
    ctx = make_ctx()
    user(ctx, "task")
    text = "HEAD " + words(8_000) + " TAIL"
    big = ctx.add_message({"role": "assistant", "content": text}, origin="agent")["id"]
    later = ctx.add_message({"role": "assistant", "content": "OTHER " + words(8_000)}, origin="agent")["id"]
    user(ctx, "next")
    ladder(turn_boundary_target=13_000, target_tokens=18_000).before_request(ctx)
    assert [e["step"] for e in compactions(ctx)] == ["clamp"]
    content = ctx.view.message(big)["content"]
    assert content == text[:2_000] + f"\n[clamped: removed {len(text) - 4_000} of {len(text)} characters]\n" \
        + text[-2_000:]
    assert not ctx.view.is_replaced(later), "it stops as soon as the context fits"
    assert ctx.prompt_tokens_estimate() <= 13_000
    assert replays(ctx)


def test_clamp_leaves_tool_results_and_user_messages_whole():
    """The clamp's scope is model-response parts only (ClampOversizedMessages: 'Request-side parts (user
    prompts, tool returns, system prompts) are out of scope'); the old code clamped a big tool result."""
    ctx = make_ctx()
    user(ctx, "task " + words(3_000))
    _, big = exchange(ctx, "read_file", {"path": "big"}, "HEAD " + words(8_000) + " TAIL")
    user(ctx, "next")
    ladder(turn_boundary_target=4_000, target_tokens=8_000, clear_tool_max_tokens=10**6,
           window_max_messages=100).before_request(ctx)
    assert not any(e["step"] == "clamp" for e in compactions(ctx))
    assert not ctx.view.is_replaced(big) or "clamped" not in ctx.view.message(big).get("content", "")


def test_clamp_replaces_oversized_tool_call_arguments_with_a_json_object():
    """clamp_tool_call_args=True (ClampOversizedMessages): oversized arguments become {"_clamped": head+marker+tail},
    still valid JSON function arguments; the call keeps its id and its result."""
    ctx = make_ctx()
    user(ctx, "task")
    call, result = exchange(ctx, "write_file", {"path": "x", "text": words(8_000)}, "ok")
    user(ctx, "next")
    ladder(turn_boundary_target=2_000, target_tokens=8_000).before_request(ctx)
    arguments = ctx.view.message(call)["tool_calls"][0]["function"]["arguments"]
    clamped = json.loads(arguments)["_clamped"]
    assert clamped.startswith('{"path":"x"') and "[clamped: removed " in clamped  # the library clamps its compact JSON (args_as_json_str)
    assert ctx.view.message(result)["content"] == "ok" and pairing_intact(ctx)
    off = make_ctx()
    user(off, "task")
    exchange(off, "write_file", {"path": "x", "text": words(8_000)}, "ok")
    user(off, "next")
    ladder(turn_boundary_target=2_000, target_tokens=8_000, clamp_tool_call_args=False).before_request(off)
    assert not any(e["step"] == "clamp" for e in compactions(off))


def clear_history(pairs: int = 8, tokens: int = 600):
    ctx = make_ctx()
    user(ctx, "task")
    results = [exchange(ctx, "search", {"text": f"q{i}"}, words(tokens, f"r{i}_"))[1] for i in range(pairs)]
    user(ctx, "next")
    return ctx, results


def test_clearing_keeps_the_most_recent_pairs_intact():
    """Step 2: 'Clear old tool results to a placeholder, keeping the most recent call/result pairs intact'."""
    ctx, results = clear_history()
    ladder(turn_boundary_target=2_000, target_tokens=8_000, clear_tool_max_tokens=100, clear_tool_keep_pairs=3,
           min_clear_tokens=0, window_keep_messages=0).before_request(ctx)
    cleared = [i for i in results if ctx.view.is_replaced(i)]
    assert cleared and cleared == results[: len(cleared)], "oldest results are cleared first"
    assert not any(ctx.view.is_replaced(i) for i in results[-3:])
    # the placeholder is ClearToolResults' default ('[tool result cleared]'), a config field
    assert ctx.view.message(cleared[0])["content"] == "[tool result cleared]"
    assert [e["step"] for e in compactions(ctx)][0] == "clear"
    assert pairing_intact(ctx) and replays(ctx)


def test_only_results_above_clear_tool_max_tokens_are_cleared():
    """clear_tool_max_tokens: 'older tool results above this may be cleared'."""
    ctx = make_ctx()
    user(ctx, "task")
    small = [exchange(ctx, "search", {"text": f"s{i}"}, words(80, f"s{i}_"))[1] for i in range(6)]
    big = exchange(ctx, "read_file", {"path": "x"}, words(900, "big"))[1]
    user(ctx, "next")
    ladder(turn_boundary_target=500, target_tokens=8_000, clear_tool_max_tokens=100, clear_tool_keep_pairs=0,
           min_clear_tokens=0, window_keep_messages=30).before_request(ctx)
    assert ctx.view.is_replaced(big)
    assert not any(ctx.view.is_replaced(i) for i in small)


def test_min_clear_tokens_blocks_a_small_clear():
    """min_clear_tokens, the cache guard: 'skip a clear that reclaims less than this'."""
    ctx, results = clear_history(pairs=4, tokens=300)
    strategy = ladder(turn_boundary_target=1_000, target_tokens=8_000, clear_tool_max_tokens=100,
                      clear_tool_keep_pairs=1, min_clear_tokens=5_000, window_keep_messages=40)
    strategy.before_request(ctx)
    assert not any(ctx.view.is_replaced(i) for i in results)
    skipped = [e for e in ctx.log.events if e["type"] == "compaction_skipped"]
    assert len(skipped) == 1 and skipped[0]["step"] == "clear"
    assert 0 < skipped[0]["would_reclaim_tokens"] < 5_000
    assert not any(e["step"] == "clear" for e in compactions(ctx))


def test_a_clear_that_reclaims_enough_is_made():
    """The same history and budget clears when min_clear_tokens is within reach."""
    ctx, results = clear_history(pairs=4, tokens=300)
    ladder(turn_boundary_target=1_000, target_tokens=8_000, clear_tool_max_tokens=100, clear_tool_keep_pairs=1,
           min_clear_tokens=200, window_keep_messages=40).before_request(ctx)
    assert any(ctx.view.is_replaced(i) for i in results)


def test_window_drops_oldest_settled_messages_never_splitting_a_pair():
    """Step 3: 'Slide the window: drop the oldest settled messages'; no call without its result or result
    without its call; the first user message (the task) stays."""
    ctx = make_ctx()
    first = user(ctx, "task statement")
    pairs = [exchange(ctx, "search", {"text": f"q{i}"}, words(150, f"r{i}_")) for i in range(10)]
    user(ctx, "next")
    ladder(turn_boundary_target=1_000, target_tokens=8_000, clear_tool_max_tokens=10**6, min_clear_tokens=0,
           window_keep_messages=2).before_request(ctx)
    assert [e["step"] for e in compactions(ctx)] == ["window"]
    assert ctx.view.ids[:2] == [0, first]  # system prompt and task kept
    kept = [p for p in pairs if p[0] in ctx.view.ids]
    assert kept and kept == pairs[len(pairs) - len(kept):], "the oldest go first"
    assert pairing_intact(ctx) and replays(ctx)
    assert ctx.prompt_tokens_estimate() <= 1_000


def test_window_max_messages_slides_down_to_window_keep_messages():
    """window_max_messages / window_keep_messages: over the count, slide to the kept count."""
    ctx = make_ctx()
    user(ctx, "task")
    for i in range(12):
        exchange(ctx, "search", {"text": f"q{i}"}, f"r{i}")
    user(ctx, "next")
    tail = ctx.view.ids[-8:]
    ladder(window_max_messages=20, window_keep_messages=8).before_request(ctx)
    assert ctx.view.ids[-8:] == tail
    # the kept tail, the system prompt and task, and at most one message that a pair holds on to
    assert len(ctx.view.ids) <= 8 + 2 + 1
    assert [e["step"] for e in compactions(ctx)] == ["window"]
    assert pairing_intact(ctx)


def test_each_step_stops_as_soon_as_the_context_fits():
    """'tried in order, each stopping as soon as the context fits its budget': a clear that fits ends the pass."""
    ctx, results = clear_history(pairs=8, tokens=600)
    before = ctx.prompt_tokens_estimate()
    ladder(turn_boundary_target=before - 700, target_tokens=8_000, clear_tool_max_tokens=100,
           clear_tool_keep_pairs=0, min_clear_tokens=0).before_request(ctx)
    assert [e["step"] for e in compactions(ctx)] == ["clear"]
    assert sum(ctx.view.is_replaced(i) for i in results) == 2


def test_compaction_event_records_step_sizes_and_view_ops():
    """Every edit is a `compaction` event with step, tokens_before/after, reclaimed_tokens and view_ops."""
    ctx, _ = clear_history()
    ladder(turn_boundary_target=1_000, target_tokens=8_000, clear_tool_max_tokens=100, clear_tool_keep_pairs=2,
           min_clear_tokens=0, window_keep_messages=2).before_request(ctx)
    events = compactions(ctx)
    assert events
    for event in events:
        assert {"step", "trigger", "tokens_before", "tokens_after", "reclaimed_tokens", "view_ops"} <= set(event)
        assert event["reclaimed_tokens"] == event["tokens_before"] - event["tokens_after"] > 0
        assert event["trigger"] == "turn_boundary"
    assert events[-1]["tokens_after"] == ctx.prompt_tokens_estimate()


# ----- "When it runs"


def test_turn_boundary_pass_trims_to_turn_boundary_target_at_turn_start_only():
    """turn_boundary: true: 'compaction runs at the start of each turn ... trimming to turn_boundary_target'."""
    ctx, results = clear_history(pairs=6, tokens=600)
    strategy = ladder(turn_boundary_target=1_500, target_tokens=50_000, clear_tool_max_tokens=100,
                      clear_tool_keep_pairs=1, min_clear_tokens=0)
    ctx.turn_start = False
    strategy.before_request(ctx)  # mid-turn, under target_tokens: nothing
    assert not compactions(ctx)
    ctx.turn_start = True
    strategy.before_request(ctx)
    assert [e["trigger"] for e in compactions(ctx)] == ["turn_boundary"]
    assert ctx.prompt_tokens_estimate() <= 1_500


def test_emergency_pass_runs_in_turn_only_above_target_tokens():
    """'A second, emergency pass runs during a turn only if the context passes target_tokens'."""
    ctx, settled, prompt, current = two_turns(result_tokens=500)
    size = ctx.prompt_tokens_estimate()
    ladder(turn_boundary_target=100, target_tokens=size, clear_tool_max_tokens=10, clear_tool_keep_pairs=0,
           min_clear_tokens=0).before_request(ctx)
    assert not compactions(ctx)
    ladder(turn_boundary_target=100, target_tokens=size - 1, clear_tool_max_tokens=10, clear_tool_keep_pairs=0,
           min_clear_tokens=0).before_request(ctx)
    assert compactions(ctx) and all(e["trigger"] == "emergency" for e in compactions(ctx))
    assert ctx.prompt_tokens_estimate() <= size - 1


def test_turn_boundary_false_trims_before_every_request_to_target_tokens():
    """turn_boundary: false: a pass before every request, down to target_tokens."""
    ctx, _ = clear_history(pairs=6, tokens=600)
    ctx.turn_start = False
    ladder(turn_boundary=False, turn_boundary_target=1_000, target_tokens=2_000, clear_tool_max_tokens=100,
           clear_tool_keep_pairs=1, min_clear_tokens=0).before_request(ctx)
    assert {e["trigger"] for e in compactions(ctx)} == {"per_request"}
    assert ctx.prompt_tokens_estimate() <= 2_000


def test_context_window_error_retries_only_when_the_view_shrank():
    """on_context_window_error: an emergency pass; True only if it actually reduced the view."""
    error = RuntimeError("prompt is too long")
    single = make_ctx()
    user(single, "only turn")
    single.turn_start = False
    exchange(single, "read_file", {"path": "x"}, words(3_000))
    assert ladder(preset="tiny").on_context_window_error(single, error) is False
    ctx, *_ = two_turns(result_tokens=600)
    before = ctx.prompt_tokens_estimate()
    assert ladder(preset="tiny").on_context_window_error(ctx, error) is True
    assert ctx.prompt_tokens_estimate() < before
    assert {e["trigger"] for e in compactions(ctx)} == {"context_window_error"}


# ----- the seed's cache claim, measured with the mock's cache


TRIM = {"turn_boundary_target": 3_000, "clear_tool_max_tokens": 100, "clear_tool_keep_pairs": 1, "min_clear_tokens": 0}


def test_turn_boundary_trimming_gives_a_higher_cache_hit_rate_than_trimming_before_every_request(
        multiturn_suite, tmp_path):
    """Seed: 'A trim at the turn boundary costs one cache miss per turn instead of one per request.'
    Same task, same budget, the mock's Anthropic-style prefix cache."""
    specs = [StrategySpec("compaction_ladder", {**TRIM, "target_tokens": 200_000}, label="turn_boundary"),
             StrategySpec("compaction_ladder", {**TRIM, "turn_boundary": False, "target_tokens": 3_000},
                          label="every_request")]
    out = api.run(multiturn_suite, strategies=specs, profiles=api.mock_profiles(), out=tmp_path / "cache")
    rows = {r["strategy"]: r for r in map(json.loads, (out / "runs.jsonl").read_text().splitlines())}
    boundary, every = rows["turn_boundary"], rows["every_request"]
    assert boundary["compactions"] >= 1 and every["compactions"] > boundary["compactions"]
    assert boundary["cache_hit_rate"] > every["cache_hit_rate"]
    assert 0 < boundary["compaction_cache_read_lost_tokens"] < every["compaction_cache_read_lost_tokens"]
    for row in (boundary, every):  # metrics: edits and tokens reclaimed by step
        assert sum(row["compactions_by_step"].values()) == row["compactions"]
        assert sum(row["compaction_reclaimed_by_step"].values()) == row["compaction_reclaimed_tokens"] > 0
    for path in (out / "events").glob("*.jsonl.gz"):
        report = replay_file(path)
        assert report.ok, report.mismatches


def test_real_work_defaults_leave_small_multiturn_runs_alone(multiturn_suite, tmp_path):
    """With the seed's real-work budget (100,000 tokens a turn) a small task is never compacted."""
    out = api.run(multiturn_suite, strategies=["compaction_ladder"], profiles=api.mock_profiles(), out=tmp_path / "d")
    row = json.loads((out / "runs.jsonl").read_text().splitlines()[0])
    assert row["compactions"] == 0 and row["success"]


def test_keep_pairs_larger_than_the_pairs_present_keeps_them_all():
    """'clear_tool_keep_pairs: 6 # always keep this many recent pairs' with 4 pairs clears none
    (ClearToolResults.compact: pairs[: max(0, len(pairs) - keep_pairs)]); the old slice with a negative
    start kept 2 and cleared 2."""
    ctx, results = clear_history(pairs=4, tokens=600)
    ladder(turn_boundary_target=500, target_tokens=8_000, clear_tool_max_tokens=100, clear_tool_keep_pairs=6,
           min_clear_tokens=0, window_max_messages=100).before_request(ctx)
    assert not any(ctx.view.is_replaced(i) for i in results)


def parallel_history(exchanges: int = 6, width: int = 3):
    """A task, then `exchanges` responses of `width` parallel calls each with their results, then a new prompt."""
    ctx = make_ctx()
    user(ctx, "task")
    blocks = []
    for i in range(exchanges):
        calls = [{"id": f"c{i}_{k}", "type": "function", "function": {"name": "search", "arguments": "{}"}}
                 for k in range(width)]
        block = [ctx.add_message({"role": "assistant", "content": "", "tool_calls": calls}, origin="agent")["id"]]
        block += [ctx.add_message({"role": "tool", "tool_call_id": f"c{i}_{k}", "name": "search",
                                   "content": f"r{i}{k}"}, origin="tool")["id"] for k in range(width)]
        blocks.append(block)
    ctx.turn_start = False
    user(ctx, "next")
    return ctx, blocks


@pytest.mark.parametrize("keep", [4, 3])
def test_window_counts_messages_as_pydantic_ai_does_and_keeps_at_least_the_kept_tail(keep):
    """SlidingWindowCompaction.compact: a response's parallel results are one ModelRequest (one message),
    and find_safe_cutoff moves the cut earlier rather than splitting a pair, so at least
    window_keep_messages stay; the first user message is put back (prepend_first_user_message)."""
    ctx, blocks = parallel_history()
    # 13 library messages: [system, task], 6 x (response, results) with the last results merged with 'next'
    assert len(history.library_messages(ctx.view)) == 13
    ladder(window_max_messages=10, window_keep_messages=keep).before_request(ctx)
    assert [e["step"] for e in compactions(ctx)] == ["window"]
    assert ctx.view.ids == ctx.view.ids[:2] + [i for block in blocks[4:] for i in block] + [ctx.view.ids[-1]]
    assert ctx.view.ids[:2] == [0, 1] and pairing_intact(ctx) and replays(ctx)


def _random_view(rng):
    """A view of parallel calls whose results come late, out of order, or never; plain messages between."""
    from harness.conversation.events import EventLog
    from harness.conversation.view import ViewState
    log, view, pending, n = EventLog(), ViewState(), [], 0
    view.apply(log.append("message", message={"role": "user", "content": "task"}, origin="user"))
    for _ in range(rng.randint(0, 40)):
        kind = rng.random()
        if kind < 0.35:
            calls = [{"id": f"c{n}_{k}", "type": "function", "function": {"name": "search", "arguments": "{}"}}
                     for k in range(rng.randint(1, 3))]
            n += 1
            pending += [c["id"] for c in calls]
            message = {"role": "assistant", "content": "", "tool_calls": calls}
        elif kind < 0.75 and pending:
            call_id = pending.pop(rng.randrange(len(pending)))
            message = {"role": "tool", "tool_call_id": call_id, "name": "search", "content": call_id}
        else:
            message = {"role": rng.choice(["user", "assistant"]), "content": "note"}
        view.apply(log.append("message", message=message, origin="agent"))
    return view


def test_library_messages_safe_cuts_and_clearable_pairs_equal_their_definitions_on_random_views():
    """Ours: library_messages tracks the last group's side, safe_cuts counts the spans open
    at each cut in one pass and clearable_pairs sorts by a position table; each must give what its definition
    gives (pydantic-ai's message count; no cut inside a call..result span; every returned pair but the last
    keep, in result order)."""
    import random

    from strategies.compaction_ladder import clearable_pairs, safe_cuts
    rng = random.Random(24)
    for _ in range(300):
        view = _random_view(rng)
        groups = history.library_messages(view)
        by_definition: list[list[int]] = []  # each response alone, each run of request-side messages as one
        for message_id in view.ids:
            request_side = view.messages[message_id].get("role") != "assistant"
            if request_side and by_definition and view.messages[by_definition[-1][0]].get("role") != "assistant":
                by_definition[-1].append(message_id)
            else:
                by_definition.append([message_id])
        assert groups == by_definition
        group_of = {i: g for g, group in enumerate(groups) for i in group}
        spans = [(group_of[p.assistant_id], group_of[p.result_id]) for p in history.tool_pairs(view)
                 if p.result_id is not None]
        assert safe_cuts(view, groups) == [
            cut for cut in range(1, len(groups) + 1) if not any(call < cut <= result for call, result in spans)]
        answered = sorted((p for p in history.tool_pairs(view) if p.result_id is not None),
                          key=lambda p: view.ids.index(p.result_id))
        for keep in (0, 2):
            assert clearable_pairs(view, keep) == answered[: max(0, len(answered) - keep)]
