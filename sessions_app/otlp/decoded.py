"""JSON texts a request writes and reads back, decoded once.

`history.kept_inputs` writes the part of a model span's input the mapping reads as new
JSON text, and the mapping (`messages.input_messages`) reads that text again when the
request's traces are planned. Within `decoding()` (one request's `writer.store_spans`),
the value a text was encoded from is noted with it (`note`), and `json_of` of that same
text hands the value over instead of parsing it: the standard library's reading of what
its encoder wrote from a decoded JSON value is an equal value. It is handed over once
(its objects go to one reader; a second reader parses the text), and a text that changed
in between (redacted) is not found, so it is parsed. Outside `decoding()` nothing is
noted and every text is parsed: the results are the same either way
(tests/otlp/test_history.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from sessions_app.ingest.normalise import json_or_none

__all__ = ["decoding", "json_of", "note"]

_noted: ContextVar[dict[str, Any] | None] = ContextVar("otlp_decoded", default=None)
_ABSENT = object()


@contextmanager
def decoding() -> Iterator[None]:
    """Texts noted inside are handed over by `json_of` inside (then forgotten)."""
    token = _noted.set({})
    try:
        yield
    finally:
        _noted.reset(token)


def note(text: str, value: Any) -> None:
    """`text` was encoded from `value` (a decoded JSON value, not read by anyone else)."""
    noted = _noted.get()
    if noted is not None:
        noted[text] = value


def json_of(value: Any) -> Any:
    """`normalise.json_or_none(value)`: the noted value when `value` is a noted text."""
    if isinstance(value, str):
        noted = _noted.get()
        if noted and (found := noted.pop(value, _ABSENT)) is not _ABSENT:
            return found
    return json_or_none(value)
