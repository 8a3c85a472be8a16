"""Google ADK's events compaction (google-adk `google.adk.apps.compaction`), run by ctxbench's runner.

ADK keeps a session: a list of events (the user's messages, the agent's model responses and its tool responses,
each tagged with the invocation, one user turn, it belongs to). Compaction appends an event carrying an
`EventCompaction` (a summary of the events between two timestamps, written by the `LlmEventSummarizer`), and
the request is built from the session with each compacted range replaced by its summary, as a model turn at
the range's end (flows/llm_flows/context/_compaction.py `_process_compaction_events`). Two triggers, set in
`EventsCompactionConfig` (apps/_configs.py):

* token threshold (`token_threshold`, `event_retention_size`): before every model call
  (`CompactionRequestProcessor`), when the prompt token count last observed (the latest model response's
  usage; ADK's 4-characters-a-token estimate when there is none) reaches the threshold, every event but the
  last `event_retention_size` is summarized, an earlier summary included (apps/compaction.py
  `_run_compaction_for_token_threshold_config`);
* sliding window (`compaction_interval`, `overlap_size`): after an invocation completes (the Runner's
  `_run_post_invocation_compaction`), once `compaction_interval` new invocations have completed, they are
  summarized with the `overlap_size` invocations before them (`_run_compaction_for_sliding_window`; the token
  threshold first, when set).

The adapter keeps that session and calls those functions where ADK's flow and Runner do: each ctxbench message
becomes one event (a user message: the user's; an assistant message: the agent's model response, with the usage
its request reported; a tool result: the agent's function response, `{"result": text}` as ADK wraps a tool's
non-dict return, flows/llm_flows/tools/_caller.py), its timestamp the message's id; a user message starts a new
invocation, so the one before it has completed and the sliding window runs first; before every main request the
token threshold runs. When the session holds a compaction, the view becomes what ADK's request would carry: the
system prompt (ADK's instruction), then the session's events as `_process_compaction_events` and
`_recover_compacted_function_calls` leave them (what `_contents._get_contents` applies), each raw event the
message it stands for and each summary an assistant message logged by the strategy: one `condensation` event
(kind summary) naming its `condensation_request`.

The summarizer's model is ADK's `LiteLlm` model class, whose litellm client is ctxbench's side call of the
`summary` profile (`SideCallRouter`), so the summary request is the one ADK's summarizer builds (its prompt, read
from the installed package, and its rendering of the events). A summary call that fails is ADK's "continuing with
the uncompacted history": a `condensation_refused` event (reason `summary_call_failed`); ctxbench's own errors
inside it end the run as elsewhere. ADK has no recovery from a context-window error (the run ends
`context_overflow`).

Defaults: ADK sets none (a config must set one trigger pair, or its validator refuses it). Ours, from ADK's
documentation (docs/context/compaction.md): `compaction_interval` 3 and `overlap_size` 1 (its Python example),
`event_retention_size` 5 (its token-based example), and `token_threshold` 0.75 x the run's input budget
(150,000 at 200k, Anthropic's default compaction trigger; ADK's examples use 4,000 and 1,000 tokens, with no
window). Set both of a pair to null to switch that trigger off.
"""
from __future__ import annotations

import json
import logging
import warnings
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Mapping

from harness.core.config import build_dataclass, option
from strategies import thresholds
from strategies.adapters import GOOGLE_ADK, Library, SideCallRouter, Wanted, apply_view, content_text, run_sync
from strategies.base import Strategy

if TYPE_CHECKING:
    from harness.conversation.context import RunContext
    from harness.conversation.view import Message
    from harness.models.llm import LLMResult

APP, AGENT, USER = "ctxbench", "agent", "user"
SUMMARY_PROFILE = "summary"
PURPOSE = "adk.compaction"


