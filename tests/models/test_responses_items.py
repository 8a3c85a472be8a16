"""Chat messages as Responses items and back (harness.models.responses_items): the client writes what serve-mock
reads, so the mock is handed the messages the in-process client hands it. Item shapes from the openai SDK 3.63
types/responses (easy_input_message_param.py, response_function_tool_call_param.py, response_input_item_param.py
FunctionCallOutput, function_tool_param.py, response_compaction_item_param_param.py)."""
import pytest

from harness.models.mock.sealing import seal
from harness.models.provider_compaction import ITEMS
from harness.models.responses_items import ItemError, chat_messages, chat_tools, function_tools, input_items

ITEM = seal("what happened so far", ())
CALL = {"id": "call_1", "type": "function", "function": {"name": "read", "arguments": "{\"key\": \"A\"}"}}
VIEW = [
    {"role": "system", "content": "You are a careful agent."},
    {"role": "user", "content": "Find the value behind key A."},
    {"role": "assistant", "content": "Reading A.", "tool_calls": [CALL],
     "provider_specific_fields": {ITEMS: [ITEM]}},
    {"role": "tool", "tool_call_id": "call_1", "name": "read", "content": "A points to B"},
    {"role": "assistant", "content": "", "tool_calls": [{**CALL, "id": "call_2"}]},
    {"role": "tool", "tool_call_id": "call_2", "name": "read", "content": [{"type": "text", "text": "B holds 42"}]},
    {"role": "assistant", "content": "42"},
    {"role": "user", "content": "Thanks."},
]
TOOLS = [{"type": "function", "function": {"name": "read", "description": "Read a key.",
                                           "parameters": {"type": "object", "properties": {"key": {"type": "string"}}}}},
         {"type": "function", "function": {"name": "submit", "parameters": {"type": "object"}, "strict": True}}]


def test_a_view_round_trips_through_items():
    assert chat_messages(input_items(VIEW)) == VIEW


def test_item_shapes_are_the_sdks():
    items = input_items(VIEW)
    assert items[0] == {"type": "message", "role": "system", "content": "You are a careful agent."}
    assert items[2] == ITEM  # a reply's compaction item first, as the response gave it
    assert items[3] == {"type": "message", "role": "assistant", "content": "Reading A."}
    assert items[4] == {"type": "function_call", "call_id": "call_1", "name": "read", "arguments": "{\"key\": \"A\"}"}
    assert items[5] == {"type": "function_call_output", "call_id": "call_1", "output": "A points to B", "name": "read"}
    assert items[6]["type"] == "function_call"  # an assistant turn of calls alone sends no empty message
    assert items[7]["output"] == [{"type": "input_text", "text": "B holds 42"}]


def test_tools_round_trip_with_strict_null_when_unsaid():
    """function_tool_param.py: `strict` is required but nullable."""
    converted = function_tools(TOOLS)
    assert converted[0] == {"type": "function", "name": "read", "parameters": TOOLS[0]["function"]["parameters"],
                            "strict": None, "description": "Read a key."}
    assert chat_tools(converted) == TOOLS


def test_a_message_of_compaction_items_alone_joins_the_assistant_turn_after_it():
    """The last message of a `/responses/compact` window holds the item alone; on the wire it cannot be told from
    the next assistant turn's items, so it is read back joined to it (the mock sees the same context either way)."""
    window = [{"role": "user", "content": "Find A."},
              {"role": "assistant", "content": "", "provider_specific_fields": {ITEMS: [ITEM]}}]
    assert chat_messages(input_items(window)) == window
    reply = {"role": "assistant", "content": "", "tool_calls": [CALL]}
    assert chat_messages(input_items([*window, reply])) == [window[0], {**reply, "provider_specific_fields": {
        ITEMS: [ITEM]}}]


def test_output_items_are_read_as_one_text():
    output = [ITEM, {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
                     "content": [{"type": "output_text", "text": "4", "annotations": []},
                                 {"type": "output_text", "text": "2", "annotations": []}]}]
    assert chat_messages(output, "output", output=True) == [
        {"role": "assistant", "content": "42", "provider_specific_fields": {ITEMS: [ITEM]}}]


@pytest.mark.parametrize("items, param", [
    ("hello", None),
    ({"type": "message"}, "input"),
    ([{"type": "message", "role": "tool", "content": "x"}], "input[0].role"),
    ([{"type": "function_call", "call_id": "", "name": "read", "arguments": "{}"}], "input[0].call_id"),
    ([{"type": "function_call_output", "call_id": "c", "output": 3}], "input[0].output"),
    ([{"type": "compaction", "encrypted_content": ""}], "input[0].encrypted_content"),
    ([{"type": "reasoning", "summary": []}], "input[0].type"),
    ([{"type": "message", "role": "user", "content": [{"type": "input_image", "image_url": "x"}]}],
     "input[0].content[0].type"),
])
def test_malformed_items_name_their_field(items, param):
    if param is None:  # the API's shorthand: a string is one user message
        assert chat_messages(items) == [{"role": "user", "content": "hello"}]
        return
    with pytest.raises(ItemError) as refused:
        chat_messages(items)
    assert refused.value.param == param
