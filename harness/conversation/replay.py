"""Rebuild every view that was sent from an event log alone and check it against its hash.

Condensation records are validated too: every id they name must be an earlier event, and an
agent reset must commit the request of its own sole `condense` call (the agent's message event
with its CondenseAction) and that call's result (its CondenseObservation). As the SDK validates
references before rebuilding the view from them (seed 000), a record that fails is reported and
not applied: the view is rebuilt from the valid records only.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.models.profiles import MAIN_PROFILE
from harness.conversation.events import read_events
from harness.conversation.view import ViewState


@dataclass
class ReplayReport:
    path: str
    checked: int = 0
    mismatches: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.mismatches and self.checked > 0


REFERENCE_FIELDS = ("request_id", "action_id", "observation_id", "notice_id", "summary_id")


def condensation_problems(event: dict[str, Any], events: list[dict[str, Any]]) -> list[str]:
    """References of a `condensation` record that do not hold (the view is rebuilt only from valid ones)."""
    problems = []
    for name in REFERENCE_FIELDS + ("forgotten_ids", "pending_user_ids"):
        values = event.get(name)
        for value in values if isinstance(values, list) else ([] if values is None else [values]):
            if not isinstance(value, int) or not 0 <= value < event["id"]:
                problems.append(f"{name} {value!r} is not an earlier event")
    if problems:
        return problems
    request = events[event["request_id"]] if "request_id" in event else None
    if request is None or request["type"] != "condensation_request":
        return ["request_id does not name a condensation_request"]
    if event.get("kind") == "agent_reset":
        action, observation = events[event["action_id"]], events[event["observation_id"]]
        calls = action.get("message", {}).get("tool_calls") or []
        if action["type"] != "message" or len(calls) != 1 or calls[0].get("id") != request.get("tool_call_id"):
            problems.append("action_id is not the request's sole condense call")
        elif (action.get("payload") or {}).get("type") != "CondenseAction":
            problems.append("action_id's message carries no CondenseAction")
        if observation.get("message", {}).get("tool_call_id") != request.get("tool_call_id") or \
                (observation.get("payload") or {}).get("type") != "CondenseObservation":
            problems.append("observation_id is not the condense call's CondenseObservation")
        if event["request_id"] != (observation.get("payload") or {}).get("request_id"):
            problems.append("the observation answers another condensation_request")
    return problems


def replay_file(path: str | Path) -> ReplayReport:
    events = read_events(path)
    report = ReplayReport(str(path))
    start = next((e for e in events if e["type"] == "run_start"), None)
    if start is None or not isinstance(start.get("tools_hash"), str):
        report.mismatches.append("no run_start event" if start is None else "the run_start event has no tools_hash")
        return report
    tools_hash = start["tools_hash"]
    view = ViewState()
    for event in events:
        try:
            replay_event(event, events, view, tools_hash, report)
        except (KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:  # a log not written by a run
            report.mismatches.append(f"event {event['id']}: invalid {event['type']} event or view operation "
                                     f"({type(exc).__name__}: {exc})")
            break
    return report


def replay_event(event: dict[str, Any], events: list[dict[str, Any]], view: ViewState, tools_hash: str,
                  report: ReplayReport) -> None:
    """Check one event against the view rebuilt so far (a sent view's hash, a condensation's references), then apply it."""
    if event["type"] == "llm_call" and event.get("profile") == MAIN_PROFILE and "view_hash" in event:
        report.checked += 1
        rebuilt = view.hash(tools_hash)
        if rebuilt != event["view_hash"]:
            report.mismatches.append(f"event {event['id']}: rebuilt view hash {rebuilt} != sent {event['view_hash']}"
                                     f" ({len(view.ids)} vs {event.get('view_len')} messages)")
    if event["type"] == "condensation":
        problems = condensation_problems(event, events)
        report.mismatches.extend(f"event {event['id']}: {problem} (not applied)" for problem in problems)
        if problems:
            return
    view.apply(event)
