"""headroom-ai's `compress()`, run by ctxbench: a compression layer in front of every main request.

Headroom's users call `compress(messages, model=...)` on the whole conversation before each model call and send
what it returns (headroom/compress.py, its module docstring): the agent keeps its own history, and headroom
rewrites the copy that is sent. The adapter does that before every main request: it hands `compress()` the view
as the agent would send it without headroom (each message as logged, or as another strategy of a stack shows
it), and makes the view what `compress()` returned: a message it changed is a `replace` with its rendering, a
message it left alone is shown as logged (so one compressed on an earlier request and left alone now is shown
whole again). Headroom never adds, drops or reorders messages (transforms/pipeline.py: "live-zone-only
compression never drops messages"); an answer that does (another message count, or a message whose role or tool
call changed) cannot be mapped onto the view: the view is left as it is for that message or request and a
`compression_unmapped` event says so.

Every request is recorded as a `compression` event: headroom's own counts (`library_tokens_before`, `_after`,
`_saved`, its `transforms_applied`) and ctxbench's (`tokens_saved`: what the view sent is smaller than the same
messages uncompressed, counted as every request is), the numbers behind its "50-90% lower cost" claim; a change of
the view is a `compaction` event of step "headroom". Headroom's failures are its own: `compress()` catches every
error and returns the messages unchanged (fail-open), logging a warning; its warnings become `library_warning`
events.

Offline, by construction:

* `HEADROOM_OFFLINE=1`, headroom's air-gap switch (headroom/offline.py), is set before headroom is imported: it
  refuses headroom's telemetry beacon (on by default: telemetry/beacon.py `BEACON_DEFAULT_ON`), update check,
  license reporter and every model download.
* Kompress, headroom's ML text compressor, downloads a model from HuggingFace on first use
  (transforms/kompress_compressor.py; it also needs the `ml` extra). It is switched off with the library's own
  setting, `kompress_model="disabled"` ("only SmartCrusher + CacheAligner will run", compress.py
  CompressConfig): prose and logs then pass through, and JSON, code, search results, diffs, HTML and tables are
  compressed by headroom's structural compressors.
* Tokens: headroom counts with tiktoken (o200k_base for GPT-4o and later and for Claude, its
  tokenizers/registry.py); tiktoken's encodings are read from litellm's bundled copy (litellm's
  default_encoding sets TIKTOKEN_CACHE_DIR, loaded before headroom counts), so nothing is fetched. For a model
  whose encoding is not there (the retired GPT-3 models' r50k_base) headroom's own estimate is registered
  instead, as headroom falls back to it when the fetch fails, and a `library_warning` says so.

Options: `compress()`'s `model` (null: the main model, or for the mock the model it is billed as) and
`model_limit` (headroom's 200,000 at a 200k window: 1.0 x the run's input budget), and the fields of headroom's
`CompressConfig`, with its defaults, type-checked against its own dataclass; ours: `savings_profile` and `mode`
must be names headroom knows (it falls back with a warning where the adapter refuses), and `kompress_model` can
only be "disabled" (the default here, as above).
"""
from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import hashlib
import logging
import os
from collections import Counter
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any, ClassVar, Iterator, Mapping

from harness.core.config import build_dataclass, option, require
from harness.core.errors import ConfigError
from harness.core.frozen import thaw
from harness.core.tokens import count_message
from strategies import thresholds
from strategies.adapters import HEADROOM, Library, Wanted, apply_view
from strategies.base import Strategy

if TYPE_CHECKING:
    from harness.conversation.context import RunContext
    from harness.conversation.view import Message

