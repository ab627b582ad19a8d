"""A model span's token usage and model, as an event's usage details: the GenAI
conventions' names, else OpenInference's, else OpenLLMetry's earlier ones."""

from __future__ import annotations

from typing import Any

from sessions_app.search.numbers import TOKEN_MAX

__all__ = ["model_of", "span_usage"]


def model_of(attrs: dict[str, Any]) -> Any:
    """The model a span names: `gen_ai.response.model`, else `gen_ai.request.model`, else
    OpenInference's `llm.model_name` (None when none)."""
    return (
        attrs.get("gen_ai.response.model")
        or attrs.get("gen_ai.request.model")
        or attrs.get("llm.model_name")
    )


def span_usage(attrs: dict[str, Any]) -> dict[str, Any] | None:
    """The usage details of a model span's attributes (GenAI, OpenInference and OpenLLMetry
    names; None when it names no token count), with its model (`model_of`)."""
    prompt = _int_of(
        attrs, "gen_ai.usage.input_tokens", "llm.token_count.prompt", "gen_ai.usage.prompt_tokens"
    )
    completion = _int_of(
        attrs,
        "gen_ai.usage.output_tokens",
        "llm.token_count.completion",
        "gen_ai.usage.completion_tokens",
    )
    if not isinstance(prompt, int) and not isinstance(completion, int):
        return None
    prompt = prompt if isinstance(prompt, int) else 0
    completion = completion if isinstance(completion, int) else 0
    details: dict[str, Any] = {}
    model = model_of(attrs)
    if model:
        details["model"] = str(model)
    cached = _int_of(
        attrs,
        "gen_ai.usage.cache_read.input_tokens",
        "gen_ai.usage.cached_tokens",
        "llm.token_count.prompt_details.cache_read",
    )
    if isinstance(cached, int):
        details["cached_input_tokens"] = cached
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "details": details,
    }


def _int_of(attrs: dict[str, Any], *keys: str) -> int | None:
    """The first of `keys` holding an integer (OTel, OpenInference, OpenLLMetry names),
    between 0 and `TOKEN_MAX` as token totals count it (a negative count is 0)."""
    for key in keys:
        if isinstance(attrs.get(key), int):
            return min(max(int(attrs[key]), 0), TOKEN_MAX)
    return None
