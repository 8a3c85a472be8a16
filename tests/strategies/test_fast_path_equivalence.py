"""The run path's faster helpers (one JSON encoder, memoized draws and readings, line-wise patterns, tools kept
by name) give exactly what they replace: rows, call ids and view hashes must not change with them."""
from __future__ import annotations

import json
import random

from harness.conversation.events import event_logs, read_events
from harness.core.fast_json import _FLOAT, _OTHER, _scan, canonical_json, sorted_json
from harness.core.frozen import freeze


def _values() -> list:
    rng = random.Random(24)
    words = ["a", "é", "\u2028", "\U0001f600", "\x7f", "quote\"", "b\\s"]
    values: list = [{"path": "notes/x.md", "n": 3}, {"z": [1, 2, {"b": None, "a": True}]}, "text", 7, None,
                    {"cost": 1e-05}, [0.5, "x"], {2: "int key", 1: "k"}, (1, "t"), {"big": 2**70}]
    for _ in range(500):
        values.append({rng.choice(words) + str(rng.randint(0, 9)): rng.choice([rng.random(), rng.randint(-5, 5),
                                                                           rng.choice(words), [rng.choice(words)]])
                       for _ in range(rng.randint(0, 4))})
    return values


def test_sorted_json_is_json_dumps_sort_keys_text_for_text():
    """Tool call arguments (call ids, re-execution keys) are written by one encoder built
    once; the text must be json.dumps(value, sort_keys=True)'s own, or call ids and rows would change."""
    for value in _values():
        assert sorted_json(value) == json.dumps(value, sort_keys=True), value


def test_holds_float_finds_a_float_at_any_depth_and_of_any_float_type():
    """The float check before orjson's canonical JSON walks exact containers
    recursively; a float anywhere, a float subclass, or a float inside a dict/list subclass must still be found
    (json and orjson spell floats differently, so a miss would change view hashes)."""
    float_subclass = type("Money", (float,), {})
    dict_subclass = type("Record", (dict,), {})
    list_subclass = type("Row", (list,), {})
    holding = [1.5, [1, [2, [3, 0.25]]], {"a": {"b": (1, 2.0)}}, freeze({"m": [{"x": float("nan")}]}),
               {"k": float_subclass(2)}, dict_subclass(v=0.1), {"row": list_subclass([1, 3.5])}]
    flat = [1, "x", None, True, [1, "a", None], {"a": {"b": ("c", 2)}}, freeze({"m": [{"x": "y"}]}),
            {"e": type("Label", (str,), {})("1.5")}, dict_subclass(v=1), list_subclass(["2.5"])]
    for value in holding:
        assert _scan(value) & _FLOAT, value
    for value in flat:
        assert not _scan(value) & _FLOAT, value


def test_scan_tells_plain_data_from_data_holding_other_types():
    """canonical_json hands data of exact builtins and read-only messages to orjson whole
    (no call back per message dict); anything else, at any depth (a str, int, dict or list subclass, an object),
    must be found, as orjson without its pass-through would write those itself, not as the json module does."""
    plain = [1, "x", None, True, 2.5, [1, ("a", None)], {"a": {"b": ("c", 2)}}, freeze({"m": [{"x": "y", "n": 1}]})]
    label, record, row = type("Label", (str,), {}), type("Record", (dict,), {}), type("Row", (list,), {})
    other = [label("a"), {"e": [label("1.5")]}, record(v=1), {"r": row([1])}, freeze({"m": [{"k": type("N", (int,), {})(3)}]}),
             [object()], {"f": frozenset()}]
    for value in plain:
        assert not _scan(value) & _OTHER, value
    for value in other:
        assert _scan(value) & _OTHER, value
    for value in plain[:-1] + other[:5]:
        assert canonical_json(value) == json.dumps(value, sort_keys=True, separators=(",", ":")).encode(), value


def test_canonical_json_still_the_json_modules_bytes_with_the_new_float_check():
    """canonical_json gives json.dumps's compact sorted bytes."""
    for value in _values():
        assert canonical_json(value) == json.dumps(value, sort_keys=True, separators=(",", ":")).encode(), value


