"""Secrets never reach an output: the one place that knows what a secret looks like.

Two lines of defence, both here:

* `redact(data)` rewrites configuration before it is written: the value of a secret-named key
  (`is_secret_key`: litellm's credential parameters, e.g. `aws_secret_access_key`,
  `vertex_credentials`, `azure_ad_token`, and any key with a credential word in it) becomes
  `<redacted>`, and every string loses the credentials a URL carries (`redact_text`: the
  `user:password@` userinfo, secret-named query parameters such as `?api_key=`, `&token=`, `?key=`).
* `KNOWN` holds the secret values of this invocation (collected once from profiles, strategy
  configs, sweep grids and the environment by `secret_values`) as one compiled regex; the
  writers (config.json, runs.jsonl rows, the `error`/`traceback` fields of events, error messages
  on stderr) pass their text through `KNOWN.scrub`, which also applies `redact_text`.

Nothing is read back: a resumed run finds its secrets where the model's client looks for them
(the environment), see harness.run.invocation.
"""
from __future__ import annotations

import os
import re
from typing import Any, Iterable

REDACTED = "<redacted>"
MIN_SECRET_LENGTH = 8  # shorter values are too common to scrub from free text safely

# litellm's own rule for a sensitive key (litellm_core_utils/sensitive_data_masker.py,
# _DEFAULT_SENSITIVE_PATTERNS): any `_`/`-` separated segment of the key is one of these words.
# It covers the credential kwargs of litellm_core_utils/get_litellm_params.py (AWS_CREDENTIAL_KWARGS_KEYS'
# aws_access_key_id / aws_secret_access_key / aws_session_token / aws_web_identity_token, OPTIONAL_KWARGS_KEYS'
# azure_ad_token / client_secret / azure_password / s3_secret_access_key / vertex_credentials /
# gigachat_access_token) and types/workload_identity.py's WIF_SECRET_BEARING_KEYS; tests/core/test_secrets.py
# checks the list against the installed litellm.
SECRET_SEGMENTS = frozenset({"password", "passwd", "secret", "key", "token", "auth", "authorization", "cookie",
                             "credential", "credentials", "access", "private", "certificate", "fingerprint",
                             "tenancy", "apikey", "headers", "header", "sig"})
NOT_SECRET_SEGMENTS = frozenset({"cost"})  # litellm's override: `input_cost_per_token` is a price
# litellm request parameters a segment matches that hold no secret (prompt-template tokens, cache keys,
# the token-exchange and keycloak settings that name a URL or a rule, limits): kept, so a resume sends them.
NOT_SECRET_KEYS = frozenset({"max_token", "bos_token", "eos_token", "cache_key", "prompt_cache_key",
                             "preset_cache_key", "token_exchange_audience", "token_exchange_endpoint",
                             "token_exchange_profile", "token_exchange_scope", "litellm_credential_name",
                             "github_copilot_auth_type", "anthropic_keycloak_auth_method", "gigachat_auth_url",
                             "anthropic_keycloak_token_url", "configurable_clientside_auth_params",
                             "default_api_key_rpm_limit", "default_api_key_tpm_limit"})
# litellm redacts these in text too (secret_redaction.py), without a credential word in their name
EXTRA_SECRET_KEYS = frozenset({"azure_username", "database_url", "db_url", "connection_string",
                               "database_connection_string", "webhook_url", "slack_webhook_url", "master_key"})
_SEGMENT_SPLIT = re.compile(r"[_\-.\s]+")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")

# URL credentials: the userinfo before `@` and the value of a secret-named query parameter
_USERINFO = re.compile(r"(?<=://)[^\s/?#@'\"<>]{1,4096}(?=@)")
_QUERY = re.compile(r"(?<=[?&;])([A-Za-z0-9_.\-]{1,100})=([^\s&#'\"<>]+)")
# `api_key: value`, `password=value` in free text (an error message, a YAML error's quoted line)
_KEY_VALUE = re.compile(r"(?<![\w-])([A-Za-z][\w-]{0,100})(['\"]?\s*[:=]\s*['\"]?)([^\s,'\"<>(){}\[\]]{8,})")
_BEARER = re.compile(r"\b(Bearer|Basic)\s+[A-Za-z0-9\-._~+/]{8,}=*", re.IGNORECASE)
# Credentials known by their shape alone, wherever they stand (a value pasted as the wrong argument, an
# error quoting one): the providers' documented key formats (OpenAI/Anthropic `sk-...`, AWS access key ids,
# Google API keys and OAuth tokens, GitHub, Hugging Face, Slack, Groq, xAI tokens), JSON web tokens and PEM
# private keys; litellm's secret_redaction.py knows several of these shapes too.
_KEY_SHAPES = re.compile(
    r"\b(?:sk-[A-Za-z0-9_-]{20,}|(?:AKIA|ASIA)[0-9A-Z]{16}\b|AIza[0-9A-Za-z_-]{35}|ya29\.[A-Za-z0-9_.~+/-]{20,}"
    r"|gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,}|hf_[A-Za-z0-9]{30,}|xox[abprs]-[A-Za-z0-9-]{10,}"
    r"|gsk_[A-Za-z0-9]{20,}|xai-[A-Za-z0-9]{20,}|eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]*)"
    r"|-----BEGIN[A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END[A-Z ]*PRIVATE KEY-----|\Z)")


