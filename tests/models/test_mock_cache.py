"""Mock provider prompt caching, per REFERENCES.md 'Prompt caching'."""
from harness.models.mock.cache import PrefixCache


def test_openai_style_caches_nothing_under_1024_tokens():
    cache = PrefixCache(style="openai")
    assert cache.request(["a", "b"], [500, 400], 0.0) == (0, None, 0)
    assert cache.request(["a", "b"], [500, 400], 1.0) == (0, None, 0)


def test_openai_style_reports_the_longest_matching_prefix_in_128_token_steps():
    cache = PrefixCache(style="openai")
    cache.request(["tools", "m1", "m2"], [300, 900, 700], 0.0)
    cached, written, _ = cache.request(["tools", "m1", "m2", "m3"], [300, 900, 700, 50], 1.0)
    assert written is None  # OpenAI reports no cache writes
    assert cached == 1024 + (1900 - 1024) // 128 * 128  # 1792
    # A changed early block breaks the prefix from that point on.
    cached, *_ = cache.request(["tools", "m1-edited", "m2", "m3"], [300, 900, 700, 50], 2.0)
    assert cached == 0


def test_anthropic_style_writes_then_reads_the_previous_prefix():
    cache = PrefixCache(style="anthropic")
    assert cache.request(["t", "m1"], [800, 800], 0.0)[:2] == (0, 1600)
    assert cache.request(["t", "m1", "m2", "m3"], [800, 800, 300, 200], 10.0)[:2] == (1600, 500)


def test_anthropic_style_entries_expire_after_the_ttl_on_the_simulated_clock():
    cache = PrefixCache(style="anthropic", ttl_s=300)
    cache.request(["t", "m1"], [800, 800], 0.0)
    assert cache.request(["t", "m1", "m2"], [800, 800, 10], 301.0)[:2] == (0, 1610)


def test_anthropic_style_reads_refresh_the_ttl():
    cache = PrefixCache(style="anthropic", ttl_s=300)
    cache.request(["t", "m1"], [800, 800], 0.0)
    cache.request(["t", "m1"], [800, 800], 200.0)  # read at 200 s extends to 500 s
    assert cache.request(["t", "m1"], [800, 800], 450.0)[:2] == (1600, 0)


def test_anthropic_style_never_caches_short_prompts():
    cache = PrefixCache(style="anthropic")
    assert cache.request(["t"], [1000], 0.0)[:2] == (0, 0)
    assert cache.request(["t", "m"], [1000, 30], 1.0)[:2] == (0, 1030)


def test_no_cache_style_reports_zero_reads_and_unknown_writes():
    assert PrefixCache(style="none").request(["t"], [5000], 0.0) == (0, None, 0)


def test_block_chain_reuses_a_shared_prefix_and_equals_a_fresh_reading_after_any_edit():
    """Incremental reading must give the prefix keys a whole reading gives, whatever the view did;
    a block is read again only where the object at its position changed."""
    from harness.models.mock.cache import BlockChain

    reads = []
    key_of = lambda block: (reads.append(block) or block["k"])  # noqa: E731
    tokens_of = lambda block: block["n"]  # noqa: E731
    blocks = [{"k": f"m{i}", "n": 10 + i} for i in range(6)]
    chain = BlockChain()
    steps = [blocks[:3], blocks[:5], blocks[:2] + [{"k": "placeholder", "n": 1}] + blocks[3:5],
             blocks[:4], [blocks[0], blocks[4]], list(blocks)]
    for view in steps:
        reads.clear()
        previous = list(chain.blocks)
        total = chain.read(view, key_of, tokens_of)
        fresh = BlockChain()
        assert fresh.read(view, key_of, tokens_of) == total == sum(b["n"] for b in view)
        assert (chain.prefix_keys, chain.cumulative) == (fresh.prefix_keys, fresh.cumulative)
        shared = next((i for i, (a, b) in enumerate(zip(previous, view)) if a is not b), min(len(previous), len(view)))
        new = [p for p in range(shared, len(view)) if p >= len(previous) or view[p] is not previous[p]]
        assert len(reads) == len(new) + len(view)  # blocks new at their position here, the whole view for `fresh`


