"""The mock LLM: a context-faithful simulated agent behind a simulated provider.

`provider` plays the provider (context window, prefix caching, usage, prices, clock);
`agents` plays the model, one rule-based policy per task family, seeing only the
request's messages and tool schemas.
"""

DEFAULT_MOCK_WINDOW = 200_000  # the simulated provider's context window, in tokens, unless a run sets one
