"""Overhead on the summarizing path (llm_summarizing, hard_summarize) and the ladder: each shortcut or memo
gives what a fresh reading of the request gives."""
from __future__ import annotations

import random

from harness.models.mock.agents import memo
from harness.models.mock.agents.common import Knobs, Visible
from harness.models.mock.summarizer import IDENTIFIER, _kept_without_task
from harness.core.tokens import stable_hash


def test_a_certain_or_impossible_chance_answers_without_a_draw_as_the_draw_would():
    """Ours: `Visible.chance` skips the seeded draw when the probability is outside (0, 1),
    since a draw in [0, 1) is always below 1 and never below 0; the answer is the draw's for any key."""
    visible = Visible([{"role": "user", "content": "task"}], [], seed=5, knobs=Knobs())
    for n in range(300):
        fresh = random.Random(stable_hash([5, "fact", str(n)])).random()
        for probability in (-1.0, 0.0, 1.0, 2.5, float("nan")):
            assert visible.chance(probability, "fact", n) == (fresh < probability)


def _fresh_kept(asked: str, results: list[str]) -> list[str]:
    """What the summarizer keeps of the agent's words `asked` and tool `results`, every line scanned afresh."""
    wanted = set(IDENTIFIER.findall(asked))
    lines = [line for line in asked.splitlines() if line.strip()]
    for result in results:
        lines += [line for line in result.splitlines() if wanted & set(IDENTIFIER.findall(line))]
    return list(dict.fromkeys(lines))


def test_the_summarizers_named_lines_memo_keys_on_the_preview_alone_not_on_what_the_agent_asked():
    """Ours: the mock summarizer memoizes each preview's lines that name an identifier by
    the preview's text; which of them a summary keeps depends on what the agent named in *that* request, so
    the same result shown in two requests whose agent asked for different codes keeps different lines, as a
    fresh reading does (a memo of the kept lines would keep the first request's)."""
    memo.forget()
    result = "A-17 is blue\nno code here\nB22 is red\nA-17 and B22 both\r\nx9\x0bC3 tail"
    for asked in ("look up A-17", "look up B22", "look up C3 and x9", "nothing"):
        assert _kept_without_task([("assistant", asked), ("tool", result)]) == _fresh_kept(asked, [result])
    rng = random.Random(24)
    words = ["A1", "b-2", "zz", "Q7x", "k", "r2d2", "-3", "é4", "\n", "\r\n", " ", "\x1c", "\u2028"]
    for _ in range(300):
        texts = ["".join(rng.choice(words) + rng.choice(" \n") for _ in range(rng.randint(0, 30)))
                 for _ in range(4)]
        previews = [("assistant", texts[0]), ("tool", texts[1]), ("tool", texts[2]), ("tool", texts[1])]
        assert _kept_without_task(previews) == _fresh_kept(texts[0], [texts[1], texts[2], texts[1]])


def test_view_events_kept_per_message_list_what_a_fresh_reading_of_the_edited_view_lists():
    """Ours: `ViewEvents` keeps each message's OpenHands events (by message id) across
    condensations and lists an edited view from them; after every append, replace and set (a condensation's
    head + summary + tail, a reordering, a message brought back) it equals `view_events` read afresh."""
    from harness.conversation.view import ViewState
    from strategies.summaries import SUMMARY_HEADER, ViewEvents, view_events

    view, kept, next_id = ViewState(count=lambda message: 1), ViewEvents(), 0

    def add(message: dict, origin: str = "run", placement: str = "append") -> int:
        nonlocal next_id
        next_id += 1
        view.apply({"type": "message", "id": next_id, "message": message, "origin": origin, "placement": placement})
        return next_id

    def check() -> None:
        assert kept.of(view) == view_events(view)

    add({"role": "system", "content": "sys"})
    add({"role": "user", "content": "task"}, origin="user")
    check()
    for n in range(6):
        calls = [{"id": f"c{n}-{k}", "type": "function", "function": {"name": "f", "arguments": "{}"}}
                 for k in range(n % 3)]
        add({"role": "assistant", "content": f"step {n}", "tool_calls": calls} if calls else
            {"role": "assistant", "content": f"step {n}"})
        for call in calls:
            add({"role": "tool", "tool_call_id": call["id"], "name": "f", "content": f"result {n}"})
        check()
    summary = add({"role": "user", "content": SUMMARY_HEADER + "facts"}, origin="strategy", placement="none")
    ids = list(view.ids)
    for new_ids in (ids[:2] + [summary] + ids[-4:], ids[:2] + [summary] + ids[-4:] + [ids[3]], ids[::-1], ids):
        view.apply({"type": "condensation", "view_ops": [{"op": "set", "ids": new_ids}]})
        check()
        add({"role": "assistant", "content": "after"})
        check()
    view.apply({"type": "masking", "view_ops": [{"op": "replace", "id": ids[3], "message": {"role": "assistant",
                                                                                           "content": "masked"}}]})
    check()


