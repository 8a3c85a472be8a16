"""Inspect AI's provider-native compaction: `CompactionNative` and `CompactionAuto` (inspect_ai/model/_compaction/
native.py, auto.py), run by ctxbench's runner through Inspect's own `compaction()` handler, as the other Inspect
adapters are (strategies.adapters.inspect_ai).

Native compaction is the provider's: `CompactionNative.compact` calls `Model.compact`, which calls the provider class's
`compact()`. So the handler's target model here is Inspect's own provider class with its SDK client, for the
`summary` profile's provider:
* `AnthropicAPI` (model/_providers/anthropic.py `compact`): a generate carrying the `compact_20260112` edit with the
  API's minimum trigger, `MIN_COMPACTION_TOKENS` 50,000, and `pause_after_compaction`; it returns the compaction
  message and a user message "Please continue working."; no compaction block in the reply is its NotImplementedError.
  Inspect's `streaming` model argument is off (the simulated provider answers no streams) and the client's timeout is
  set, which the SDK asks of non-streaming requests of Inspect's 32,000 max tokens;
* `OpenAIAPI` (model/_providers/openai.py `compact`): `client.responses.compact`, on the Responses API only (Inspect's
  `responses_api`: its default for GPT-5, o-series and Codex models; on for the mock, which serves it); it returns
  the compacted window, its compaction item held in a user message (_openai_responses.py
  `chat_messages_from_compact_response`); a 404 or 405 is its NotImplementedError.
Its SDK client's transport is ctxbench's (strategies.adapters.provider_wire): with the mock the simulated provider
answers in process through serve-mock's route code, with a real model the request goes to the API; each model request
is a side call of the `summary` profile, Inspect's token counting (Anthropic's free `count_tokens`) is not.

A profile whose provider has no native compaction in Inspect gets the other adapters' target model, ctxbench's
ModelAPI, whose `compact` is Inspect's base `ModelAPI.compact`: NotImplementedError. `CompactionNative` then gives up
(the run ends `strategy_failed` with Inspect's message); `CompactionAuto` falls back to `CompactionSummary` (auto.py
`_delegate_outcome`), whose summary is a side call as in inspect.compaction_summary.

After a native compaction the view is what the handler returns: the system prompt (native compaction keeps no other
prefix: `preserve_prefix` False) and the provider's window: Anthropic's compaction message (its block kept as litellm
keeps a reply's: harness.models.provider_compaction) and "Please continue working."; OpenAI's kept user messages and
its compaction item (an assistant message's, as the LLM layer sends items back on the Responses API). While the view
holds an Anthropic compaction block, each main request carries the edit Inspect's own generate adds for such input
(anthropic.py `_add_edit_compaction`: the trigger just under the window, so that the API accepts the block and does
not compact on its own).

Thresholds: Inspect's own `threshold` (tokens, or a fraction <= 1.0 of the window) is resolved against the run's input
budget as Inspect's `_resolve_threshold` does (int(fraction x window)); Inspect's constructors take every parameter,
after ctxbench checked their types (and `memory`'s values).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from harness.core.config import option, require
from harness.core.errors import ConfigError, StrategyFailed
from harness.models.cache_policy import ANTHROPIC, COMPATIBLE, OPENAI, OPENAI_BREAKPOINTS, provider_family
from harness.models.provider_compaction import (ANTHROPIC_MIN_TRIGGER, blocks_alone, compaction_blocks, compaction_items,
                                                with_blocks, with_items)
from strategies.adapters import ANTHROPIC_SDK_FOR_INSPECT, INSPECT_AI, OPENAI_SDK, LibraryError
from strategies.adapters.inspect_ai import _Common, _contained, _InspectCompaction
from strategies.thresholds import REFERENCE_BUDGET

if TYPE_CHECKING:
    from harness.conversation.context import RunContext
    from harness.conversation.view import Message
    from harness.models.llm import LLMProfile

# The SDK's non-streaming requests of more than ~21k max tokens need a timeout of the client's own (anthropic
# _base_client.py `_calculate_nonstreaming_timeout`); Inspect sends 32,000 (ANTHROPIC_MAX_TOKENS).
NONSTREAMING_TIMEOUT_S = 600.0
OPENAI_OVERFLOW_CODE = "context_length_exceeded"  # OpenAI's error code for an input past the window


@dataclass
class CompactionNativeConfig(_Common):
    memory: bool = option(False, "Inspect's memory warning before compacting (native.py: off by default)")
    instructions: str | None = option(None, "instructions for the provider's compaction (Anthropic: the edit's "
                                            "`instructions`, which replace the API's summarizing prompt)")


@dataclass
class CompactionAutoConfig(_Common):
    memory: bool | str = option("auto", "Inspect's memory warning: \"auto\" warns before a summary fallback only "
                                        "(auto.py), or true/false for both paths")
    instructions: str | None = option(None, "instructions for the native compaction and the summary fallback")

    def __post_init__(self) -> None:
        super().__post_init__()
        require(self.memory == "auto" or isinstance(self.memory, bool),
                f"memory must be true, false or \"auto\", got {self.memory!r}")


# Families whose compaction Inspect runs through its OpenAIAPI (`/responses/compact`): OpenAI's, and an endpoint that
# speaks OpenAI's API (serve-mock's Responses route; another one without the route answers 404, which Inspect reads as
# "not available").
_OPENAI_FAMILIES = (OPENAI, OPENAI_BREAKPOINTS, COMPATIBLE)


def native_family(profile: "LLMProfile") -> str | None:
    """The provider whose native compaction Inspect runs for this profile (ANTHROPIC or OPENAI), or None."""
    family = provider_family(profile.model, profile.mock.get("cache"), profile.api_base)
    return ANTHROPIC if family == ANTHROPIC else OPENAI if family in _OPENAI_FAMILIES else None


def anthropic_model(ctx: "RunContext", profile_name: str, purpose: str) -> Any:
    """Inspect's AnthropicAPI for the profile, its SDK client's requests ctxbench side calls. For the mock, Inspect's
    model registry is told the mock's window (what Inspect's summary fallback fits its input to): the registry is
    the process's, by model name, so concurrent runs of one process at two mock windows share the latest."""
    from inspect_ai.model import GenerateConfig, ModelInfo, get_model, set_model_info

    from strategies.adapters.provider_wire import api_key, async_client, model_name  # here: they load litellm

    profile = ctx.profiles[profile_name]
    with _contained():
        model = get_model(f"anthropic/{model_name(profile)}", config=GenerateConfig(max_retries=0),
                          base_url=profile.api_base, api_key=api_key(profile), memoize=False, streaming=False,
                          timeout=NONSTREAMING_TIMEOUT_S, http_client=async_client(ctx, profile_name, purpose))
    window = profile.input_budget()
    if profile.is_mock and window:
        set_model_info(str(model), ModelInfo(context_length=window, input_tokens=window))
    return model


