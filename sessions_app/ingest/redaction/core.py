"""Redacting one value: `redact_text`, `redact_id`, `redact_path` and `redact_value`.

Every span a rule finds (`rules.finders`) is widened to the whole token it sits in
(back over letters and digits, forward over the characters of base64 and URL-safe
tokens), overlapping spans are joined, and each joined span is replaced whole by one
marker, so no part of a secret stays beside its marker (a 40-character match inside a
longer token takes the rest of the token too). Markers already in the text are never
touched, so redacting is idempotent.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from functools import lru_cache
from typing import Any

from sessions_app.ingest.redaction.prefilter import might_hold_secret
from sessions_app.ingest.redaction.rules import (
    MARKER_PREFIX,
    Span,
    finders,
    id_marker,
    key_kind,
    marker,
)

_TOKEN_TAIL = re.compile(r"[A-Za-z0-9_+/-]*=*")
# Markers already in a text (both forms): never redacted again, never widened into.
_MARKERS = re.compile(r"\[REDACTED:[a-z0-9_]+\]|REDACTED-[a-z0-9_]+")


def _widen(text: str, start: int, end: int) -> tuple[int, int]:
    while start > 0 and text[start - 1].isascii() and text[start - 1].isalnum():
        start -= 1
    tail = _TOKEN_TAIL.match(text, end)
    return start, tail.end() if tail else end


def _has_alnum(text: str, start: int, end: int) -> bool:
    # What is left of a span beside a marker may be punctuation only: kept as it is.
    return any(c.isalnum() for c in text[start:end])


def secret_spans(text: str) -> list[Span]:
    """The joined, widened spans of every secret in `text` (sorted, not overlapping,
    none inside an existing marker); empty when the prefilter rules `text` out."""
    if not might_hold_secret(text):
        return []
    found = sorted(
        (*_widen(text, start, end), kind)
        for find in finders()
        for start, end, kind in find(text)
        if end > start
    )
    if not found:
        return []
    protected = [m.span() for m in _MARKERS.finditer(text)]
    joined: list[list[Any]] = []
    for start, end, kind in found:
        if joined and start <= joined[-1][1]:
            joined[-1][1] = max(joined[-1][1], end)
        else:
            joined.append([start, end, kind])
    spans: list[Span] = []
    for start, end, kind in joined:
        # Cut the existing markers out of a span (a rule may match across one).
        for p_start, p_end in protected:
            if p_end <= start or p_start >= end:
                continue
            if p_start > start and _has_alnum(text, start, p_start):
                spans.append((start, p_start, kind))
            start = max(start, p_end)
        if end > start and _has_alnum(text, start, end):
            spans.append((start, end, kind))
    return spans


def _replace(text: str, make_marker: Callable[[str], str]) -> str:
    spans = secret_spans(text)
    if not spans:
        return text
    out: list[str] = []
    pos = 0
    for start, end, kind in spans:
        out.append(text[pos:start])
        out.append(make_marker(kind))
        pos = end
    out.append(text[pos:])
    return "".join(out)


class RedactionMemo:
    """The texts one source redacted in its previous pass and this one (`remembering`):
    a text already redacted is looked up, not redacted again. The live tail parses a
    growing file again from its decoded lines (`ingest.tail`); with a memo only the
    texts that are new since the last pass cost a redaction (`computed` counts them).
    Memory: what two passes held (`next_pass` forgets the older one)."""

    def __init__(self) -> None:
        # (text or id, whether an id) -> its redaction
        self.now: dict[tuple[str, bool], str] = {}
        self.before: dict[tuple[str, bool], str] = {}
        self.computed = 0

    def next_pass(self) -> None:
        """Start a pass: what the pass before the last one held is forgotten."""
        self.before, self.now = self.now, {}

    def redact(self, text: str, is_id: bool = False) -> str:
        """`redact_text(text)` (`redact_id` when `is_id`), looked up when this or the
        previous pass redacted it."""
        key = (text, is_id)
        out = self.now.get(key)
        if out is None:
            out = self.before.get(key)
            if out is None:
                self.computed += 1
                out = _replace(text, id_marker) if is_id else _redact_text(text)
            self.now[key] = out
        return out


_memo: ContextVar[RedactionMemo | None] = ContextVar("redaction_memo", default=None)


@contextmanager
def remembering(memo: RedactionMemo) -> Iterator[None]:
    """Within the block, `redact_text` looks texts up in `memo` (a new pass of it)."""
    memo.next_pass()
    token = _memo.set(memo)
    try:
        yield
    finally:
        _memo.reset(token)


def redact_text(text: str) -> str:
    """`text` with every credential replaced whole by ``[REDACTED:<kind>]``.

    A text that is itself a JSON object or array (a tool's JSON output, arguments kept
    as a string, a raw record inside a record) is decoded and redacted as a value first,
    recursively (`redact_value`), then re-encoded when anything changed. Inside
    `remembering`, a text redacted before is looked up instead (ids too, `redact_id`).
    """
    if len(text) < 4:
        return text
    memo = _memo.get()
    return _redact_text(text) if memo is None else memo.redact(text)


def _redact_text(text: str) -> str:
    if not might_hold_secret(text):
        return text
    if text.lstrip()[:1] in ("{", "["):
        try:
            decoded = json.loads(text)
        except (ValueError, RecursionError):
            decoded = None
        if isinstance(decoded, dict | list):
            redacted = redact_value(decoded)
            if redacted is not decoded:
                text = json.dumps(redacted, ensure_ascii=False)
    return _replace(text, marker)


def redact_id(value: str) -> str:
    """An id (session, user, app name, turn) with each credential replaced by
    ``REDACTED-<kind>``: the same id always gives the same result, and the marker holds
    no "/" or character a URL must escape."""
    if len(value) < 4:
        return value
    memo = _memo.get()
    return _replace(value, id_marker) if memo is None else memo.redact(value, True)


def redact_path(path: str) -> str:
    """A file path as stored and shown (`Session.source_path`, `ImportedFile.path`)."""
    return redact_text(path)


# Kinds whose numbers are secrets too ("token" is left out: `max_token: 4096` is a count).
_NUMERIC_SECRET_KINDS = frozenset({"password", "secret", "api_key", "private_key"})


@lru_cache(maxsize=4096)
def _redact_key(key: str) -> str:
    # Dict keys repeat across events: cached.
    return redact_text(key)


def redact_value(value: Any, key: str | None = None) -> Any:
    """A JSON-like value (dict / list / str / scalar) with credentials redacted.

    Returns the same object when nothing changed, else a new container; never mutates
    `value`. `key` is the dict key the value sits under: a string under a credential
    key name (`rules.key_kind`: password, api_key, token, authorization, ...) is replaced
    whole, and so is a number under a password, secret or API-key name. Keys are
    redacted too (a key can be a secret); other scalars are kept.
    """
    if isinstance(value, str):
        if key is not None and value and not value.startswith(MARKER_PREFIX):
            kind = key_kind(key)
            if kind is not None:
                return marker(kind)
        return redact_text(value)
    if (
        key is not None
        and isinstance(value, int | float)
        and not isinstance(value, bool)
        and key_kind(key) in _NUMERIC_SECRET_KINDS
    ):
        return marker(str(key_kind(key)))  # a numeric password or PIN; counts stay
    if isinstance(value, dict):
        changed = False
        out: dict[Any, Any] = {}
        for k, v in value.items():
            new_key = _redact_key(k) if isinstance(k, str) else k
            new = redact_value(v, k if isinstance(k, str) else None)
            changed = changed or new is not v or new_key != k
            out[new_key] = new
        return out if changed else value
    if isinstance(value, list | tuple):
        items = [redact_value(v) for v in value]
        if any(new is not old for new, old in zip(items, value, strict=True)):
            return items
        return value
    return value


def _texts(value: Any, out: list[str]) -> bool:
    """Append the strings and dict keys of `value` to `out`; False as soon as a key names
    a credential (`rules.key_kind`: its value is replaced whatever it holds). Strings
    inside a container are appended in its own loop, not by a call each: a span's
    attributes are a flat dict of mostly strings, and a call per value was most of the
    walk's cost."""
    if isinstance(value, str):
        out.append(value)
    elif isinstance(value, dict):
        for key, item in value.items():
            if isinstance(key, str):
                if key_kind(key) is not None:
                    return False
                out.append(key)
            if isinstance(item, str):
                out.append(item)
            elif isinstance(item, dict | list | tuple) and not _texts(item, out):
                return False
    elif isinstance(value, list | tuple):
        for item in value:
            if isinstance(item, str):
                out.append(item)
            elif isinstance(item, dict | list | tuple) and not _texts(item, out):
                return False
    return True


def redact_values(values: Sequence[Any]) -> list[Any]:
    """`redact_value` of each of `values`, with the same results, prefiltered in one pass:
    when none of their strings and keys (joined by newlines: no trigger spans one, and
    one found in any string is found in the whole) might hold a secret and no key names
    a credential, they come back as they are without being walked again; otherwise only
    the values whose own texts might are redacted (their texts gathered again: the
    common case, nothing found, keeps one list of all texts). For many small values at
    a time (the spans of an OTLP batch)."""
    everything: list[str] = []
    # Each distinct text once (keys repeat in every span): the same set of texts.
    if all(_texts(value, everything) for value in values) and not might_hold_secret(
        "\n".join(dict.fromkeys(everything))
    ):
        return list(values)
    return [value if _plain(value) else redact_value(value) for value in values]


def _plain(value: Any) -> bool:
    """True when no key of `value` names a credential and none of its texts might hold a
    secret: `redact_value` would return it as it is."""
    found: list[str] = []
    return _texts(value, found) and not might_hold_secret("\n".join(found))