def test_chance_draws_what_a_fresh_generator_seeded_by_the_visible_key_draws_memoized_or_not():
    """The agent's seeded draws (`Visible.chance`) are memoized by their seed string; the
    memo must give a fresh `random.Random(seed).random()` for new keys, repeated keys and after `forget`."""
    from harness.models.mock.agents.common import Knobs, Visible
    from harness.models.mock.agents.memo import forget
    from harness.core.tokens import stable_hash

    visible = Visible([{"role": "user", "content": "task"}], [], seed=3, knobs=Knobs())
    for round_ in range(3):
        for n in range(200):
            key = ("fact", n % 50)
            fresh = random.Random(stable_hash([3, *map(str, key)])).random()
            for probability in (0.0, fresh, 0.5, 1.0):
                assert visible.chance(probability, *key) == (fresh < probability)
        forget()


def test_an_environments_tools_are_fixed_so_execute_may_keep_them_by_name():
    """`Environment.execute` keeps `tool_specs()` by name from its first call; that holds only
    while an instance's tools never change, checked here for every family over a run's tool calls (a family
    whose tools changed with its state would make execute refuse or accept the wrong calls)."""
    from tasks.suites import load_tasks

    rows = load_tasks("smoke")
    assert len({row.family for row in rows}) >= 5  # every family
    for row in rows:
        environment = row.build()
        names = [spec.name for spec in environment.tool_specs()]
        kept = environment._specs_by_name()
        assert list(kept) == names
        for spec in environment.tool_specs():
            environment.execute(_call(spec.name))  # whatever a call changes, the tools stay
        assert [spec.name for spec in environment.tool_specs()] == names
        assert environment._specs_by_name() is kept and list(kept) == names


def _call(name: str):
    from tasks.base import ToolCall

    return ToolCall(id="c1", name=name, arguments="{}", args={})


def test_line_pattern_findall_equals_a_whole_text_scan():
    """A LinePattern's findall scans only the lines holding its required literal,
    and must give a whole-text findall's matches in order: several per line, at the text's ends, words
    joined across a line break, a literal with no match, texts without it."""
    import re

    from harness.models.mock.agents.memo import LinePattern
    from harness.models.mock.agents.repo_maintenance import STATED_FAILURE

    expression = r"\b(\w+) in (\S+) should be (-?\d+)\b"
    whole, lines = re.compile(expression), LinePattern(expression)
    assert isinstance(STATED_FAILURE, LinePattern) and STATED_FAILURE.regex.pattern == expression
    rng = random.Random(24)
    pieces = ["A in a.py should be 3", "B in b/c.py should be -41", " should be ", "x", "\n", " in ", "C_2",
              "7", "AssertionError: D in d.py should be 5, found 6", "should be 1", "\n\n", "E in e.py should be"]
    texts = ["", "A in a.py should be 3", "\nA in a.py should be 3\n", "A in a.py\nshould be 3",
             "A in a.py should be 3 B in b.py should be 4\nC in c.py should be 5"]
    texts += ["".join(rng.choice(pieces) for _ in range(rng.randrange(1, 40))) for _ in range(3000)]
    for text in texts:
        assert lines.findall(text) == tuple(whole.findall(text)), text
        first, found = whole.search(text), lines.search(text)
        assert (first and (first.span(), first.groups())) == (found and (found.span(), found.groups())), text


def test_line_pattern_search_finds_the_test_summary_a_whole_text_search_finds():
    """repo_maintenance's SUMMARY is a LinePattern; its search gives the whole
    text's first match (span and groups) in a log with "=" rules and a passed/failed line."""
    import re

    from harness.models.mock.agents.memo import LinePattern
    from harness.models.mock.agents.repo_maintenance import SUMMARY

    assert isinstance(SUMMARY, LinePattern)
    whole = re.compile(SUMMARY.regex.pattern)
    for text in ["===== test session starts =====\nx\n== 2 failed, 8 passed in 0.12s ==\n",
                 "=== 10 passed in 1.5s ===", "10 passed in 1s\n=== 3 passed in 2s ===\n=== 1 failed, 2 passed in 3s =",
                 "no summary passed in here\n", ""]:
        first, found = whole.search(text), SUMMARY.search(text)
        assert (first and (first.span(), first.groups())) == (found and (found.span(), found.groups())), text