def openai_model(ctx: "RunContext", profile_name: str, purpose: str) -> Any:
    """Inspect's OpenAIAPI for the profile, its SDK client's requests ctxbench side calls. Inspect uses the Responses
    API (which its `compact` needs) for the models it prefers it for (GPT-5, o-series, Codex); the mock serves it
    whatever model it bills as (ours: `responses_api` on)."""
    from inspect_ai.model import GenerateConfig, ModelInfo, get_model, set_model_info

    from strategies.adapters.provider_wire import api_key, async_client, model_name  # here: they load litellm

    profile = ctx.profiles[profile_name]
    with _contained():
        model = get_model(f"openai/{model_name(profile)}", config=GenerateConfig(max_retries=0),
                          base_url=profile.api_base, api_key=api_key(profile), memoize=False,
                          http_client=async_client(ctx, profile_name, purpose),
                          **({"responses_api": True} if profile.is_mock else {}))
    window = profile.input_budget()
    if profile.is_mock and window:
        set_model_info(str(model), ModelInfo(context_length=window, input_tokens=window))
    return model


class _NativeAdapter(_InspectCompaction):
    """Inspect's native compaction through its provider classes; a condensation of kind `summary` in the log."""

    event_type = "condensation"
    fallback = ""  # what follows when native compaction does not happen (said in a warning)

    def __init__(self, config: Any = None, where: str | None = None):
        super().__init__(config, where)
        self._where = where or f"strategy {self.name}"
        self._edit_options: dict[str, Any] | None = None  # Inspect's edit for input holding compaction (per run)
        self._provider_sdk: Any = None  # the SDK (Library) of Inspect's provider class that made the requests

    def libraries(self) -> list[str]:
        """Inspect, and the SDK of Inspect's provider class when one ran (its client built the requests)."""
        return [INSPECT_AI.label, *([self._provider_sdk.label] if self._provider_sdk is not None else [])]

    def check_main(self, profile: "LLMProfile", where: str) -> None:
        """Native compaction on Anthropic needs the anthropic SDK Inspect's provider imports (the `inspect` extra)."""
        if native_family(profile) == ANTHROPIC:
            ANTHROPIC_SDK_FOR_INSPECT.load(where, "inspect_ai.model._providers.anthropic")

    def threshold_values(self, budget: int | None) -> dict[str, int]:
        return {"threshold": _resolved(self.config.threshold, budget or REFERENCE_BUDGET)}

    def threshold_warnings(self, budget: int | None, label: str) -> list[str]:
        threshold = _resolved(self.config.threshold, budget or REFERENCE_BUDGET)
        if threshold >= ANTHROPIC_MIN_TRIGGER:
            return []
        return [f"strategy {label}: threshold {threshold:,} is below the {ANTHROPIC_MIN_TRIGGER:,} input tokens that "
                "Inspect's Anthropic compaction request sets as its trigger (the API's minimum): a compaction of less "
                f"never triggers there ({self.fallback})"]

    def _start(self, ctx: "RunContext") -> None:
        budget = ctx.budget()
        if budget:  # a fraction of the run's input budget, as Inspect resolves one against the model's window (with
            # an unknown budget Inspect reads the model's own)
            config = replace(self.config, threshold=_resolved(self.config.threshold, budget))
            with INSPECT_AI.configuring(self._where), _contained():
                self.compaction = self.build(INSPECT_AI.load(self._where, "inspect_ai.model"), config)
        self._edit_options, self._provider_sdk = None, None
        super()._start(ctx)

    def target_model(self, ctx: "RunContext") -> Any:
        family = native_family(ctx.profiles[self.profile()])
        if family is None:
            return super().target_model(ctx)
        if family == OPENAI:
            self._provider_sdk = OPENAI_SDK
            return openai_model(ctx, self.profile(), self.inspect_class)
        ANTHROPIC_SDK_FOR_INSPECT.load(self._where, "inspect_ai.model._providers.anthropic")
        from inspect_ai.model._providers.anthropic import _add_edit_compaction

        self._provider_sdk = ANTHROPIC_SDK_FOR_INSPECT
        model = anthropic_model(ctx, self.profile(), self.inspect_class)
        request: dict[str, Any] = {}
        _add_edit_compaction(request, [], has_1mm_context=model.api.is_claude_frontier())
        self._edit_options = {"context_management": request["extra_body"]["context_management"]}
        return model

    def request_options(self, ctx: "RunContext") -> dict[str, Any]:
        """Inspect's edit for input holding a compaction block (anthropic.py generate -> `_add_edit_compaction`)."""
        if self._edit_options is None or not any(_anthropic_block(message) for message in self._input):
            return {}
        return self._edit_options

    def convert_in(self, message: "Message", cid: int | None) -> Any:
        """A message carrying a provider's compaction keeps it as Inspect's provider holds it (ContentData)."""
        converted = super().convert_in(message, cid)
        blocks, items = compaction_blocks(message), compaction_items(message)
        if blocks:
            from anthropic.types.beta import BetaCompactionBlock
            from inspect_ai.model import ContentText
            from inspect_ai.model._providers.anthropic import _content_data_for_compaction

            data = [_content_data_for_compaction(BetaCompactionBlock.model_validate(dict(block))) for block in blocks]
            text = converted.text
            converted.content = [*data, *([ContentText(text=text)] if text else [])]
        elif items:  # Inspect holds an OpenAI compaction item as a user message of its own (_openai_responses.py
            # `chat_messages_from_compact_response`), the item's id and encrypted content in its metadata
            from inspect_ai.model import ChatMessageUser, ContentData

            converted = ChatMessageUser(id=converted.id, metadata=converted.metadata, content=[
                ContentData(data={"compaction_metadata": {"type": "openai_compact", "id": item.get("id"),
                                                          "encrypted_content": item.get("encrypted_content")}})
                for item in items])
        return converted

    def convert_out(self, message: Any, original: "Message | None") -> "Message":
        """A compaction message keeps its block or item, as litellm keeps a reply's (provider_specific_fields); an
        OpenAI item, which Inspect holds in a user message, is an assistant message's, as the LLM layer sends items
        (harness.models.responses_items)."""
        block = _anthropic_block(message)
        if block is not None:
            return blocks_alone(with_blocks(super().convert_out(message, original), [block]))
        item = _openai_item(message)
        if item is not None:
            return with_items({"role": "assistant", "content": None}, [item])
        return super().convert_out(message, original)

    @staticmethod
    def is_summary(message: Any) -> bool:
        return _anthropic_block(message) is not None or _openai_item(message) is not None or \
            _InspectCompaction.is_summary(message)

    def _compact(self, ctx: "RunContext", force: bool) -> None:
        """A compaction request past the provider's window is the strategy failing to fit it, as Inspect's Anthropic
        provider says ("did not trigger", a give-up); its OpenAI provider raises the API's own error, whose code says
        so (OpenAI's `context_length_exceeded`)."""
        try:
            super()._compact(ctx, force)
        except LibraryError as exc:
            if getattr(exc.__cause__, "code", None) == OPENAI_OVERFLOW_CODE:
                raise StrategyFailed(str(exc)) from exc
            raise

    def _event_fields(self, event: Any) -> dict[str, Any]:
        fields = super()._event_fields(event)
        if event is not None:
            meta = event.metadata or {}
            fields.update(kind="summary", applied=meta.get("strategy_applied", meta.get("strategy")),
                          **({"fallback_reason": meta["fallback_reason"]} if "fallback_reason" in meta else {}))
        return fields


