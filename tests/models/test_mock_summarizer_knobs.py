"""The mock summarizer is as fallible as the agent, and the agent's notes hold its findings."""
from __future__ import annotations

import re

import pytest

from harness import api
from harness.cli import main as cli_main
from harness.core.errors import ConfigError
from harness.models.mock.agents import AGENTS, respond
from harness.models.mock.agents.common import Visible, build_knobs
from harness.models.mock.provider import MockConfig
from harness.models.mock.summarizer import HEADER, SummarizerKnobs, summarize
from strategies.summaries import summary_request
from tests.tasks.test_suites import opening, small_env
from tasks.base import ToolCall

WORD_WITH_DIGIT = re.compile(r"\b[A-Za-z][\w-]*\d[\w-]*\b")


def chained_previews() -> list[str]:
    """Previews of a chained_lookup history: the task and three records, each in its own result."""
    task = ("MessageEvent (user)\n  user: Start at record AB-0001 and follow the successor chain through 3 records; "
            "submit the sum of their weights.")
    records = [("AB-0001", 5, "CD-0002"), ("CD-0002", 7, "EF-0003"), ("EF-0003", 9, "GH-0004")]
    return [task] + [f"ObservationEvent (environment)\n  Tool: read_file\n  Result: record {c} | weight {w} | "
                     f"successor {s}" for c, w, s in records]


def summary_of(previews: list[str], completeness: float, seed: int = 0) -> str:
    reply = summarize(summary_request(previews), seed=seed, knobs=SummarizerKnobs(summary_completeness=completeness))
    return reply["content"]


def test_summarizer_completeness_drops_facts_it_was_shown():
    """The summarizer's own knob `summary_completeness` decides, per fact, what it keeps."""
    assert summary_of(chained_previews(), 1.0).count("Noted record") == 3
    assert "Noted record" not in summary_of(chained_previews(), 0.0)
    assert summary_of(chained_previews(), 0.0).startswith(HEADER + "Task: Start at record AB-0001")


def test_summarizer_drops_are_seeded_and_consistent_per_fact():
    """Ours: a draw depends on the run seed, the writer and the fact only: the same seed gives the
    same summary; a fact dropped once is dropped from a later, longer summary too; seeds differ in what they drop."""
    previews = chained_previews() + [f"ObservationEvent (environment)\n  Tool: read_file\n  Result: record GH-000{i} | "
                                     f"weight {i} | successor GH-000{i + 1}" for i in range(4, 9)]
    first = summary_of(previews[:3], 0.5, seed=3)
    assert first == summary_of(previews[:3], 0.5, seed=3)
    later = summary_of(previews, 0.5, seed=3)
    for code in ("AB-0001", "CD-0002"):
        assert (f"Noted record {code}" in first) == (f"Noted record {code}" in later)
    assert len({summary_of(previews, 0.5, seed=s) for s in range(6)}) > 1


def test_summarizer_and_agent_notes_draw_independently():
    """Ours: the summarizer's drops are not the agent's (each writer salts its draws with its own name)."""
    previews = chained_previews()
    codes = ("AB-0001", "CD-0002", "EF-0003")

    def agent_keeps(seed: int) -> set[str]:
        visible = Visible(summary_request(previews), [], seed=seed, knobs=build_knobs({"notes_completeness": 0.5}))
        return {code for code in codes if visible.keeps(code)}

    def summary_keeps(seed: int) -> set[str]:
        return {code for code in codes if f"Noted record {code}" in summary_of(previews, 0.5, seed=seed)}

    assert any(agent_keeps(seed) != summary_keeps(seed) for seed in range(8))


def test_summary_holds_nothing_not_in_the_previews():
    """DESIGN mock rule 4: the summary is written from the previews alone; a record a preview cut is not in it."""
    previews = chained_previews()
    previews[2] = previews[2][:previews[2].index("| weight")] + "<preview clipped: part of this event is not shown>"
    text = summary_of(previews, 1.0)
    shown = "\n".join(previews)
    assert set(WORD_WITH_DIGIT.findall(text)) <= set(WORD_WITH_DIGIT.findall(shown))
    assert "Noted record CD-0002" not in text and "Noted record AB-0001" in text