def test_shared_prefix_is_the_first_position_where_the_items_differ():
    """harness.models.mock.prefix.shared_prefix (halving over slice comparisons) against an item-by-item scan, on
    random edits of lists and tuples of messages: appended, replaced in place (same or equal object),
    dropped from the front, reset."""
    import random

    from harness.models.mock.prefix import shared_prefix

    rng = random.Random(5)
    for _ in range(3000):
        old = [{"role": "tool", "content": str(rng.randint(0, 3))} for _ in range(rng.randint(0, 40))]
        new = list(old)
        for _ in range(rng.randint(0, 3)):
            edit = rng.choice(["append", "replace", "equal copy", "drop front", "reset"])
            if edit == "append" or not new:
                new.append({"role": "assistant", "content": "next"})
            elif edit == "replace":
                new[rng.randrange(len(new))] = {"role": "tool", "content": "[masked]"}
            elif edit == "equal copy":
                at = rng.randrange(len(new))
                new[at] = dict(new[at])
            elif edit == "drop front":
                del new[: rng.randint(1, len(new))]
            else:
                new = [{"role": "user", "content": "again"}]
        sent = tuple(old) if rng.random() < 0.5 else old
        expected = next((i for i, (a, b) in enumerate(zip(sent, new)) if not (a is b or a == b)), min(len(old), len(new)))
        assert shared_prefix(sent, new) == expected


# Anthropic's rules, each from its prompt-caching guide (https://platform.claude.com/docs/en/build-with-claude/
# prompt-caching; docs/mock.md gives the table of rules, values and sources).

def test_anthropic_caches_nothing_without_a_breakpoint():
    cache = PrefixCache(style="anthropic")
    assert cache.request(["t", "m1"], [800, 800], 0.0, breakpoints=()) == (0, 0, 0)
    assert cache.request(["t", "m1", "m2"], [800, 800, 10], 1.0, breakpoints=()) == (0, 0, 0)


def test_anthropic_lookback_reads_an_entry_up_to_20_blocks_back_from_a_breakpoint_and_not_further():
    """The breakpoint's own boundary counts as the first of the 20 checked."""
    keys, sizes = [f"m{i}" for i in range(40)], [100] * 40
    for gap, hit in ((19, True), (20, False)):
        cache = PrefixCache(style="anthropic")
        cache.request(keys[:15], sizes[:15], 0.0)  # writes the 1,500-token prefix of 15 blocks
        read = cache.request(keys[:15 + gap], sizes[:15 + gap], 1.0).read
        assert read == (1500 if hit else 0), gap


def test_anthropic_lookback_is_checked_from_each_breakpoint():
    """An entry beyond the last breakpoint's lookback is read through an earlier breakpoint's."""
    keys, sizes = [f"m{i}" for i in range(60)], [100] * 60
    cache = PrefixCache(style="anthropic")
    cache.request(keys[:15], sizes[:15], 0.0)
    assert cache.request(keys[:50], sizes[:50], 1.0).read == 0
    cache = PrefixCache(style="anthropic")
    cache.request(keys[:15], sizes[:15], 0.0)
    use = cache.request(keys[:50], sizes[:50], 1.0, breakpoints=((29, "5m"), (49, "5m")))
    assert use == (1500, 5000 - 1500, 0)  # read at block 15 through the breakpoint on block 30; both written


def test_anthropic_writes_each_breakpoint_for_its_ttl_and_reports_the_1h_part():
    cache = PrefixCache(style="anthropic")
    use = cache.request(["t", "m1", "m2"], [1500, 300, 200], 0.0, breakpoints=((0, "1h"), (2, "5m")))
    assert use == (0, 2000, 1500)
    # 10 minutes on, the 5-minute entry is gone and the 1-hour one is read
    assert cache.request(["t", "m1", "m2"], [1500, 300, 200], 600.0, breakpoints=((0, "1h"), (2, "5m"))) == \
        (1500, 500, 0)


def test_anthropic_a_breakpoint_under_the_minimum_writes_nothing_and_its_tokens_go_to_the_next():
    cache = PrefixCache(style="anthropic", min_tokens=1024)
    use = cache.request(["t", "m1", "m2"], [500, 300, 400], 0.0, breakpoints=((0, "1h"), (2, "5m")))
    assert use == (0, 1200, 0)


def test_anthropic_minimum_cacheable_length_by_model():
    from harness.models.mock.cache import anthropic_min_tokens

    assert anthropic_min_tokens("claude-sonnet-4-6") == 1024
    assert anthropic_min_tokens("anthropic/claude-sonnet-4-5-20250929") == 1024
    assert anthropic_min_tokens("claude-opus-4-1") == 1024
    assert anthropic_min_tokens("claude-opus-4-6") == 4096
    assert anthropic_min_tokens("claude-opus-4-5-20251101") == 4096
    assert anthropic_min_tokens("claude-haiku-4-5-20251001") == 4096
    assert anthropic_min_tokens("claude-3-5-haiku-20241022") == 2048
    assert anthropic_min_tokens("claude-3-haiku-20240307") == 2048
