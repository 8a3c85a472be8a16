"""Memory of a run: token counting holds little beyond the texts it counts."""
from harness.core import tokens
from harness.core.tokens import count_text


def test_long_texts_count_as_the_tokenizer_counts_them():
    """Texts past PACKED_FROM_CHARS are counted from tiktoken's packed buffer, with the same result,
    special-token lookalikes and lone surrogates included."""
    base = "record QX-0001 | weight 12 | successor QX-0002 <|endoftext|> \u00e9t\u00e9\n"
    long_text = base * (tokens.PACKED_FROM_CHARS // len(base) + 2)
    broken = long_text + "\ud800"
    for text in (long_text, broken):
        assert len(text) >= tokens.PACKED_FROM_CHARS
        assert count_text(text) == len(tokens._tokenizer().encode(text, disallowed_special=()))


def test_token_count_memo_is_bounded_by_the_length_of_its_texts(monkeypatch):
    """The memo keeps its texts alive, so it starts afresh before they pass MAX_COUNTED_CHARS."""
    monkeypatch.setattr(tokens, "MAX_COUNTED_CHARS", 100)
    tokens.forget_counts()
    texts = [f"text number {i} " * 3 for i in range(10)]  # 45-48 characters each
    counts = [count_text(t) for t in texts]
    assert len(tokens._text_counts) <= 2 and tokens._counted_chars <= 100
    assert texts[-1] in tokens._text_counts
    assert counts == [len(tokens._tokenizer().encode(t, disallowed_special=())) for t in texts]
    tokens.forget_counts()
    assert not tokens._text_counts and tokens._counted_chars == 0


def test_canonical_json_is_the_json_modules_sorted_ascii_json_byte_for_byte():
    """View hashes, call ids and the agent's seeds hash canonical JSON: the fast orjson path
    must give json.dumps's very bytes, and leave to it what it would spell otherwise."""
    import json
    import random

    from harness.core.fast_json import canonical_json

    rng = random.Random(7)
    alphabet = [chr(i) for i in range(128)] + ["é", "\u2028", "\U0001f600", "\ud800"]
    values = [
        {"role": "tool", "content": "DEL \x7f and NUL \x00 and \"quotes\" \\ / \t\n", "tool_call_id": "c1"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c", "type": "function",
                                                               "function": {"name": "f", "arguments": "{}"}}]},
        {"cost": 1e-05, "nested": [{"x": 0.5}]},  # floats: spelled 1e-05 by json, 0.00001 by orjson
        {2: "int key", 1: "sorted as ints"}, {"big": 2**70}, ["tuple", (1, 2), True, None, -3],
        {"zeta": 1, "Alpha": 2, "_": 3, "a b": 4}, {"label": type("Label", (str,), {})("x")},
    ]
    values += [{"content": "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30))), "k": [rng.random() > 0.5]}
               for _ in range(2000)]
    for value in values:
        assert canonical_json(value) == json.dumps(value, sort_keys=True, separators=(",", ":")).encode(), value
