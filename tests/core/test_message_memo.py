"""What is worked out of a read-only message once and kept on it (harness.core.frozen: `token_count`, `cache_key`)
is the message's own: a copy or an edit through a view op starts afresh."""
from harness.core.frozen import freeze
from harness.models.mock.provider import _block_key, _block_tokens, _message_key
from harness.core.tokens import count_message, count_text, message_text
from harness.conversation.view import ViewState

TOOL = {"role": "tool", "tool_call_id": "c1", "name": "read_file", "content": "alpha beta gamma"}


def _fresh_count(message):
    return count_text(message_text(message)) + 4


def test_a_frozen_message_keeps_its_count_and_key_and_a_copy_starts_without_them():
    message = freeze(dict(TOOL))
    assert count_message(message) == _fresh_count(TOOL)
    assert _block_key(message) == _message_key(TOOL)
    assert message.token_count == _fresh_count(TOOL) and message.cache_key == _message_key(TOOL)
    edited = freeze({**message, "content": "alpha beta gamma delta epsilon zeta"})
    assert edited.token_count is None and edited.cache_key is None  # set None as it is made, not copied
    assert count_message(edited) == _fresh_count(edited) != count_message(message)
    assert _block_key(edited) != _block_key(message)


def test_a_message_made_without_freeze_is_counted_and_keyed_too():
    """A FrozenDict made another way (built directly, unpickled) starts with neither worked out: readers compute them."""
    import pickle

    from harness.core.frozen import FrozenDict

    for bare in (FrozenDict(TOOL), pickle.loads(pickle.dumps(freeze(dict(TOOL))))):
        assert bare.token_count is None and bare.cache_key is None
        assert count_message(bare) == _fresh_count(TOOL) and _block_key(bare) == _message_key(TOOL)


def test_the_view_counts_a_replaced_message_by_its_new_rendering():
    view = ViewState()
    view.apply({"id": 0, "type": "message", "message": dict(TOOL), "origin": "tool"})
    before = view.tokens(0)
    placeholder = {**TOOL, "content": "[masked: the output of read_file, 2,000 characters]"}
    view.apply({"id": 1, "type": "compaction", "view_ops": [{"op": "replace", "id": 0, "message": placeholder}]})
    assert view.tokens(0) == _fresh_count(placeholder) != before
    assert view.total_tokens == _fresh_count(placeholder)


def test_the_provider_prices_a_message_replaced_in_place_as_new():
    """A masked result keeps its position: its key must be the new rendering's, or the provider would bill
    the old prefix as cached."""
    from harness.models.mock.cache import BlockChain

    chain = BlockChain()
    first = [[], freeze({"role": "user", "content": "task"}), freeze(dict(TOOL))]
    chain.read(first, key_of=_block_key, tokens_of=_block_tokens)
    old_keys = list(chain.prefix_keys)
    masked = [first[0], first[1], freeze({**TOOL, "content": "[masked: the output of read_file, 2,000 characters]"})]
    total = chain.read(masked, key_of=_block_key, tokens_of=_block_tokens)
    assert chain.prefix_keys[1] == old_keys[1] and chain.prefix_keys[2] != old_keys[2]
    assert total == count_message(masked[1]) + _fresh_count(masked[2])