TIKTOKEN_ENCODINGS = "https://openaipublic.blob.core.windows.net/encodings"
OFFLINE_SWITCH = "HEADROOM_OFFLINE"  # headroom/offline.py OFFLINE_ENV
KOMPRESS_OFF = "disabled"  # compress.py CompressConfig.kompress_model: "skip ML compression entirely"
MODES = (None, "agent")  # compress.py: mode None (default) or "agent" (lossless densify)
STEP = "headroom"
# A tool output large enough for headroom's content detector to run on it (it skips blocks under 500 characters).
WARM_UP = "\n".join(f"line {n}: nothing to see here" for n in range(100))
# What headroom says once per process (its content detector's backend) or once per model (its tokenizer), kept
# from the first time it was said, so that every run records it alike: by "" (the warm-up at load) and by model.
_SETUP_WARNINGS: dict[str, list[tuple[str, str, str]]] = {}
_CAPTURED: contextvars.ContextVar[list[logging.LogRecord] | None] = contextvars.ContextVar(
    "ctxbench_headroom_warnings", default=None)


@dataclass
class CompressCall:
    """`compress()`'s own arguments besides the messages and the config (compress.py `compress`)."""

    model: str | None = option(None, "the model headroom counts tokens for (null: the main model; the mock's: the "
                                     "model it is billed as)")
    model_limit: int | None = option(help="the model's context window, headroom's pressure measure (headroom's "
                                          "default 200,000 at a 200k window)", of_budget=1.0)

    def __post_init__(self) -> None:
        require(self.model_limit is None or self.model_limit > 0,
                f"model_limit must be a positive number of tokens, got {self.model_limit}")


class _Capture(logging.Handler):
    """Headroom's warnings, kept for the run whose call logged them (a context variable: headroom copies the
    caller's context into its own worker threads)."""

    def emit(self, record: logging.LogRecord) -> None:
        records = _CAPTURED.get()
        if records is not None:
            records.append(record)


def load(where: str) -> ModuleType:
    """Import headroom offline: its air-gap switch set, litellm's bundled tiktoken encodings in reach, its log
    kept to the adapter (warnings become events, nothing is printed)."""
    os.environ[OFFLINE_SWITCH] = "1"
    from harness.core.tokens import count_text

    count_text("tiktoken")  # loads litellm's tokenizer, which points TIKTOKEN_CACHE_DIR at its bundled encodings
    module = HEADROOM.load(where)
    logger = logging.getLogger("headroom")
    if not any(isinstance(handler, _Capture) for handler in logger.handlers):
        logger.addHandler(_Capture(logging.WARNING))
        logger.propagate = False
    if "" not in _SETUP_WARNINGS:
        with captured() as records, HEADROOM.calling("compress (warm-up)"):
            module.compress([{"role": "tool", "tool_call_id": "warm-up", "content": WARM_UP}],
                            kompress_model=KOMPRESS_OFF, protect_recent=0)
        _SETUP_WARNINGS[""] = said(records)
    return module


def said(records: list[logging.LogRecord]) -> list[tuple[str, str, str]]:
    """Headroom's warnings as (level, logger, message)."""
    return [(record.levelname, record.name, record.getMessage()[:2000]) for record in records]


def setup_warnings(model: str) -> list[tuple[str, str, str]]:
    """What headroom said when it was loaded and when it first resolved `model`'s tokenizer."""
    if model not in _SETUP_WARNINGS:
        from headroom.tokenizers import get_tokenizer

        with captured() as records, HEADROOM.calling("get_tokenizer"):
            pinned = pin_offline_tokenizer(model)
            get_tokenizer(model)
        _SETUP_WARNINGS[model] = pinned + said(records)
    return _SETUP_WARNINGS[""] + _SETUP_WARNINGS[model]