def is_secret_key(key: Any) -> bool:
    """A key whose value is a secret: api_key, aws_secret_access_key, vertex_credentials, extra_headers,
    X-Api-Key, ... (`max_tokens`, `input_cost_per_token` and the like are counts and prices, not tokens)."""
    text = str(key)
    lowered = text.lower()
    if lowered in NOT_SECRET_KEYS:
        return False
    if lowered in EXTRA_SECRET_KEYS:
        return True
    segments = set(_SEGMENT_SPLIT.split(_CAMEL.sub("_", text).lower()))
    return bool(segments & SECRET_SEGMENTS) and not segments & NOT_SECRET_SEGMENTS


def is_secret_path(dotted: str) -> bool:
    """A dotted config key (a sweep axis, `llm.api_key`, `headers.X-Custom`) reaching into a secret."""
    return any(is_secret_key(part) for part in str(dotted).split("."))


def redact_text(text: str) -> str:
    """`text` without the credentials it carries in URLs (userinfo, secret-named query parameters),
    as `secret_name: value`, as an HTTP authorization value (`Bearer ...`) or in a known key shape
    (`sk-...`, `AKIA...`, a JSON web token, a private key)."""
    if "://" in text:
        text = _USERINFO.sub(REDACTED, text)
    if "=" in text:
        text = _QUERY.sub(lambda m: f"{m[1]}={REDACTED}" if is_secret_key(m[1]) and m[2] != REDACTED else m[0], text)
    if "=" in text or ":" in text:
        text = _KEY_VALUE.sub(lambda m: f"{m[1]}{m[2]}{REDACTED}" if is_secret_key(m[1]) else m[0], text)
    if "earer" in text or "asic" in text:
        text = _BEARER.sub(lambda m: f"{m[1]} {REDACTED}", text)
    return _KEY_SHAPES.sub(REDACTED, text)


def redact(data: Any) -> Any:
    """Configuration as it may be written: secret-named keys' values replaced, URL credentials cut from strings."""
    if isinstance(data, dict):
        return {k: (REDACTED if is_secret_key(k) else redact(v)) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [redact(v) for v in data]
    if isinstance(data, str):
        return redact_text(data)
    return data


def _strings(data: Any) -> Iterable[str]:
    """Every string under `data`, a scalar's text included (a numeric secret is still a secret)."""
    if isinstance(data, dict):
        for value in data.values():
            yield from _strings(value)
    elif isinstance(data, (list, tuple)):
        for value in data:
            yield from _strings(value)
    elif isinstance(data, str):
        yield data
        if data.lower().startswith(("bearer ", "basic ")):
            yield data[data.index(" ") + 1:].strip()
    elif isinstance(data, (int, float)) and not isinstance(data, bool):
        yield str(data)


def _url_credentials(text: str) -> Iterable[str]:
    if "://" in text:
        for match in _USERINFO.finditer(text):
            yield match[0]
            yield from match[0].split(":", 1)
    for match in _QUERY.finditer(text):
        if is_secret_key(match[1]):
            yield match[2]


def secret_values(*data: Any, environment: bool = True) -> set[str]:
    """The secret values in `data` (values under secret-named keys, URL credentials in any string)
    and, with `environment`, those of the secret-named environment variables."""
    found: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if is_secret_key(key):
                    found.update(_strings(value))
                else:
                    walk(value)
        elif isinstance(node, (list, tuple)):
            for value in node:
                walk(value)
        elif isinstance(node, str):
            found.update(_url_credentials(node))

    for item in data:
        walk(item)
    if environment:
        for name, value in os.environ.items():
            if is_secret_key(name):
                found.add(value)
            found.update(_url_credentials(value))
    return {value for value in found if len(value) >= MIN_SECRET_LENGTH and REDACTED not in value}


class KnownSecrets:
    """The secret values of this process's invocation(s), scrubbed from text by one compiled regex."""

    def __init__(self) -> None:
        self._values: frozenset[str] = frozenset()
        self._pattern: re.Pattern[str] | None = None

    def add(self, values: Iterable[str]) -> None:
        """Remember more values (cheap when they are known already: each run adds its own)."""
        values = frozenset(v for v in values if len(v) >= MIN_SECRET_LENGTH)
        if values <= self._values:
            return
        self._values = self._values | values
        ordered = sorted(self._values, key=len, reverse=True)  # the longest first, so no part of one is left
        self._pattern = re.compile("|".join(map(re.escape, ordered)))

    def scrub(self, text: str) -> str:
        """`text` without any known secret value and without URL or authorization credentials."""
        if self._pattern is not None:
            text = self._pattern.sub(REDACTED, text)
        return redact_text(text)


KNOWN = KnownSecrets()


def remember(*data: Any) -> None:
    """Add the secrets in `data` and in the environment to KNOWN (once per invocation, and per run in a worker)."""
    KNOWN.add(secret_values(*data))


def scrub(text: str) -> str:
    return KNOWN.scrub(text)
