"""`redact_values`: many values redacted with one prefilter pass give exactly what
`redact_value` gives each of them, whatever mix of clean values, planted credentials
(every shape of tests/redaction_cases.py, as text, inside JSON text, as a dict key) and
credential key names they hold; clean values come back as the same objects."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sessions_app.ingest.redaction import redact_value, redact_values
from tests.redaction_cases import SHAPES

_CLEAN = [
    {"gen_ai.operation.name": "chat", "gen_ai.usage.input_tokens": 120, "n": 1.5},
    {"resource.service.name": "weather", "messages": json.dumps([{"role": "user"}])},
    ["plain", "words", {"nested": ["deeper", 3, None, True]}],
    "just text",
    42,
    None,
]


def _planted(shape_index: int, where: int) -> Any:
    text = SHAPES[shape_index % len(SHAPES)].text
    return [
        {"gen_ai.input.messages": json.dumps([{"role": "user", "content": text}])},
        {"attr": text},
        {text[:40]: "value"},
        [text],
        # Credential key names no prefilter trigger covers: their values go whole.
        {"credentials": "xyz-1", "nested": [{"session.token": "abc"}]},
        {"pin": {"cookie": "c1"}},
    ][where % 6]


def test_clean_values_come_back_as_they_are() -> None:
    assert all(a is b for a, b in zip(redact_values(_CLEAN), _CLEAN, strict=True))


@pytest.mark.parametrize("index", range(len(SHAPES)))
def test_each_shape_among_clean_values_is_redacted_as_alone(index: int) -> None:
    for where in range(6):
        values = [*_CLEAN, _planted(index, where), *_CLEAN]
        assert redact_values(values) == [redact_value(v) for v in values]
        assert redact_values(values)[len(_CLEAN)] != _planted(index, where) or where == 2


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.integers(0, 500)), max_size=12))
def test_any_mix_gives_what_each_alone_gives(picks: list[tuple[bool, int]]) -> None:
    values = [_planted(n, n // 7) if secret else _CLEAN[n % len(_CLEAN)] for secret, n in picks]
    assert redact_values(values) == [redact_value(v) for v in values]
