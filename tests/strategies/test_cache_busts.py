"""WarnOnCacheBusts (seed 002): each test names the rule it checks."""
from __future__ import annotations

import json
import warnings

import pytest
from multiturn_lookup import multiturn_suite  # noqa: F401  (a fixture)
from transcripts import make_ctx

from harness.conversation.events import event_log_name, read_events
from harness import api
from harness.core.errors import ConfigError
from harness.models.llm import LLMResult
from harness.models.usage import Usage
from harness.conversation.replay import replay_file
from strategies import StrategySpec, build_strategy
from strategies.warn_on_cache_busts import CacheBustWarning, WarnOnCacheBusts


def respond(strategy: WarnOnCacheBusts, ctx, read: int | None, write: int | None = 0) -> None:
    ctx.requests += 1
    usage = Usage(input_tokens=(read or 0) + (write or 0) + 10, cached_tokens=read, cache_write_tokens=write,
                  output_tokens=5)
    strategy.after_response(ctx, LLMResult({"role": "assistant", "content": ""}, usage, None, None, 0.0))


def busts(ctx) -> list[dict]:
    return [e for e in ctx.log.events if e["type"] == "cache_bust_warning"]


def test_defaults_are_the_references_values():
    """REFERENCES: WarnOnCacheBusts(collapse_ratio=0.5, min_prefix_tokens=1024, cache_ttl_seconds=300)."""
    config = WarnOnCacheBusts().config
    assert (config.collapse_ratio, config.min_prefix_tokens, config.cache_ttl_seconds) == (0.5, 1024, 300)


def test_an_established_prefix_dropping_below_half_warns_with_event_and_python_warning():
    """'If an established cached prefix (at least 1,024 tokens) drops below half its size mid-run,
    it raises a CacheBustWarning'."""
    strategy, ctx = WarnOnCacheBusts(), make_ctx()
    respond(strategy, ctx, 0, 3_000)
    respond(strategy, ctx, 3_000, 200)
    with pytest.warns(CacheBustWarning, match="cache bust at request 3"):
        respond(strategy, ctx, 1_500, 1_800)
    [event] = busts(ctx)
    assert event["cached_tokens"] == 1_500 and event["established_prefix_tokens"] == 3_200
    assert event["likely_cause"] == "prefix_changed"


def test_one_bust_warns_once_and_a_new_prefix_is_watched_again():
    strategy, ctx = WarnOnCacheBusts(), make_ctx()
    respond(strategy, ctx, 0, 4_000)
    with pytest.warns(CacheBustWarning):
        respond(strategy, ctx, 100, 4_100)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        respond(strategy, ctx, 4_200, 100)  # the new prefix is read back: quiet
    with pytest.warns(CacheBustWarning):
        respond(strategy, ctx, 0, 4_300)
    assert len(busts(ctx)) == 2


def test_ordinary_partial_misses_and_small_prefixes_stay_quiet():
    """'The thresholds are deliberately conservative, so ordinary partial misses stay quiet.'"""
    strategy, ctx = WarnOnCacheBusts(), make_ctx()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        respond(strategy, ctx, 0, 1_000)  # under 1,024: not established
        respond(strategy, ctx, 0, 1_000)
        respond(strategy, ctx, 1_000, 1_500)  # now 2,500 established
        respond(strategy, ctx, 1_300, 1_300)  # 1,300 >= half of 2,500: a partial miss
        respond(strategy, ctx, None, None)  # no cache reported at all
    assert not busts(ctx)


@pytest.mark.parametrize("config, message", [
    ({"collapse_ratio": 0}, "collapse_ratio must be in (0, 1]"),
    ({"min_prefix_tokens": 0}, "min_prefix_tokens must be at least 1"),
    ({"cache_ttl_seconds": -1}, "cache_ttl_seconds must be positive"),
    ({"ratio": 0.5}, "unknown key(s) 'ratio'"),
])
def test_bad_config_is_refused(config, message):
    with pytest.raises(ConfigError) as error:
        build_strategy(StrategySpec("warn_on_cache_busts", config))
    assert message in str(error.value)


def test_it_only_observes_views_are_identical_with_and_without_it(multiturn_suite, tmp_path):
    """'It only observes: no tools, no instructions, no change to behaviour.' The ladder's turn-boundary
    trims bust the cache, so it warns there, and every view sent is the same as without it."""
    ladder = {"turn_boundary_target": 3_000, "clear_tool_max_tokens": 100, "clear_tool_keep_pairs": 1,
              "min_clear_tokens": 0}
    specs = [StrategySpec("compaction_ladder", ladder, label="plain"),
             StrategySpec("compaction_ladder", {**ladder, "with": ["warn_on_cache_busts"]}, label="watched")]
    assert build_strategy(specs[1]).parts[1].tools() == []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = api.run(multiturn_suite, strategies=specs, profiles=api.mock_profiles(), out=tmp_path / "o")
    rows = {r["strategy"]: r for r in map(json.loads, (out / "runs.jsonl").read_text().splitlines())}
    assert rows["plain"]["cache_bust_warnings"] == 0
    assert rows["watched"]["cache_bust_warnings"] >= 1
    assert any(issubclass(w.category, CacheBustWarning) for w in caught)

    def sent(label: str) -> list[tuple]:
        events = read_events(out / "events" / event_log_name(f"mt-0--{label}--s0"))
        return [(e["view_hash"], e["usage"]["input_tokens"], e["usage"]["cached_tokens"])
                for e in events if e["type"] == "llm_call"]

    assert sent("plain") == sent("watched")
    for key in ("success", "requests", "input_tokens", "cached_tokens", "compactions", "rereads"):
        assert rows["plain"][key] == rows["watched"][key]
    assert all(replay_file(path).ok for path in (out / "events").glob("*.jsonl.gz"))
