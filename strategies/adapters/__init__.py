"""Adapters: the real libraries' own context-management code, run by ctxbench's runner.

A native strategy is ctxbench's reading of a source; an adapter runs the source itself. Each
module here wraps one library (`pydantic_ai`, `inspect_ai`, `openhands`, `litellm_context_management`,
`langchain`, `strands`, `headroom`, `google_adk`):
it converts the view to the library's own message or event types, calls the library's own entry
point, and turns what the library returns into view ops (harness.conversation.view), recorded as events, so a saved log
replays without the library. Every model call the library makes goes through ctxbench's LLM
layer as a side call of the `summary` profile (counted, cached, faulted, priced, mockable).

What they share lives here: which library an adapter needs and how to say it is missing
(`Library`), errors that name the library (`Library.calling`), running a library's async entry
point from the runner's synchronous hooks (`run_sync`), and the one step that turns "the view
the library wants" into view ops (`apply_view`), and keeping ctxbench's warnings filters as they were while a
library's imports add their own (`warnings_kept`). Nothing here imports a library; the core never does.
"""
from __future__ import annotations

import asyncio
import contextlib
import functools
import importlib
import importlib.metadata
import re
import sys
import threading
import time
import warnings
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any, Awaitable, Iterator, Mapping, Sequence, TypeVar

from harness.core.errors import ConfigError, CtxbenchError, StrategyFailed
from harness.core.tokens import count_message

if TYPE_CHECKING:
    from harness.conversation.context import RunContext
    from harness.conversation.view import Message

T = TypeVar("T")


class LibraryError(CtxbenchError):
    """The wrapped library raised (a fault, not one of its give-ups): the run ends `error`, the message names
    the library and version."""


@dataclass(frozen=True)
class Library:
    """A real library an adapter runs: its PyPI name, the ctxbench extra that installs it ("" for a core
    dependency), its import."""

    distribution: str
    extra: str
    module: str
    min_python: tuple[int, int] = (3, 10)
    # The library's own give-ups, (exception class name, start of its message): its strategy cannot fit the
    # window or refuses to condense. Raised in a call, one ends the run `strategy_failed`, not `error`.
    give_ups: tuple[tuple[str, str], ...] = ()
    # The first release holding the code the adapter runs (None: any installed release): a core dependency's
    # range admits older releases, which must be refused by name rather than fail on import.
    min_version: str | None = None

    def gives_up(self, exc: BaseException) -> bool:
        """Whether `exc` is one of the library's give-ups rather than a fault."""
        return any(type(exc).__name__ == name and str(exc).startswith(start) for name, start in self.give_ups)

    def version(self) -> str | None:
        """The installed version, read from package metadata without importing the library."""
        return installed_version(self.distribution)

    def available(self) -> bool:
        """Whether it can run here: installed (a release new enough), on a Python it supports."""
        version = self.version()
        return sys.version_info >= self.min_python and version is not None and not self.too_old(version)

    def too_old(self, version: str) -> bool:
        """Whether an installed release predates `min_version` (releases compared by their numbers)."""
        return self.min_version is not None and _release(version) < _release(self.min_version)

    @property
    def label(self) -> str:
        return f"{self.distribution} {self.version() or '(not installed)'}"

    def install_hint(self) -> str:
        needs = "" if sys.version_info >= self.min_python else (
            f" (it needs Python >= {'.'.join(map(str, self.min_python))}; this is "
            f"{sys.version_info.major}.{sys.version_info.minor})")
        if not self.extra:
            return f"pip install -U '{self.distribution}>={self.min_version}'{needs}"
        return f"pip install -e '.[{self.extra}]'{needs}"

    def load(self, where: str, module: str | None = None) -> ModuleType:
        """Import the library (or one of its modules), or fail naming the extra to install."""
        if not self.available():
            version = self.version()
            if version is not None and self.too_old(version):
                raise ConfigError(f"{where} runs {self.distribution}'s own code, which it has from release "
                                  f"{self.min_version} on; this is {version}: {self.install_hint()}")
            raise ConfigError(f"{where} runs the real {self.distribution}, which is not installed: "
                              f"{self.install_hint()}")
        try:
            return importlib.import_module(module or self.module)
        except ImportError as exc:
            raise ConfigError(f"{where}: {self.label} is installed but cannot be imported ({exc}); "
                              f"reinstall it with {self.install_hint()}") from exc

    @contextlib.contextmanager
    def calling(self, what: str, ctx: "RunContext | None" = None) -> Iterator[None]:
        """Around a call into the library: what it raises becomes a LibraryError naming it, or a StrategyFailed
        when it is one of the library's give-ups.

        ctxbench's own errors raised inside (a failed side call, a spending limit) pass unchanged.
        With `ctx`, the CPU spent inside is added to `ctx.library_cpu_s` (the runs.jsonl column
        `library_cpu_s`), less what its side calls (summaries: ctxbench's LLM layer) took.
        """
        started, side = time.thread_time(), ctx.side_call_cpu_s if ctx is not None else 0.0
        try:
            yield
        except CtxbenchError:
            raise
        except Exception as exc:
            failure = StrategyFailed if self.gives_up(exc) else LibraryError
            raise failure(f"{self.label} raised in {what}: {type(exc).__name__}: {exc}") from exc
        finally:
            if ctx is not None:
                ctx.library_cpu_s += time.thread_time() - started - (ctx.side_call_cpu_s - side)

    @contextlib.contextmanager
    def configuring(self, where: str) -> Iterator[None]:
        """Around building the library's objects from a config: its own validators' errors are
        configuration errors (exit 2 before any model call), named by where they were given."""
        try:
            yield
        except CtxbenchError:
            raise
        except (ValueError, TypeError) as exc:  # pydantic's ValidationError is a ValueError
            raise ConfigError(f"{where}: {self.distribution} refused the configuration: {exc}") from exc


