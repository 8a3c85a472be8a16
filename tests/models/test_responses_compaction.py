"""OpenAI's Responses compaction as the simulated provider applies it (harness.models.mock.responses_compaction), each
rule with its source: openai SDK 3.63 types/responses (response_create_params.py, response_compaction_item.py,
compacted_response.py), litellm 1.110.2, OpenAI's "Compaction" guide."""
import json

import litellm
import pytest

from harness.core.tokens import count_message

from harness.models.mock import provider as provider_module
from harness.models.mock import responses_compaction as rc
from harness.models.mock.provider import MockConfig, MockProvider
from harness.models.mock.sealing import seal, unseal
from harness.models.provider_compaction import ITEMS, OPENAI_MIN_THRESHOLD, compaction_items, provider_visible, user_key

SYSTEM = {"role": "system", "content": "You are a careful agent."}
TASK = {"role": "user", "content": "Start at record AB-1234 and follow the successor chain; submit the sum. " * 80}
EARLY_FACT = {"role": "assistant", "content": "Noted: the vault code is ZEBRA-7741."}
LATER = {"role": "user", "content": "Continue."}


def serve(provider, messages, options=None, session="s", cache="openai", **kwargs):
    return provider.serve("agent", messages, [], MockConfig(session=session, cache=cache), seed=0, options=options,
                          **kwargs)


def compacting(threshold=OPENAI_MIN_THRESHOLD):
    return {"context_management": [{"type": "compaction", "compact_threshold": threshold}]}


@pytest.fixture
def seen(monkeypatch):
    """What the mock agent is handed, request by request."""
    calls = []
    respond = provider_module.respond

    def recording(messages, tools, **kwargs):
        calls.append(list(messages))
        return respond(messages, tools, **kwargs)

    monkeypatch.setattr(provider_module, "respond", recording)
    return calls


def test_threshold_entry_is_read_as_the_sdk_types_it():
    """response_create_params.py:398-403: `{"type", "compact_threshold"}` entries; only `compaction` exists
    (line 400); litellm types/llms/openai.py:1362: the threshold is at least 1,000."""
    assert rc.read_threshold(None) is None
    assert rc.read_threshold([]) is None
    assert rc.read_threshold([{"type": "compaction", "compact_threshold": 5000}]) == 5000
    refusals = {
        "context_management": {"edits": []},  # Anthropic's shape is not the Responses API's
        "context_management[0].type": [{"type": "clear_tool_uses", "compact_threshold": 5000}],
        "context_management[0].compact_threshold": [{"type": "compaction", "compact_threshold": 999}],
        "context_management[0].keep": [{"type": "compaction", "compact_threshold": 5000, "keep": 1}],
        "context_management[1]": [{"type": "compaction", "compact_threshold": 5000}] * 2,
    }
    for param, value in refusals.items():
        with pytest.raises(rc.CompactionRequestError) as refused:
            rc.read_threshold(value)
        assert refused.value.param == param
    with pytest.raises(rc.CompactionRequestError, match="documents no default"):
        rc.read_threshold([{"type": "compaction"}])


def test_below_the_threshold_nothing_is_compacted(seen):
    reply, usage = serve(MockProvider(), [SYSTEM, TASK], compacting(threshold=1_000_000))
    assert not compaction_items(reply)
    assert seen == [[SYSTEM, TASK]]


def test_past_the_threshold_the_reply_starts_with_an_opaque_item_and_answers_from_the_summary(seen):
    """Guide, "Server-side compaction": crossing the threshold, the server compacts, emits the compaction item in the
    same response and continues from the compacted context. The item is response_compaction_item.py's
    `{"type": "compaction", "id", "encrypted_content"}`, opaque ("not intended to be human-interpretable")."""
    reply, usage = serve(MockProvider(), [SYSTEM, TASK], compacting())
    (item,) = reply["provider_specific_fields"][ITEMS]
    assert set(item) == {"type", "id", "encrypted_content"} and item["type"] == "compaction"
    summary, kept = unseal(item["encrypted_content"])
    assert kept == ()  # a server-side item keeps nothing verbatim: it stands for all that precedes it
    assert summary and summary not in item["encrypted_content"] and "AB-1234" not in item["encrypted_content"]
    assert seen == [[SYSTEM, {"role": "user", "content": summary}]]  # the answer saw the system prompt and summary
    assert reply.get("content") or reply.get("tool_calls")


def test_the_compaction_step_is_billed_in_the_usage_fields_the_responses_api_reports():
    """The pass is sampled and billed (response_compaction_compacting_event.py: "new summary content is sampled"):
    the response's usage sums both steps in the Responses fields (response_usage.py), with no per-step list."""
    provider = MockProvider()
    plain, plain_usage = serve(provider, [SYSTEM, TASK], session="plain")
    reply, usage = serve(provider, [SYSTEM, TASK], compacting(), session="compacting")
    summary, _ = unseal(reply["provider_specific_fields"][ITEMS][0]["encrypted_content"])
    answer = {key: value for key, value in reply.items() if key != "provider_specific_fields"}
    assert "iterations" not in usage
    assert usage["prompt_tokens"] > plain_usage["prompt_tokens"]  # the pass read the whole input, then the answer
    assert usage["completion_tokens"] == count_message({"role": "user", "content": summary}) + count_message(answer)