def _resolved(threshold: int | float, budget: int) -> int:
    """A threshold in tokens as Inspect resolves it against a window (_compaction.py `_resolve_threshold`)."""
    if isinstance(threshold, int) or threshold > 1.0:
        return int(threshold)
    return int(threshold * budget)


def _anthropic_block(message: Any) -> dict[str, Any] | None:
    """The compaction block of an Inspect message made by its Anthropic provider (anthropic.py
    `_compaction_from_message`), as a plain block; None for any other message."""
    if getattr(message, "role", None) != "assistant" or not isinstance(message.content, list):
        return None
    from inspect_ai.model._providers.anthropic import _compaction_from_message

    block = _compaction_from_message(message)
    return {key: value for key, value in dict(block).items() if value is not None} if block else None


def _openai_item(message: Any) -> dict[str, Any] | None:
    """The compaction item of an Inspect message made by its OpenAI provider (_openai_responses.py
    `_extract_compaction_from_content_data`), as a plain item; None for any other message."""
    if getattr(message, "role", None) != "user" or not isinstance(message.content, list):
        return None
    from inspect_ai.model._openai_responses import _extract_compaction_from_content_data

    item = _extract_compaction_from_content_data(message.content)
    return {key: value for key, value in dict(item).items() if value is not None} if item else None


