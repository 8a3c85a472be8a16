"""LLM profiles from their config data, checked: below the runner, so worker processes and executors
build them without importing the runner."""
from __future__ import annotations

from typing import Any

from harness.core.config import build_dataclass
from harness.core.errors import ConfigError
from harness.models.llm import LLMProfile

MAIN_PROFILE = "main"  # the agent's model; a strategy's side calls name their own profiles ("summary", ...)
# What a side call on the main model's own `/responses/compact` endpoint is logged as (RunContext.call_compact): the
# main model, counted as a side call beside the summaries; not a profile a user can define (build_profiles).
COMPACT_PROFILE = "main/compact"


def _seed_profile_keys(value: Any, where: str) -> Any:
    """Accept seed 000's own profile key `maxInputTokens` as `max_input_tokens`."""
    if not isinstance(value, dict) or "maxInputTokens" not in value:
        return value
    if "max_input_tokens" in value:
        raise ConfigError(f"{where}: give maxInputTokens or max_input_tokens, not both")
    value = dict(value)
    value["max_input_tokens"] = value.pop("maxInputTokens")
    return value


def build_profiles(data: dict[str, dict[str, Any]]) -> dict[str, LLMProfile]:
    if MAIN_PROFILE not in data:
        raise ConfigError(f"profiles: a {MAIN_PROFILE!r} profile is required")
    if COMPACT_PROFILE in data:
        raise ConfigError(f"profiles: {COMPACT_PROFILE!r} names the main model's compaction calls; pick another name")
    profiles = {name: build_dataclass(LLMProfile, _seed_profile_keys(value, f"profiles.{name}"), f"profiles.{name}")
                for name, value in data.items()}
    for name, profile in profiles.items():
        if profile.is_mock:
            from harness.models.mock.provider import MockConfig, check_mock_model

            check_mock_model(profile.model, f"profiles.{name}.model")
            config = build_dataclass(MockConfig, profile.mock, f"profiles.{name}.mock")
            config.knobs_for(profile.model, f"profiles.{name}.mock.knobs")  # the agent's or the summarizer's
    return profiles
