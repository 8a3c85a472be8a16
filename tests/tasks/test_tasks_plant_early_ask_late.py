"""plant_early_ask_late: facts early, updates mid-run, questions late, abstain on what was never said."""
import json

import pytest

from harness.core.errors import ConfigError
from harness.models.mock.agents import plant_early_ask_late as agent
from harness.models.mock.agents.common import Visible, build_knobs
from tasks.base import ToolCall
from tasks.plant_early_ask_late import Params, build


def call(env, name, **args):
    return env.execute(ToolCall.from_message({"id": "c", "function": {"name": name, "arguments": json.dumps(args)}}))


def test_updates_replace_earlier_facts_and_the_never_given_fact_expects_unknown():
    env = build(Params(facts=5, updates=3, batches=3), seed=4)
    expected = env.expected_answers()
    assert expected[env.never] == "unknown" and env.never not in env.values
    changed = [name for name in env.given if env.current[name] != env.values[name]]
    assert len(changed) == 3
    text = "\n".join(env.messages)
    for name in changed:
        assert f"The {name} is {env.values[name]}." in env.messages[0]
        assert f"Update: the {name} is now {env.current[name]}" in text
        assert expected[name] == env.current[name]


def test_messages_arrive_mid_run_once_the_batch_is_audited():
    env = build(Params(batches=2, files_per_batch=2), seed=5)
    assert env.user_messages_due(3) == [] and not env.has_pending_user_messages()
    for path in env.batch_files[0]:
        call(env, "record_count", path=path, errors=env.counts[path])
    assert env.has_pending_user_messages()
    assert "Audit batch 2 of 2" in env.user_messages_due(4)[0]
    assert call(env, "record_count", path="logs/none.log", errors=1).is_error


def test_answering_unknown_for_a_given_fact_is_wrong_and_for_the_never_given_one_right():
    env = build(Params(facts=2, updates=0, batches=1, files_per_batch=1), seed=6)
    path = env.batch_files[0][0]
    call(env, "record_count", path=path, errors=env.counts[path])
    call(env, "submit_answer", answer="; ".join(f"{n}=unknown" for n in env.asked))
    assert env.score().detail["answers_right"] == 1 and not env.score().success


def test_logs_carry_memos_that_are_not_the_users_word():
    env = build(Params(distractors=3), seed=7)
    assert all(text.count("INFO memo: the ") == 3 for path, text in env.fs.files.items() if path.startswith("logs/"))


@pytest.mark.parametrize("strategy, wins", [("stand_ins:SlidingWindow", False), ("stand_ins:ClearOlderTurns", True),
                                            ("none", True)])
def test_a_sliding_window_loses_the_early_facts(run_suite, tmp_path, strategy, wins):
    """Keeping user messages keeps the facts; a window sliding over them answers unknown."""
    path = tmp_path / "tasks.jsonl"
    path.write_text(json.dumps({"task_id": "pl", "family": "plant_early_ask_late", "seed": 8,
                                "params": {"facts": 4, "updates": 2, "batches": 3, "files_per_batch": 6}}) + "\n")
    runs = run_suite(str(path), strategies=strategy)
    assert bool(runs["success"].iloc[0]) is wins, runs[["strategy", "score"]]


def test_notes_completeness_knob_drops_facts_from_the_notes():
    env = build(Params(facts=4), seed=9)
    messages = [{"role": "system", "content": env.system_prompt},
                {"role": "user", "content": env.initial_user_messages()[0]}]
    full = Visible(messages, [], seed=0, knobs=build_knobs({}))
    careless = Visible(messages, [], seed=0, knobs=build_knobs({"notes_completeness": 0.0}))
    assert agent.notes(full, agent.find_task(full)).count("Fact: ") == 4
    assert "Fact: " not in agent.notes(careless, agent.find_task(careless))
    with pytest.raises(ConfigError, match="notes_completeness must be in"):
        build_knobs({"notes_completeness": 1.5})