class CompactionNativeAdapter(_NativeAdapter):
    """Inspect's CompactionNative: the provider's own compaction, or Inspect's NotImplementedError."""

    name = "inspect.compaction_native"
    summary = "Inspect's CompactionNative: the provider compacts (Anthropic's compaction edit, through Inspect's client)"
    source = "Inspect AI inspect_ai.model._compaction.native (the library's code, its Anthropic provider)"
    Config = CompactionNativeConfig
    inspect_class = "CompactionNative"
    fallback = "CompactionNative then gives up: strategy_failed"

    def check_main(self, profile: "LLMProfile", where: str) -> None:
        """A provider without native compaction can never compact here: say so before any model call."""
        if native_family(profile) is None:
            raise ConfigError(f"{where}: Inspect's CompactionNative compacts with the provider's own API, and "
                              f"{profile.model} has none that Inspect runs (Anthropic's, OpenAI's Responses API: an "
                              "anthropic/... or openai/... model, or the mock); inspect.compaction_auto falls back to a "
                              "summary")
        super().check_main(profile, where)


class CompactionAutoAdapter(_NativeAdapter):
    """Inspect's CompactionAuto: native compaction where the provider has it, else (or when it fails) a summary."""

    name = "inspect.compaction_auto"
    summary = "Inspect's CompactionAuto: the provider's native compaction, else Inspect's CompactionSummary"
    source = "Inspect AI inspect_ai.model._compaction.auto (the library's code, its Anthropic provider)"
    Config = CompactionAutoConfig
    inspect_class = "CompactionAuto"
    fallback = "CompactionAuto then falls back to CompactionSummary"

