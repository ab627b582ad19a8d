"""The model a transcript names, read from its source records (`Session.model`)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

_KEYS = ("model", "modelVersion", "model_version")
_NESTED = ("message", "payload", "response")


def _named(record: Any) -> str:
    if isinstance(record, list):
        for item in reversed(record):
            if found := _named(item):
                return found
        return ""
    if not isinstance(record, dict):
        return ""
    for key in _KEYS:
        value = record.get(key)
        if isinstance(value, str) and value.strip() and value != "<synthetic>":
            return value.strip()[:255]
    for key in _NESTED:
        if found := _named(record.get(key)):
            return found
    return ""


def model_named(records: Iterable[Any]) -> str:
    """The first model name found in `records` (source records: dicts, or lists of them,
    as kept in `Event.raw`): a string under `model`, `modelVersion` or `model_version`, at
    the top or inside `message`, `payload` or `response` (Claude Code lines, Codex
    `turn_context`, OpenAI/Anthropic responses, ADK events). Pass records newest first to
    get the last model used. "" when none names one; at most 255 characters."""
    for record in records:
        if found := _named(record):
            return found
    return ""