PYDANTIC_AI_HARNESS = Library("pydantic-ai-harness", "pydantic-ai", "pydantic_ai_harness")
# Inspect's compaction handler: the compacted input still exceeds its threshold (model/_compaction/_compaction.py);
# the summary request itself overflows the window (summary.py); its native compaction is not supported by the
# provider, or the provider did not compact (native.py, a provider's `compact`: NotImplementedError).
INSPECT_AI = Library("inspect-ai", "inspect", "inspect_ai", give_ups=(
    ("RuntimeError", "Compaction insufficient"), ("RuntimeError", "Compaction summary generation exceeded"),
    ("NotImplementedError", "")))
# The anthropic SDK: Inspect's Anthropic provider (native compaction) imports it (`inspect` extra); the SDK's own tool
# runner compaction (`anthropic` extra).
ANTHROPIC_SDK_FOR_INSPECT = Library("anthropic", "inspect", "anthropic")
ANTHROPIC_SDK = Library("anthropic", "anthropic", "anthropic")
# The openai SDK: Inspect's OpenAI provider (native compaction: `/responses/compact`); litellm installs it.
OPENAI_SDK = Library("openai", "", "openai")
# OpenHands' condensers: no condensation of this view is possible (context/condenser/base.py).
OPENHANDS_SDK = Library("openhands-sdk", "openhands", "openhands.sdk", min_python=(3, 12),
                        give_ups=(("NoCondensationAvailableException", ""),))

# Strands Agents' conversation managers (strands/agent/conversation_manager/; the distribution's package is `strands`).
STRANDS = Library("strands-agents", "strands", "strands")

# litellm's context-management polyfill (llms/anthropic/messages/context_management/), at this path and with the
# names the adapter calls from 1.109.0 on (earlier releases kept it under anthropic/pass_through/).
LITELLM = Library("litellm", "", "litellm.llms.anthropic.messages.context_management", min_version="1.109.0")

# LangChain 1.x agent middleware (langchain.agents.middleware): SummarizationMiddleware, ContextEditingMiddleware.
LANGCHAIN = Library("langchain", "langchain", "langchain.agents.middleware")
# headroom-ai's compress(): its compressors and its air-gap switch (strategies/adapters/headroom.py).
HEADROOM = Library("headroom-ai", "headroom", "headroom")
# Google ADK's events compaction (apps/compaction.py) and its LiteLlm model class; ADK needs Python >= 3.11.
GOOGLE_ADK = Library("google-adk", "google-adk", "google.adk", min_python=(3, 11))

_loops = threading.local()


def _release(version: str) -> tuple[int, ...]:
    """A release's leading numbers ("1.109.0rc1" -> (1, 109, 0)), what `min_version` is compared on."""
    return tuple(int(part) for part in re.findall(r"\d+", version.split("+")[0])[:3])


@functools.cache
def installed_version(distribution: str) -> str | None:
    """A distribution's installed version, read once per process: reading package metadata costs ~3 ms,
    and every run asks several times (its row's `libraries`, each event naming the library)."""
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


