"""Rebuild every view that was sent from an event log alone and check it against its hash."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from harness.context import MAIN_PROFILE
from harness.events import read_events
from harness.view import ViewState


@dataclass
class ReplayReport:
    path: str
    checked: int = 0
    mismatches: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.mismatches and self.checked > 0


def replay_file(path: str | Path) -> ReplayReport:
    events = read_events(path)
    report = ReplayReport(str(path))
    start = next((e for e in events if e["type"] == "run_start"), None)
    if start is None:
        report.mismatches.append("no run_start event")
        return report
    tools_hash = start["tools_hash"]
    view = ViewState()
    for event in events:
        if event["type"] == "llm_call" and event.get("profile") == MAIN_PROFILE and "view_hash" in event:
            report.checked += 1
            rebuilt = view.hash(tools_hash)
            if rebuilt != event["view_hash"]:
                report.mismatches.append(f"event {event['id']}: rebuilt view hash {rebuilt} != sent {event['view_hash']}"
                                         f" ({len(view.ids)} vs {event.get('view_len')} messages)")
        try:
            view.apply(event)
        except (KeyError, ValueError) as exc:
            report.mismatches.append(f"event {event['id']}: invalid view operation: {exc}")
            break
    return report
