"""Mock provider prompt caching (issue 2.4), per REFERENCES.md 'Prompt caching'."""
from harness.mock.cache import PrefixCache


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
    """Incremental reading (issue 8) must give the prefix keys a whole reading gives, whatever the view did;
    a block is read again only where the object at its position changed."""
    from harness.mock.cache import BlockChain

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
    """harness.mock.prefix.shared_prefix (halving over slice comparisons) against an item-by-item scan, on
    random edits of lists and tuples of messages: appended, replaced in place (same or equal object),
    dropped from the front, reset."""
    import random

    from harness.mock.prefix import shared_prefix

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
