"""Talking to models: the LLM client (`llm`), what a request used and costs (`usage`), where it asks to be
cached (`cache_policy`, `cache_marks`), named model bindings (`profiles`), retries, concurrency and spending
limits, the response cache; the simulated provider and agent (`mock`) and the same mock over HTTP
(`serve_mock`)."""