def pin_offline_tokenizer(model: str) -> list[tuple[str, str, str]]:
    """Headroom's own estimate for `model` where tiktoken would download its encoding: headroom counts an OpenAI
    model with tiktoken (tokenizers/registry.py), and tiktoken fetches an encoding that is not in its cache
    (litellm bundles o200k_base, cl100k_base and p50k_base, not the retired GPT-3 models' r50k_base). Headroom
    falls back to this estimate when the fetch fails; here it is never tried. Said as a warning."""
    from headroom.tokenizers import EstimatingTokenCounter, TokenizerRegistry
    from headroom.tokenizers.tiktoken_counter import get_encoding_for_model

    encoding = get_encoding_for_model(model)
    url = f"{TIKTOKEN_ENCODINGS}/{encoding}.tiktoken"  # tiktoken_ext/openai_public.py, the cache key's source
    cached = os.path.join(os.environ.get("TIKTOKEN_CACHE_DIR", ""), hashlib.sha1(url.encode()).hexdigest())
    if os.path.exists(cached):
        return []
    TokenizerRegistry.register(model, EstimatingTokenCounter())
    return [("WARNING", __name__, f"tiktoken's {encoding} for {model} is not on this machine (it would be "
                                  "downloaded): headroom's estimate counts its tokens")]


def compress_config(lib: ModuleType, data: Mapping[str, Any], where: str) -> Any:
    """Headroom's CompressConfig from the options, checked against its own dataclass (names, types, defaults)."""
    fields = dict(data)
    kompress = fields.setdefault("kompress_model", KOMPRESS_OFF)
    if kompress != KOMPRESS_OFF:
        raise ConfigError(f"{where}.kompress_model: only {KOMPRESS_OFF!r} runs offline (Kompress downloads its "
                          f"model from HuggingFace on first use), got {kompress!r}")
    with HEADROOM.configuring(where):
        config = build_dataclass(lib.CompressConfig, fields, where)
    if config.mode not in MODES:
        raise ConfigError(f"{where}.mode: headroom knows null (its default) and 'agent', got {config.mode!r}")
    if config.savings_profile is not None:
        from headroom.agent_savings import get_agent_savings_profile

        with captured():  # its warning for an unknown name: the refusal below says it
            known = get_agent_savings_profile(config.savings_profile).name
        if known != config.savings_profile.strip().lower():
            raise ConfigError(f"{where}.savings_profile: headroom has no profile {config.savings_profile!r} (it "
                              f"would fall back to {known!r})")
    return config


@contextlib.contextmanager
def captured() -> Iterator[list[logging.LogRecord]]:
    """The warnings headroom logs inside the block."""
    records: list[logging.LogRecord] = []
    token = _CAPTURED.set(records)
    try:
        yield records
    finally:
        _CAPTURED.reset(token)