@dataclass
class AdkCompactionConfig:
    """EventsCompactionConfig's triggers (ADK's names) and LlmEventSummarizer's prompt; ours: the profile."""

    compaction_interval: int | None = option(3, "sliding window: new invocations (user turns) completed that "
                                                "trigger a compaction (null: no sliding window)")
    overlap_size: int | None = option(1, "sliding window: invocations before the new ones summarized again")
    token_threshold: int | None = option(help="token threshold: compact before a model call once the last "
                                              "observed prompt tokens reach this", of_budget=0.75)
    event_retention_size: int | None = option(5, "token threshold: the latest raw events kept (null: no token "
                                                 "threshold)")
    prompt_template: str | None = option(None, "LlmEventSummarizer's prompt_template, with {conversation_history} "
                                               "(null: ADK's own)")
    summary_profile: str = option(SUMMARY_PROFILE, "ours: the LLM profile that writes the summaries")


def load(where: str) -> dict[str, Any]:
    """ADK's modules the adapter drives (imported on first use; the core never imports ADK)."""
    names = {"app": "google.adk.apps.app", "compaction": "google.adk.apps.compaction",
             "summarizer": "google.adk.apps.llm_event_summarizer", "context": "google.adk.flows.llm_flows.context."
             "_compaction", "lite_llm": "google.adk.models.lite_llm", "agents": "google.adk.agents",
             "sessions": "google.adk.sessions", "events": "google.adk.events", "types": "google.genai.types"}
    modules = {key: GOOGLE_ADK.load(where, name) for key, name in names.items()}
    logging.getLogger("google_adk").addHandler(logging.NullHandler())  # its warnings are the adapter's events
    with warnings.catch_warnings(record=True):  # ADK warns once a process that the feature is experimental
        warnings.simplefilter("always")
        modules["app"].EventsCompactionConfig(compaction_interval=1, overlap_size=0)
    return modules