@contextlib.contextmanager
def warnings_kept() -> Iterator[None]:
    """Around importing a library: the warnings filters its imports add are undone (isolation: ctxbench's own
    filters stay as they were)."""
    filters = list(warnings.filters)
    try:
        yield
    finally:
        warnings.filters[:] = filters
        warnings._filters_mutated()  # type: ignore[attr-defined]


def run_sync(awaitable: Awaitable[T]) -> T:
    """Run a library's coroutine to its end from a synchronous hook (one event loop per thread,
    kept: the runner's hooks are synchronous and each run has its own thread)."""
    loop = getattr(_loops, "loop", None)
    if loop is None or loop.is_closed():
        loop = _loops.loop = asyncio.new_event_loop()
    return loop.run_until_complete(awaitable)


def content_text(content: Any) -> str:
    """A chat message's content (or an Anthropic block's) as text: a string, or its parts' texts joined."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content if isinstance(part, Mapping))


class SideCallRouter:
    """litellm's `acompletion` as a side call of one profile, answered as a litellm ModelResponse: what a library
    that calls litellm (a proxy's `llm_router`, ADK's `LiteLlm` client) is handed instead of litellm itself."""

    def __init__(self, ctx: "RunContext", profile: str, purpose: str) -> None:
        self.ctx, self.profile, self.purpose = ctx, profile, purpose
        self.error: BaseException | None = None  # what the side call raised (the library may catch it)

    async def acompletion(self, *, messages: list[Mapping[str, Any]], **_: Any) -> Any:
        import litellm

        sent = [{key: value for key, value in message.items() if value is not None} for message in messages]
        try:
            result = self.ctx.call_llm(self.profile, sent, purpose=self.purpose)
        except BaseException as exc:
            self.error = exc
            raise
        usage = result.usage
        prompt, completion = usage.input_tokens or 0, usage.output_tokens or 0
        return litellm.ModelResponse(
            model=self.ctx.profiles[self.profile].model,
            choices=[{"index": 0, "finish_reason": "stop",
                      "message": {"role": "assistant", "content": result.message.get("content") or ""}}],
            usage={"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion})

    def raise_own(self) -> None:
        """ctxbench's own error inside the side call ends the run, though the library caught it."""
        if isinstance(self.error, CtxbenchError):
            raise self.error


# An entry of the view a library asks for: (id of a logged message, or None for a new one;
# its rendering, or None to keep the message as it is now shown).
Wanted = tuple["int | None", "Message | None"]


def apply_view(ctx: "RunContext", wanted: Sequence[Wanted], event_type: str, *, origin: str = "strategy",
               **fields: Any) -> dict[str, Any] | None:
    """Make the view what a library returned, with as few view ops as say it, in one event.

    A logged message shown unchanged keeps its identity (so the provider cache and the simulated
    agent see no change); another rendering of it is a `replace`; a message the library made (a
    summary) is logged first, with placement "none", under `origin`; an order or membership that
    differs is one `set` (or a `drop`, when messages only left). The event carries
    `tokens_before`, `tokens_after` and `reclaimed_tokens` besides `fields`; it names the new
    messages in `new_ids`. Returns None, logging nothing, when the view would not change.
    """
    view = ctx.view
    ops: list[dict[str, Any]] = []
    ids: list[int] = []
    new_ids: list[int] = []
    after = ctx.prompt_tokens_estimate() - view.total_tokens  # the tool schemas
    for message_id, rendering in wanted:
        if message_id is None:
            if rendering is None:
                raise ValueError("a new message needs a rendering")
            message_id = ctx.add_message(rendering, origin=origin, placement="none")["id"]
            new_ids.append(message_id)
            after += count_message(rendering)
        elif rendering is not None and rendering is not view.message(message_id) and \
                rendering != view.message(message_id):
            ops.append({"op": "replace", "id": message_id, "message": rendering})
            after += count_message(rendering)
        else:
            after += view.tokens(message_id)
        ids.append(message_id)
    if ids != view.ids:
        kept = set(ids)
        in_order = [i for i in view.ids if i in kept] == ids
        if in_order and not new_ids:
            ops.append({"op": "drop", "ids": [i for i in view.ids if i not in kept]})
        else:
            ops.append({"op": "set", "ids": ids})
    if not ops:
        return None
    before = ctx.prompt_tokens_estimate()
    return ctx.emit(event_type, **fields, tokens_before=before, tokens_after=after,
                    reclaimed_tokens=before - after, new_ids=new_ids, view_ops=ops)
