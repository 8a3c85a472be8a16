"""A user strategy that holds a credential in its config (a service it would call): the secrets tests
plant secrets in it. It changes no view; with `profile` it makes one side call of that LLM profile per run
(its failure is the strategy's to absorb), with `fail` it crashes with a message that echoes its key."""
from __future__ import annotations

from dataclasses import dataclass

from strategies.base import Strategy


@dataclass
class KeyedConfig:
    api_key: str = ""
    profile: str = ""
    fail: bool = False


class KeyedService(Strategy):
    name = "keyed_service"
    Config = KeyedConfig

    def profiles_needed(self) -> list[str]:
        return [self.config.profile] if self.config.profile else []

    def before_request(self, ctx):
        if self.config.fail:
            raise RuntimeError(f"the service refused key {self.config.api_key}")
        if self.config.profile and ctx.requests == 0:
            try:
                ctx.call_llm(self.config.profile, [{"role": "user", "content": "ping"}], "keyed_service")
            except Exception:
                pass  # recorded as a failed llm_call event