def test_summarizer_reads_its_own_profiles_knobs():
    """A mock profile's `knobs` are its own model's: the summarizer's for mock/summarizer."""
    config = MockConfig(knobs={"summary_completeness": 0.25})
    assert config.knobs_for("mock/summarizer") == SummarizerKnobs(summary_completeness=0.25)
    with pytest.raises(ConfigError, match="unknown key"):
        config.knobs_for("mock/agent")
    profiles = api.mock_profiles(summarizer_knobs={"summary_completeness": 0.5})
    assert profiles["summary"]["mock"]["knobs"] == {"summary_completeness": 0.5}
    assert "knobs" not in profiles["main"]["mock"]


@pytest.mark.parametrize("value, message", [
    ('{"summary_completeness": 1.5}', "summary_completeness must be in [0, 1], got 1.5"),
    ('{"summary_completenes": 0.5}', "unknown key(s) 'summary_completenes'"),
    ('{"notes_completeness": 0.5}', "unknown key(s) 'notes_completeness'"),
])
def test_bad_summarizer_knob_is_a_config_error_naming_it(value, message, tmp_path, capsys):
    """Bad input -> ConfigError naming the key, exit 2 before any model call (ours, common rules)."""
    assert cli_main(["run", "--suite", "smoke", "--summarizer-knobs", value, "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert message in err and "profiles.summary.mock.knobs" in err
    assert not (tmp_path / "o" / "runs.jsonl").exists()


def test_summarizer_knobs_need_the_mock_summarizer():
    """Ours: summarizer knobs set only the mock summarizer, never a real summary model, and not twice."""
    with pytest.raises(ConfigError, match="not the mock summarizer"):
        api.mock_profiles("openai/gpt-4o", summarizer_knobs={"summary_completeness": 0.5})
    with pytest.raises(ConfigError, match="given both"):
        api.mock_profiles(summarizer_knobs={"summary_completeness": 0.5},
                          extra={"summary": {"model": "mock/summarizer", "mock": {"knobs": {"summary_completeness": 1.0}}}})


def _lossy_summary_profile(completeness: float, window: int) -> dict:
    return {"summary": {"model": "mock/summarizer", "mock": {"window": window,
                                                             "knobs": {"summary_completeness": completeness}}}}


def test_lossy_summaries_cost_rereads_on_a_run(run_suite, suite_file):
    """With imperfect summarizer knobs, a summarizing strategy loses facts and the agent re-reads."""
    suite = suite_file(task_ids={"plant_early_ask_late-3"})
    careful = run_suite(str(suite), strategies="llm_summarizing", window=32_000,
                        profiles_extra=_lossy_summary_profile(1.0, 32_000))
    careless = run_suite(str(suite), strategies="llm_summarizing", window=32_000,
                         profiles_extra=_lossy_summary_profile(0.0, 32_000))
    assert careless["rereads"].sum() > careful["rereads"].sum()
    assert careless["summaries"].sum() > careful["summaries"].sum()


# --- the agent's notes hold its findings ---

def drive_until(family: str, found, max_steps: int = 200) -> tuple[list[dict], list[dict]]:
    """Run the mock agent on a small instance until `found(messages)`; return (messages, tools)."""
    env = small_env(family)
    tools = [spec.schema() for spec in env.tool_specs()]
    messages = opening(env)
    for step in range(max_steps):
        if found(messages):
            return messages, tools
        for text in env.user_messages_due(step):
            messages.append({"role": "user", "content": text})
        reply = respond(messages, tools, seed=0)
        messages.append(reply)
        for raw in reply.get("tool_calls") or []:
            result = env.execute(ToolCall.from_message(raw))
            messages.append({"role": "tool", "tool_call_id": raw["id"], "content": result.content})
    raise AssertionError(f"{family}: the finding never came")


def notes_of(messages: list[dict], tools: list[dict], completeness: float = 1.0) -> str:
    visible = Visible(messages, tools, seed=0, knobs=build_knobs({"notes_completeness": completeness}))
    agent, task = next((a, t) for a in AGENTS if (t := a.find_task(visible)) is not None)
    return agent.notes(visible, task)


def _tool_texts(messages: list[dict]) -> str:
    return "\n".join(m.get("content") or "" for m in messages if m.get("role") == "tool")


def _calls(messages: list[dict], name: str) -> list[dict]:
    return [c for m in messages for c in m.get("tool_calls") or [] if c["function"]["name"] == name]


FAILURE = re.compile(r"AssertionError: (\w+) in (\S+) should be (-?\d+), found")


def test_repo_notes_hold_the_failure_and_the_line_to_edit():
    """After reading the log and the file, its notes name the failing constant and its line
    (the old notes held only the task and fixes); at notes_completeness 0 they are dropped."""
    messages, tools = drive_until("repo_maintenance", lambda ms: bool(_calls(ms, "read_file")) and ms[-1]["role"] == "tool")
    name, path, value = FAILURE.search(_tool_texts(messages)).groups()
    notes = notes_of(messages, tools)
    assert f"Failing: {name} in {path} should be {value}." in notes
    assert re.search(rf"^Line of {name} in {re.escape(path)}: {name} = ", notes, re.MULTILINE)
    assert "Failing:" not in notes_of(messages, tools, completeness=0.0)


def test_repo_agent_goes_on_from_its_notes_without_running_the_tests_again():
    """After a reset, the notes' failure and line let it edit at once (no re-run of the tests)."""
    messages, tools = drive_until("repo_maintenance", lambda ms: bool(_calls(ms, "read_file")) and ms[-1]["role"] == "tool")
    notes = notes_of(messages, tools)
    after_reset = [messages[0], {"role": "user", "content": "The agent triggered context condensation."},
                   {"role": "assistant", "content": "", "tool_calls": [
                       {"id": "r1", "type": "function",
                        "function": {"name": "read_file", "arguments": '{"path": "notes/context-reset.md"}'}}]},
                   {"role": "tool", "tool_call_id": "r1", "content": notes}]
    reply = respond(after_reset, tools, seed=0)
    assert reply["tool_calls"][0]["function"]["name"] == "edit_file"


def test_chained_notes_hold_the_hop_answers():
    """Each record walked (a hop's answer) is in its notes."""
    record = re.compile(r"record ([A-Z]{2}-\d{4}) \| weight (\d+) \| successor ([A-Z]{2}-\d{4})")
    messages, tools = drive_until("chained_lookup", lambda ms: bool(record.search(_tool_texts(ms))))
    start = re.search(r"Start at record ([A-Z]{2}-\d{4})", messages[1]["content"]).group(1)
    found = {c: (w, s) for c, w, s in record.findall(_tool_texts(messages))}
    assert start in found
    assert f"Noted record {start} | weight {found[start][0]} | successor {found[start][1]}." in notes_of(messages, tools)


def test_work_queue_notes_hold_the_items_progress():
    """The records found for the ticket in hand are in its notes."""
    order_line = re.compile(r"^Order ORD-\d+ \| customer CUS-\d+ \| sku SKU-\w+ \| quantity \d+", re.MULTILINE)
    messages, tools = drive_until("work_queue", lambda ms: bool(order_line.search(_tool_texts(ms))))
    assert order_line.search(_tool_texts(messages)).group(0) in notes_of(messages, tools)


def test_big_output_notes_hold_the_located_detail():
    """The status it located for the question in hand is in its notes."""
    def answered(ms):
        return any(c["function"]["name"] == "answer_question" and '"unknown"' not in c["function"]["arguments"]
                   for c in _calls(ms, "answer_question"))
    messages, tools = drive_until("big_output", answered)
    call = _calls(messages, "answer_question")[-1]
    status = re.search(r'"value": "(\d+)"', call["function"]["arguments"]).group(1)
    request = re.search(r"request (req-[0-9a-f]{8})", "\n".join(m.get("content") or "" for m in messages
                                                              if m["role"] == "user")[-400:]).group(1)
    assert f"{request} host=noted status={status}" in notes_of(messages, tools)


def test_plant_notes_hold_user_facts_and_their_updates():
    """The facts the user stated, as updated, are in its notes."""
    update = re.compile(r"Update: the (.+?) is now (.+?) \(")
    messages, tools = drive_until("plant_early_ask_late", lambda ms: any(
        m["role"] == "user" and update.search(m["content"]) for m in ms), max_steps=400)
    name, value = next(update.search(m["content"]) for m in messages if m["role"] == "user" and update.search(m["content"])).groups()
    assert f"Fact: {name} = {value}" in notes_of(messages, tools)


def test_agent_reset_repo_maintenance_no_longer_loops_at_32k(run_suite, suite_file):
    """At a 32k window agent_reset looped on repo_maintenance-0 (80 resets, max_requests) as its
    notes left out the failure it had just read; with the finding in its notes it finishes, and the loop comes back
    as notes_completeness drops."""
    suite = str(suite_file(task_ids={"repo_maintenance-0"}))
    careful = run_suite(suite, strategies="agent_reset", window=32_000)
    assert careful["success"].all() and careful["agent_resets"].max() <= 5
    careless = run_suite(suite, strategies="agent_reset", window=32_000, knobs={"notes_completeness": 0.0})
    assert careless["agent_resets"].sum() > 10 * careful["agent_resets"].sum()