class HeadroomCompress(Strategy):
    """headroom-ai's `compress()` on the whole view before every main request."""

    name = "headroom.compress"
    Config = CompressCall
    summary = "headroom's compress() on every request: its compressors rewrite tool outputs in the copy sent"
    source = "headroom-ai headroom.compress (the library's code)"
    library: ClassVar[Library] = HEADROOM
    other_keys = {
        "compress_user_messages": "compress user messages too (headroom's default false)",
        "compress_system_messages": "compress system messages (default true)",
        "protect_recent": "leave the last N messages alone (default 4)",
        "protect_analysis_context": "protect code when the user asks to analyse or review it (default true)",
        "frozen_message_count": "leading messages never rewritten: the provider's cached prefix (default 0)",
        "target_ratio": "Kompress's keep ratio (default null; Kompress is off here)",
        "min_tokens_to_compress": "messages shorter than this are left alone (default 250)",
        "kompress_model": "only \"disabled\" (Kompress downloads its model)",
        "savings_profile": "a named profile of headroom's: agent-90, balanced, coding, general (default null)",
        "diagnostics": "per-message decisions in headroom's result (default false)",
        "mode": "null (default) or \"agent\": lossless densification only",
        "verify_lossless": "revert each message whose compression is not provably lossless (default false)",
    }

    def __init__(self, config: CompressCall, options: Any, lib: ModuleType):
        super().__init__(config)
        self.options, self.lib = options, lib
        self.shown: dict[int, Message] = {}  # message id -> the rendering this adapter gave it

    @classmethod
    def from_config(cls, data: Mapping[str, Any] | None, where: str | None = None) -> "HeadroomCompress":
        where = where or f"strategy {cls.name}"
        if data is not None and not isinstance(data, Mapping):
            raise ConfigError(f"{where}: expected a mapping of options, got {data!r}")
        data = dict(data or {})
        own = {key: data.pop(key) for key in [f.name for f in dataclasses.fields(CompressCall)] if key in data}
        call = build_dataclass(CompressCall, own, where)
        lib = load(where)
        return cls(call, compress_config(lib, data, where), lib)

    def threshold_warnings(self, budget: int | None, label: str) -> list[str]:
        return []  # model_limit is headroom's measure of pressure, not a trigger that could fail to act

    def on_run_start(self, ctx: "RunContext") -> None:
        self.limits = thresholds.resolved(self.config, ctx.budget())
        self.shown = {}
        self.warn(ctx, setup_warnings(self.model(ctx)))

    def model(self, ctx: "RunContext") -> str:
        if self.limits.model:
            return self.limits.model
        pricing = ctx.main.pricing()
        return pricing.model if pricing is not None and (ctx.main.is_mock or ctx.main.serves_mock) else ctx.main.model

    def before_request(self, ctx: "RunContext") -> None:
        view = ctx.view
        ids = list(view.ids)
        sent = [self.unedited(ctx, cid) for cid in ids]
        with captured() as warnings, HEADROOM.calling("compress", ctx):
            result = self.lib.compress([thaw(m) for m in sent], model=self.model(ctx),
                                       model_limit=self.limits.model_limit, config=self.options)
        self.warn(ctx, said(warnings))
        wanted, unmapped = self.wanted(ids, sent, result.messages)
        if unmapped:
            ctx.emit("compression_unmapped", request=ctx.requests + 1, library=HEADROOM.label, reasons=unmapped)
        fields = {"library": HEADROOM.label, "library_tokens_before": result.tokens_before,
                  "library_tokens_after": result.tokens_after, "library_tokens_saved": result.tokens_saved,
                  "transforms_applied": dict(Counter(result.transforms_applied))}
        changed = [cid for cid, rendering in wanted if rendering is not None and rendering != view.message(cid)]
        apply_view(ctx, wanted, "compaction", step=STEP, trigger="per_request", message_ids=changed, **fields)
        for cid in changed:
            self.shown[cid] = view.message(cid)
        uncompressed = sum(count_message(m) for m in sent)
        shown = sum(view.tokens(cid) for cid in view.ids)
        ctx.emit("compression", request=ctx.requests + 1, tokens_before=uncompressed, tokens_after=shown,
                 tokens_saved=uncompressed - shown, **fields)

    def unedited(self, ctx: "RunContext", cid: int) -> "Message":
        """The message as the agent would send it without headroom: as logged, unless another strategy shows it
        otherwise."""
        current = ctx.view.message(cid)
        return ctx.view.messages[cid] if self.shown.get(cid) is current else current

    @staticmethod
    def wanted(ids: list[int], sent: list["Message"], returned: list[Any]) -> tuple[list[Wanted], list[str]]:
        """Headroom's messages as the view's: each id with the rendering headroom gives it, or the message as
        sent where headroom's cannot stand for it (said in the reasons)."""
        if len(returned) != len(sent):
            return [(cid, message) for cid, message in zip(ids, sent)], [
                f"headroom returned {len(returned)} messages for {len(sent)}: the view is sent uncompressed"]
        wanted: list[Wanted] = []
        reasons = []
        for cid, before, after in zip(ids, sent, returned):
            if not isinstance(after, Mapping) or any(after.get(key) != before.get(key)
                                                     for key in ("role", "tool_call_id")):
                reasons.append(f"message {cid}: headroom changed its role or tool call; sent uncompressed")
                after = before
            wanted.append((cid, after if after == before else dict(after)))
        return wanted, reasons

    def warn(self, ctx: "RunContext", warnings: list[tuple[str, str, str]]) -> None:
        for level, logger, message in warnings:
            ctx.emit("library_warning", request=ctx.requests + 1, category=level, library=HEADROOM.label,
                     logger=logger, message=message)
