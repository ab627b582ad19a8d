"""The mapping's shortcuts give what the long way gives: the key-prefix prefilter is
never False when a key has the prefix, the last assistant message is found from the end
as a scan from the start finds it, and a first model span's inputs, read once, give the
same drafts as reading them twice (all of them for the system text, then the tail), and
the attributes kept of a span are those a test of every name keeps."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from sessions_app.otlp.decode import SpanRecord
from sessions_app.otlp.mapping import _after_last_assistant, span_drafts
from sessions_app.otlp.messages import _genai_message, has_key_prefix, input_messages
from sessions_app.otlp.writer import _NEVER_KEPT, _keepable

_KEYS = st.text(alphabet="ab.\x00_", max_size=6)


@settings(max_examples=300, deadline=None)
@given(st.lists(_KEYS, max_size=6), st.lists(_KEYS.filter(bool), min_size=1, max_size=3))
def test_key_prefix_is_never_false_when_a_key_has_it(keys: list[str], prefixes: list[str]) -> None:
    attributes = dict.fromkeys(keys, 1)
    if any(key.startswith(tuple(prefixes)) for key in attributes):
        assert has_key_prefix(attributes, *prefixes)


def test_key_prefix_false_without_it() -> None:
    assert not has_key_prefix({"gen_ai.operation.name": "chat"}, "gen_ai.prompt.")
    assert not has_key_prefix({}, "llm.input_messages.")
    assert has_key_prefix({"a": 1, "gen_ai.prompt.0.role": "user"}, "gen_ai.prompt.")


_ROLES = st.sampled_from(["user", "assistant", "model", "ai", "system", "tool", "AI", None, 3])
_ITEMS = st.one_of(
    st.builds(lambda role, n: {"role": role, "content": f"m{n}"}, _ROLES, st.integers(0, 9)),
    st.just("not a message"),
    st.just(None),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_ITEMS, max_size=10))
def test_the_tail_after_the_last_assistant_is_found_from_the_end(items: list[Any]) -> None:
    everything = [m for item in items if (m := _genai_message(item)) is not None]
    tail = input_messages({"gen_ai.input.messages": json.dumps(items)}, after_last_assistant=True)
    assert (
        tail
        == everything[
            max((i for i, m in enumerate(everything) if m.role == "assistant"), default=-1) + 1 :
        ]
    )
    assert _after_last_assistant(tail) == _after_last_assistant(everything)


def _text(role: str, text: str) -> dict[str, Any]:
    return {"role": role, "parts": [{"type": "text", "content": text}]}


def test_a_first_model_span_reads_its_inputs_once_with_the_same_drafts() -> None:
    start = datetime(2026, 1, 1, tzinfo=UTC)
    history = [_text("system", "be brief"), _text("user", "hi"), _text("assistant", "hello"),
               _text("system", "late rule"), _text("user", "and now?")]  # fmt: skip
    span = SpanRecord("t" * 32, "s" * 16, "", "chat m", start, start + timedelta(seconds=1), 0,
                      {"gen_ai.operation.name": "chat",
                       "gen_ai.input.messages": json.dumps(history)})  # fmt: skip
    first = [(d.key, d.role, d.text) for d in span_drafts(span, True)]
    later = [(d.key, d.role, d.text) for d in span_drafts(span, False)]
    assert first == [(f"{'s' * 16}:system", "system", "be brief\nlate rule"),
                     (f"{'s' * 16}:in0", "user", "and now?")]  # fmt: skip
    assert later == first[1:]


_ATTRIBUTE_NAMES = st.sampled_from(["exception.", "exception.type", "xexception.", "error.message",
                                    "error.messages", "error.type", "otel.status_description",
                                    "gen_ai.input.messages", "a\x00exception.", ""])  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(_ATTRIBUTE_NAMES, st.text(alphabet="ab.\x00", max_size=3)), max_size=8))
def test_the_kept_attribute_names_are_those_of_a_test_per_key(names: list[tuple[str, str]]) -> None:
    attributes = {a + b: n for n, (a, b) in enumerate(names)}
    kept = _keepable(attributes)
    assert kept == {k: v for k, v in attributes.items() if not k.startswith(_NEVER_KEPT)}
    assert list(kept) == [k for k in attributes if not k.startswith(_NEVER_KEPT)]
    assert kept is not attributes


def test_token_counts_are_read_between_zero_and_the_cap_totals_use() -> None:
    from sessions_app.otlp.usage import span_usage
    from sessions_app.search.numbers import TOKEN_MAX

    usage = span_usage({"gen_ai.usage.input_tokens": -5, "gen_ai.usage.output_tokens": 2**63 - 1})
    assert usage is not None
    assert (usage["prompt_tokens"], usage["completion_tokens"]) == (0, TOKEN_MAX)
    assert usage["total_tokens"] == TOKEN_MAX