def test_event_blocks_found_by_string_search_are_the_openhands_pattern_s_matches():
    """Ours (the block format is OpenHands' summarizing_events.j2): `_event_blocks` finds the
    `<EVENT>` blocks with `str.find` instead of the lazy regex; on well-formed prompts and on texts with
    unclosed blocks, bad headers, nested or adjacent tags and empty bodies it gives `OPENHANDS_EVENT.findall`."""
    from harness.models.mock.summarizer import OPENHANDS_EVENT, _event_blocks
    from strategies.summaries import summary_request

    well_formed = summary_request(["ActionEvent (agent)\n  Thought: x", "ObservationEvent (environment)\n  Result: ",
                                   "MessageEvent (user)\n  user: <EVENT>\nnested\n</EVENT> tail"])[1]["content"]
    assert _event_blocks(well_formed) == OPENHANDS_EVENT.findall(well_formed)
    pieces = ["<EVENT>\n", "\n</EVENT>", "</EVENT>", "A (b)\n", "A(b)\n", "é (ü)\n", "x", "\n", " ", "<EVENT>",
              "Kind (src)\nbody", "\n\n"]
    rng = random.Random(241)
    for _ in range(3000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 14)))
        assert _event_blocks(text) == OPENHANDS_EVENT.findall(text), text


def test_the_summarizers_assistant_readings_memo_gives_the_joined_reading_of_every_assistant_preview():
    """Ours: the identifiers the agent named are read per assistant preview (memoized by its
    text) and united; a request with several assistant previews, some repeated, some shared with an earlier
    request, keeps what a fresh scan of all of them joined by line breaks keeps."""
    memo.forget()
    rng = random.Random(7)
    words = ["A1", "b-2", "zz", "Q7x", "k", "r2d2", "-3", "é4", "\n", " ", "\u2028"]
    pool = ["".join(rng.choice(words) + rng.choice(" \n") for _ in range(rng.randint(0, 12))) for _ in range(8)]
    for _ in range(300):
        said = [rng.choice(pool) for _ in range(rng.randint(1, 4))]
        results = [rng.choice(pool) for _ in range(3)]
        previews = [("assistant", s) for s in said] + [("tool", r) for r in results]
        wanted = set(IDENTIFIER.findall("\n".join(said)))
        fresh = [line for s in said for line in s.splitlines() if line.strip()]
        fresh += [line for r in results for line in r.splitlines() if wanted & set(IDENTIFIER.findall(line))]
        assert _kept_without_task(previews) == list(dict.fromkeys(fresh))


def test_library_message_count_kept_across_requests_equals_a_fresh_count_after_every_edit():
    """Ours (pydantic-ai's message grouping, strategies.history.library_messages): the ladder's
    `LibraryMessageCount` counts only new messages while the view grows and counts afresh after an edit; after
    appends, a replace, a drop and a set it equals `len(library_messages(view))`, and a second count object
    that is not told of the edit would be stale (the edit changes the count)."""
    from harness.conversation.view import ViewState
    from strategies.history import LibraryMessageCount, library_messages

    view, counted, next_id = ViewState(count=lambda message: 1), LibraryMessageCount(), 0

    def add(role: str) -> int:
        nonlocal next_id
        next_id += 1
        view.apply({"type": "message", "id": next_id, "message": {"role": role, "content": str(next_id)},
                    "origin": "run", "placement": "append"})
        return next_id

    rng = random.Random(3)
    for _ in range(40):
        add(rng.choice(["system", "user", "assistant", "tool", "assistant"]))
        assert counted.of(view) == len(library_messages(view))
    before = counted.of(view)
    ids = list(view.ids)
    for op in ({"op": "replace", "id": ids[5], "message": {"role": "assistant", "content": "x"}},
               {"op": "drop", "ids": [i for i in ids[3:20] if view.messages[i]["role"] == "assistant"]},
               {"op": "set", "ids": ids[:2] + ids[30:]}, {"op": "set", "ids": ids[::-1]}):
        view.apply({"type": "edit", "view_ops": [op]})
        assert counted.of(view) == len(library_messages(view))
        add("user")
        add("assistant")
        assert counted.of(view) == len(library_messages(view))
    assert len(library_messages(view)) != before