class EventsCompactionAdapter(Strategy):
    """ADK's events compaction on ADK's own session of the run's messages."""

    name = "adk.compaction"
    Config = AdkCompactionConfig
    summary = "Google ADK's events compaction: a summary of older invocations (sliding window, token threshold)"
    source = "google-adk google.adk.apps.compaction (the library's code)"
    library: ClassVar[Library] = GOOGLE_ADK

    def __init__(self, config: AdkCompactionConfig, lib: dict[str, Any], where: str):
        super().__init__(config)
        self.lib, self.where = lib, where
        self.compaction_config(None, thresholds.resolved(config, None))  # ADK's validator, before any run

    @classmethod
    def from_config(cls, data: Mapping[str, Any] | None, where: str | None = None) -> "EventsCompactionAdapter":
        where = where or f"strategy {cls.name}"
        config = build_dataclass(AdkCompactionConfig, data or {}, where)
        return cls(config, load(where), where)

    def profiles_needed(self) -> list[str]:
        return [self.config.summary_profile]

    def threshold_values(self, budget: int | None) -> dict[str, int]:
        return super().threshold_values(budget) if self.config.event_retention_size is not None else {}

    def compaction_config(self, summarizer: Any, limits: AdkCompactionConfig) -> Any:
        """ADK's EventsCompactionConfig, validated by ADK: a pair whose both fields are null is off (a token
        threshold left at its default goes with its retention size)."""
        fields = {key: value for key, value in asdict(limits).items()
                  if key in ("compaction_interval", "overlap_size", "token_threshold", "event_retention_size")}
        if self.config.token_threshold is None and limits.event_retention_size is None:
            fields["token_threshold"] = None
        with GOOGLE_ADK.configuring(self.where):
            return self.lib["app"].EventsCompactionConfig(summarizer=summarizer, **fields)

    # -- per run
    def on_run_start(self, ctx: "RunContext") -> None:
        self.ctx = ctx
        self.limits = thresholds.resolved(self.config, ctx.budget())
        self.router = SideCallRouter(ctx, self.config.summary_profile, PURPOSE)
        lite_llm = self.lib["lite_llm"]
        client = _client_class(lite_llm)(self.router)
        llm = lite_llm.LiteLlm(model=ctx.profiles[self.config.summary_profile].model, llm_client=client)
        summarizer_options = {"prompt_template": self.config.prompt_template} if self.config.prompt_template else {}
        with GOOGLE_ADK.configuring(self.where):
            summarizer = self.lib["summarizer"].LlmEventSummarizer(llm=llm, **summarizer_options)
            config = self.compaction_config(summarizer, self.limits)
            agent = self.lib["agents"].LlmAgent(name=AGENT, model=llm)
            self.app = self.lib["app"].App(name=APP, root_agent=agent, events_compaction_config=config)
        self.service = self.lib["sessions"].InMemorySessionService()
        with GOOGLE_ADK.calling("InMemorySessionService.create_session", ctx):
            self.session = run_sync(self.service.create_session(app_name=APP, user_id=USER))
        self.usage: dict[int, int] = {}  # agent message id -> the prompt tokens its request reported
        self.summaries: dict[int, int] = {}  # id() of a compaction event -> the message logged for its summary
        self.compactions: list[Any] = []  # the compaction events kept alive (their ids key `summaries`)
        self.last_id = -1  # the newest message folded into the session
        self.invocation: str | None = None

    def before_request(self, ctx: "RunContext") -> None:
        if getattr(self, "ctx", None) is not ctx:
            self.on_run_start(ctx)
        new = self.new_ids(ctx)
        trigger = None
        for cid in new:
            message = ctx.view.message(cid)
            if message.get("role") == "system":
                continue
            if message.get("role") == USER or self.invocation is None:
                if self.invocation is not None and self.post_invocation(ctx):
                    trigger = "sliding_window"
                self.invocation = self.lib["events"].Event.new_id()
            self.append(ctx, self.event(cid, message))
        if new:
            self.last_id = new[-1]
        if self.pre_request(ctx):
            trigger = "token_threshold"
        self.show(ctx, trigger)

    def after_response(self, ctx: "RunContext", result: "LLMResult") -> None:
        """The agent's response event carries the prompt tokens its request reported (ADK's usage_metadata)."""
        if result.usage.input_tokens is not None:
            self.usage[len(ctx.log) - 1] = result.usage.input_tokens

    def new_ids(self, ctx: "RunContext") -> list[int]:
        """Messages appended to the view since the last request (O(new))."""
        ids = ctx.view.ids
        start = len(ids)
        while start > 0 and ids[start - 1] > self.last_id:
            start -= 1
        return list(ids[start:])

    # -- ctxbench -> ADK
    def event(self, cid: int, message: "Message") -> Any:
        """One message as the session event ADK's flow would have appended for it."""
        types, Event = self.lib["types"], self.lib["events"].Event
        role, text = message.get("role"), content_text(message.get("content"))
        if role == "tool":
            response = types.FunctionResponse(id=message.get("tool_call_id"), name=message.get("name") or "",
                                              response={"result": text})
            content = types.Content(role=USER, parts=[types.Part(function_response=response)])
            return Event(author=AGENT, invocation_id=self.invocation, timestamp=float(cid), content=content)
        if role == "assistant":
            parts = [types.Part(text=text)] if text else []
            for call in message.get("tool_calls") or ():
                function = call.get("function") or {}
                parts.append(types.Part(function_call=types.FunctionCall(
                    id=call.get("id"), name=function.get("name") or "", args=_arguments(function.get("arguments")))))
            usage = self.usage.get(cid)
            metadata = None if usage is None else types.GenerateContentResponseUsageMetadata(prompt_token_count=usage)
            return Event(author=AGENT, invocation_id=self.invocation, timestamp=float(cid),
                         content=types.Content(role="model", parts=parts or [types.Part(text="")]),
                         usage_metadata=metadata)
        return Event(author=USER, invocation_id=self.invocation, timestamp=float(cid),
                     content=types.Content(role=USER, parts=[types.Part(text=text)]))

    def append(self, ctx: "RunContext", event: Any) -> None:
        with GOOGLE_ADK.calling("InMemorySessionService.append_event", ctx):
            run_sync(self.service.append_event(session=self.session, event=event))

    # -- ADK's two triggers
    def post_invocation(self, ctx: "RunContext") -> bool:
        """The Runner's compaction after an invocation completed (sliding window, the token threshold first)."""
        compaction = self.lib["compaction"]
        before = len(self.session.events)

        async def run() -> None:
            async for event in compaction._run_compaction_for_sliding_window(self.app, self.session, self.service):
                await self.service.append_event(session=self.session, event=event)

        with GOOGLE_ADK.calling("_run_compaction_for_sliding_window", ctx):
            run_sync(run())
        return self.compacted(ctx, before)

    def pre_request(self, ctx: "RunContext") -> bool:
        """ADK's CompactionRequestProcessor before a model call (the token threshold)."""
        compaction = self.lib["compaction"]
        before = len(self.session.events)
        with GOOGLE_ADK.calling("_run_compaction_for_token_threshold_config", ctx):
            run_sync(compaction._run_compaction_for_token_threshold_config(
                config=self.app.events_compaction_config, session=self.session, session_service=self.service,
                agent=self.app.root_agent, agent_name=AGENT, current_branch=None))
        return self.compacted(ctx, before)

    def compacted(self, ctx: "RunContext", before: int) -> bool:
        """Whether ADK appended a compaction; a summary call that failed (ADK goes on uncompacted) is said."""
        self.router.raise_own()
        error, self.router.error = self.router.error, None
        if error is not None:
            ctx.emit("condensation_refused", reason="summary_call_failed", library=GOOGLE_ADK.label,
                     error=f"{type(error).__name__}: {error}"[:2000])
        added = [e for e in self.session.events[before:] if e.actions and e.actions.compaction]
        self.compactions += added
        return bool(added)

    # -- ADK -> the view
    def show(self, ctx: "RunContext", trigger: str | None) -> None:
        """Make the view the request ADK would build from the session (only once it holds a compaction)."""
        if not self.compactions:
            return
        context = self.lib["context"]
        events = self.session.events
        with GOOGLE_ADK.calling("_process_compaction_events", ctx):
            shown = context._recover_compacted_function_calls(
                context._process_compaction_events(events, AGENT), events)
        view = ctx.view
        wanted: list[Wanted] = [(view.ids[0], None)] if view.ids and view.message(view.ids[0]).get("role") == \
            "system" else []
        made: list[tuple[int, Any]] = []  # (place in wanted, compaction) of summaries not logged yet
        for event in shown:
            compaction = event.actions.compaction if event.actions else None
            if compaction is None:
                wanted.append((int(event.timestamp), None))
                continue
            key = id(compaction)
            if key in self.summaries:
                wanted.append((self.summaries[key], None))
            else:
                made.append((len(wanted), compaction))
                text = "".join(part.text or "" for part in compaction.compacted_content.parts or ())
                wanted.append((None, {"role": "assistant", "content": text}))
        if trigger is None and not made:
            apply_view(ctx, wanted, "compaction", step="adk_compaction", library=GOOGLE_ADK.label)
            return
        kept = {cid for cid, _ in wanted if cid is not None}
        request = ctx.emit("condensation_request", reason="tokens" if trigger == "token_threshold" else "invocations",
                           boundary=len(ctx.log) - 1, library=GOOGLE_ADK.label, trigger=trigger)
        logged = apply_view(ctx, wanted, "condensation", kind="summary", trigger=trigger, request_id=request["id"],
                            forgotten_ids=[cid for cid in view.ids if cid not in kept],
                            summary_id=len(ctx.log) + len(made) - 1 if made else None, library=GOOGLE_ADK.label)
        if logged is not None:
            for (_, compaction), cid in zip(made, logged["new_ids"]):
                self.summaries[id(compaction)] = cid


_clients: list[type] = []


def _client_class(lite_llm: Any) -> type:
    """ADK's LiteLLMClient whose `acompletion` (what LiteLlm calls instead of litellm's) is a side call."""
    if not _clients:
        class SideCallClient(lite_llm.LiteLLMClient):
            def __init__(self, router: SideCallRouter) -> None:
                self.router = router

            async def acompletion(self, **kwargs: Any) -> Any:
                return await self.router.acompletion(**kwargs)

        _clients.append(SideCallClient)
    return _clients[0]


def _arguments(raw: Any) -> dict[str, Any]:
    """A call's arguments as ADK's FunctionCall holds them: a dict (the text under "value" when it is not one)."""
    if isinstance(raw, Mapping):
        return dict(raw)
    try:
        parsed = json.loads(raw or "{}")
    except (TypeError, ValueError):
        return {"value": raw}
    return parsed if isinstance(parsed, dict) else {"value": parsed}
