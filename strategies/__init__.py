"""Strategies: one module each, a registry by name, and loading by import path."""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field, is_dataclass
from typing import Any, Callable, Mapping, TypeVar

from harness.core.errors import ConfigError, did_you_mean
from strategies.base import Stack, Strategy

# name -> "module:Class"; modules load lazily so one broken strategy cannot break the rest.
REGISTRY: dict[str, str] = {
    "none": "strategies.none:NoManagement",
    "compaction_ladder": "strategies.compaction_ladder:CompactionLadder",
    "tool_output_limits": "strategies.tool_output_limits:ToolOutputLimits",
    "warn_on_cache_busts": "strategies.warn_on_cache_busts:WarnOnCacheBusts",
    "observation_masking": "strategies.observation_masking:ObservationMasking",
    "clear_tool_uses": "strategies.clear_tool_uses:ClearToolUses",
    "agent_reset": "strategies.agent_reset:AgentReset",
    "hard_summarize": "strategies.hard_summarize:HardSummarize",
    "llm_summarizing": "strategies.llm_summarizing:LLMSummarizing",
    # A provider's own compaction, asked for in the request: the provider forgets.
    "anthropic.compaction": "strategies.anthropic_compaction:AnthropicCompaction",
    "anthropic.context_editing": "strategies.anthropic_context_editing:AnthropicContextEditing",
    "openai.compaction": "strategies.openai_compaction:OpenAICompaction",
    "openai.compact": "strategies.openai_compact:OpenAICompact",
    # Adapters: the real libraries' code (strategies.adapters), each needing its extra.
    "pai.tiered_compaction": "strategies.adapters.pydantic_ai:TieredCompactionAdapter",
    "pai.tool_output_limits": "strategies.adapters.pydantic_ai:ToolOutputLimitsAdapter",
    "pai.warn_on_cache_busts": "strategies.adapters.pydantic_ai:WarnOnCacheBustsAdapter",
    "inspect.compaction_edit": "strategies.adapters.inspect_ai:CompactionEditAdapter",
    "inspect.compaction_trim": "strategies.adapters.inspect_ai:CompactionTrimAdapter",
    "inspect.compaction_summary": "strategies.adapters.inspect_ai:CompactionSummaryAdapter",
    "inspect.compaction_native": "strategies.adapters.inspect_native:CompactionNativeAdapter",
    "inspect.compaction_auto": "strategies.adapters.inspect_native:CompactionAutoAdapter",
    "anthropic_sdk.compaction": "strategies.adapters.anthropic_sdk:AnthropicSDKCompaction",
    "openhands.llm_summarizing": "strategies.adapters.openhands:LLMSummarizingAdapter",
    "openhands.pipeline": "strategies.adapters.openhands:PipelineAdapter",
    "litellm.context_management": "strategies.adapters.litellm_context_management:LitellmContextManagementAdapter",
    "langchain.summarization": "strategies.adapters.langchain:SummarizationAdapter",
    "langchain.clear_tool_uses": "strategies.adapters.langchain:ClearToolUsesAdapter",
    "strands.sliding_window": "strategies.adapters.strands:SlidingWindowAdapter",
    "strands.summarizing": "strategies.adapters.strands:SummarizingAdapter",
    "headroom.compress": "strategies.adapters.headroom:HeadroomCompress",
    "adk.compaction": "strategies.adapters.google_adk:EventsCompactionAdapter",
}

COMPOSE_KEY = "with"
T = TypeVar("T")


def comparison_strategies() -> list[str]:
    """The native strategies that `--strategies all` compares (observe-only add-ons, the adapters, which need
    extras, and a provider's own compaction, which needs that provider, excluded)."""
    classes = {name: strategy_class(name) for name in REGISTRY}
    return sorted(name for name, cls in classes.items()
                  if cls.library is None and cls.provider is None and cls.standalone)


@dataclass(frozen=True)
class StrategySpec:
    """A strategy as plain data: its label in results, its name or import path, its config."""

    name: str
    config: dict[str, Any] = field(default_factory=dict)
    label: str = ""

    @property
    def display(self) -> str:
        return self.label or self.name


def strategy_class(name: str) -> type[Strategy]:
    """The class a registered name or `module:Class` import path names; anything wrong with it
    (a module that fails to import for any reason, a missing class, a Config that is no dataclass)
    is a ConfigError naming the strategy."""
    if not isinstance(name, str):
        raise ConfigError(f"strategy name: expected a string, got {name!r}")
    target = REGISTRY.get(name, name)
    if ":" not in target:
        raise ConfigError(
            f"unknown strategy {name!r}{did_you_mean(name, REGISTRY)}; registered: {', '.join(sorted(REGISTRY))}; "
            "or give an import path such as mypkg.module:MyStrategy"
        )
    module_name, _, attribute = target.partition(":")
    if not (module_name and attribute):
        raise ConfigError(f"strategy {name!r}: an import path names a module and a class, as mypkg.module:MyStrategy")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(f"strategy {name!r}: cannot import module {module_name!r}: {exc}") from exc
    except (Exception, SystemExit) as exc:  # a user module's own bug, SyntaxError included
        raise ConfigError(f"strategy {name!r}: importing module {module_name!r} raised "
                          f"{type(exc).__name__}: {exc}") from exc
    cls = getattr(module, attribute, None)
    if not (isinstance(cls, type) and issubclass(cls, Strategy)):
        raise ConfigError(f"strategy {name!r}: {target} is not a subclass of strategies.base.Strategy")
    if not (isinstance(cls.Config, type) and is_dataclass(cls.Config)):
        raise ConfigError(f"strategy {name!r}: {target}.Config must be a dataclass, got {cls.Config!r}")
    return cls


def call_strategy(where: str, method: str, call: Callable[[], T]) -> T:
    """Run strategy code during validation: its exception (a bug, not bad input of ours) becomes a
    ConfigError naming the strategy and the method, so it fails before any model call without a traceback."""
    try:
        return call()
    except ConfigError:
        raise
    except (Exception, SystemExit) as exc:
        raise ConfigError(f"{where}: {method} raised {type(exc).__name__}: {exc}") from exc


def build_strategy(spec: StrategySpec) -> Strategy:
    """Build (and so validate) a strategy; a `with` list composes further strategies after it."""
    if spec.config is not None and not isinstance(spec.config, Mapping):
        raise ConfigError(f"strategy {spec.display}: expected a mapping of options, got {spec.config!r}")
    config = dict(spec.config or {})
    extras = config.pop(COMPOSE_KEY, [])
    if not isinstance(extras, list):
        raise ConfigError(f"strategy {spec.display}: '{COMPOSE_KEY}' must be a list of {{name, config}} entries")
    primary = _construct(spec.name, config, f"strategy {spec.display}")
    if not extras:
        return primary
    parts = [primary]
    for index, extra in enumerate(extras):
        where = f"strategy {spec.display}.{COMPOSE_KEY}[{index}]"
        if isinstance(extra, str):
            extra = {"name": extra}
        if not isinstance(extra, dict) or set(extra) - {"name", "config"} or not isinstance(extra.get("name"), str):
            raise ConfigError(f"{where}: expected {{name, config}}, got {extra!r}")
        parts.append(_construct(extra["name"], extra.get("config"), where))
    return Stack(parts)


def _construct(name: str, config: Any, where: str) -> Strategy:
    """A strategy built from its config; an exception of its own code names it (`where`) and the method."""
    cls = strategy_class(name)
    method = f"{cls.__name__}.from_config" if "from_config" in cls.__dict__ else f"{cls.__name__}.__init__"
    return call_strategy(where, method, lambda: cls.from_config(config, where))