def test_a_later_request_sees_the_summary_and_what_follows_the_latest_item_only(seen):
    """Guide: items before the most recent compaction item may be dropped, it "carries the necessary context": the
    model sees the instructions (litellm keeps them before a compaction too: compaction_items.py:195-200,276-277),
    the summary, and what follows: a message before the item (EARLY_FACT) reaches the agent only through the summary."""
    provider = MockProvider()
    first, _ = serve(provider, [SYSTEM, TASK, EARLY_FACT, LATER], compacting())
    summary, _ = unseal(first["provider_specific_fields"][ITEMS][0]["encrypted_content"])
    seen.clear()
    serve(provider, [SYSTEM, TASK, EARLY_FACT, LATER, first, {"role": "user", "content": "And now?"}])
    rest = {key: value for key, value in first.items() if key != "provider_specific_fields"}
    assert seen == [[SYSTEM, {"role": "user", "content": summary}, rest, {"role": "user", "content": "And now?"}]]
    assert not any("encrypted_content" in json.dumps(message) for message in seen[0])


def test_responses_compact_returns_all_user_messages_then_one_item():
    """compacted_response.py:28-31: the window is "a list of all user messages, followed by a single compaction
    item"; the instructions are the client's to keep."""
    window, usage = MockProvider().compact("agent", [SYSTEM, TASK, EARLY_FACT, LATER], [], MockConfig(session="w"),
                                           seed=0)
    assert window[:2] == [TASK, LATER]
    assert len(window) == 3 and window[2]["role"] == "assistant" and not window[2]["content"]
    (item,) = compaction_items(window[2])
    summary, kept = unseal(item["encrypted_content"])
    assert kept == (user_key(TASK), user_key(LATER))
    assert usage["prompt_tokens"] > 0 and usage["completion_tokens"] > 0 and "iterations" not in usage


def test_a_window_sent_back_keeps_its_user_messages_verbatim_and_drops_the_rest(seen):
    provider = MockProvider()
    window, _ = provider.compact("agent", [SYSTEM, TASK, EARLY_FACT, LATER], [], MockConfig(session="w"), seed=0)
    summary, _ = unseal(compaction_items(window[2])[0]["encrypted_content"])
    stale = {"role": "user", "content": "a user message the window did not keep"}
    serve(provider, [SYSTEM, stale, *window], session="w")
    assert seen[-1] == [SYSTEM, TASK, LATER, {"role": "user", "content": summary}]


@pytest.mark.parametrize("foreign", [
    "gAAAAABoZ3Jlc3RfYXBpX2l0ZW0=",  # a real OpenAI item's look: another provider's key
    json.dumps({"type": "compaction", "content": "a readable summary"}),  # litellm's own bridge items
    "not base64 at all!",
])
def test_an_item_this_provider_did_not_make_is_refused(foreign):
    """Only the provider that made an item can read it: the simulated provider refuses (400) what fails its tag."""
    message = {"role": "assistant", "content": "", "provider_specific_fields": {
        ITEMS: [{"type": "compaction", "id": "cmp_x", "encrypted_content": foreign}]}}
    with pytest.raises(litellm.BadRequestError, match="invalid compaction item"):
        serve(MockProvider(), [SYSTEM, TASK, message])


def test_an_altered_item_is_refused_and_sealing_is_deterministic():
    item = seal("the summary", ())
    assert seal("the summary", ()) == item  # in process and over HTTP, the same item
    assert unseal(item["encrypted_content"]) == ("the summary", ())
    raw = bytearray(item["encrypted_content"].encode())
    raw[30] = ord("A") if raw[30] != ord("A") else ord("B")
    with pytest.raises(ValueError, match="could not be verified"):
        unseal(bytes(raw).decode())


def test_truncation_auto_is_refused_as_the_provider_would_change_the_view_behind_the_strategy():
    with pytest.raises(litellm.BadRequestError, match="truncation"):
        serve(MockProvider(), [SYSTEM, TASK], {"truncation": "auto"})
    serve(MockProvider(), [SYSTEM, TASK], {"truncation": "disabled"})


def test_what_the_model_sees_is_shared_with_trace_replays():
    """provider_visible (harness.models.provider_compaction), which trace replays count forgotten references with,
    reads OpenAI's items as the simulated provider does; an item it cannot read is no compaction there (the provider
    refuses it before)."""
    reply, _ = serve(MockProvider(), [SYSTEM, TASK], compacting())
    summary, _ = unseal(reply["provider_specific_fields"][ITEMS][0]["encrypted_content"])
    rest = {key: value for key, value in reply.items() if key != "provider_specific_fields"}
    assert provider_visible([SYSTEM, TASK, reply, LATER]) == [SYSTEM, {"role": "user", "content": summary}, rest, LATER]
    foreign = {"role": "assistant", "content": "", "provider_specific_fields": {
        ITEMS: [{"type": "compaction", "encrypted_content": "Zm9yZWlnbg=="}]}}
    assert provider_visible([SYSTEM, TASK, foreign]) == [SYSTEM, TASK, foreign]