def test_line_pattern_refuses_patterns_it_cannot_scan_by_lines():
    """No required literal, or an anchor (which would match at a line's ends
    inside the text): ValueError at construction, so no pattern reads differently by lines."""
    import pytest

    from harness.models.mock.agents.memo import LinePattern

    for expression in (r"(\w+) = (\d+)", r"^Fixed (\w+) in (\S+)$", r"Fixed (\w+) in (\S+)$"):
        with pytest.raises(ValueError):
            LinePattern(expression)


def test_canonical_arguments_memo_gives_a_fresh_sorted_parse_for_every_text():
    """Metrics' re-execution key memoizes a call's canonical arguments by their text;
    each text, asked for twice and interleaved with others, must read as json.dumps(json.loads(text),
    sort_keys=True) does (the text itself when it does not parse, "{}" when empty)."""
    from harness.results.metrics import call_key, canonical_arguments

    texts = ['{"b": 1, "a": [2, {"d": 0.5, "c": "\\u00e9"}]}', '{"a":1,"b":2}', '{"path": "x"}', "not json", "",
             '{"x": 1e-05}', '[1, 2]', '{"a": null}']
    for text in texts * 2:
        try:
            expected = json.dumps(json.loads(text or "{}"), sort_keys=True)
        except json.JSONDecodeError:
            expected = text
        assert canonical_arguments(text) == expected, text
        assert call_key({"name": "read", "arguments": text}) == ("read", expected)
    assert call_key({"name": "read"}) == ("read", "{}")


def test_line_pattern_anchored_at_line_starts_reads_as_a_whole_text_scan():
    """A re.MULTILINE LinePattern opening with `^` and a literal (work_queue's record
    lines) is tried only on the lines opening with that literal; its finditer, findall and search must give the
    whole text's matches in order (spans and groups), at the text's ends, mid-line copies not counted."""
    import re

    from harness.models.mock.agents.memo import LinePattern, forget
    from harness.models.mock.agents.work_queue import CUSTOMER, ORDER, PRICE

    assert all(isinstance(p, LinePattern) and p._opening for p in (ORDER, CUSTOMER, PRICE))
    rng = random.Random(241)
    pieces = ["Price SKU-A1 | region west | unit 5", "Customer CUS-1 | region north", "related: ", "\n", "x", " ",
              "Order ORD-7 | customer CUS-1 | sku SKU-A1 | quantity 3", "Price ", "\n\n", "Price SKU-B | region e"]
    texts = ["", "Price SKU-A1 | region west | unit 5", "\nPrice SKU-A1 | region west | unit 5\n"]
    texts += ["".join(rng.choice(pieces) for _ in range(rng.randrange(1, 30))) for _ in range(2000)]
    for pattern in (ORDER, CUSTOMER, PRICE, LinePattern(r"^Fixed (\w+) in (\S+)\.$", re.MULTILINE)):
        whole = re.compile(pattern.regex.pattern, pattern.regex.flags)
        for text in texts:
            forget()
            spans = lambda matches: [(m.span(), m.groups()) for m in matches]  # noqa: E731
            assert spans(pattern.finditer(text)) == spans(whole.finditer(text)), text
            assert pattern.findall(text) == tuple(whole.findall(text)), text
            first, found = whole.search(text), pattern.search(text)
            assert (first and (first.span(), first.groups())) == (found and (found.span(), found.groups())), text


def test_a_results_cut_is_read_once_per_text_as_the_contracts_read_it(tmp_path):
    """reading._cut memoizes which contract cut a text; over every text of a run that
    cuts and pages results, it must give what the contracts give, memoized or not."""
    from harness import api
    from harness.models.mock.agents import reading
    from harness.models.mock.agents.memo import forget

    api.run("smoke", strategies="tool_output_limits", profiles=api.mock_profiles(window=60_000), out=tmp_path)
    events = [event for log in event_logs(tmp_path / "events") for event in read_events(log)]
    texts = {str(event["message"].get("content") or "") for event in events if event["type"] == "message"}
    cut = 0
    for text in sorted(texts):
        expected = reading._find_cut(text)
        for _ in range(2):
            found = reading._cut(text)
            assert (found and (found[0], found[1].span())) == (expected and (expected[0], expected[1].span()))
        cut += expected is not None
        forget()
        assert reading.is_cut(text) == (expected is not None)
    assert cut, "no result was cut: the test would prove little"
