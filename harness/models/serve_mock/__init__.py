"""`ctxbench serve-mock`: the mock over HTTP, as OpenAI's chat completions (`chat_request`) and Anthropic's
Messages API (`anthropic_wire`), every body bounded and checked first (`http_bounds`); `server` routes."""
