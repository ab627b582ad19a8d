"""`decode`'s reading of attribute values and times: what `spans_of` reads without asking
which field of a value is set (a non-empty string) gives what asking gives, for every
kind of value, and times are exact to the microsecond."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

from sessions_app.otlp.decode import attributes_of, spans_of, time_of


def _pair(key: str, **value: Any) -> KeyValue:
    return KeyValue(key=key, value=AnyValue(**value))


def test_every_kind_of_value() -> None:
    nested = AnyValue()
    nested.array_value.values.add(string_value="")
    nested.array_value.values.add(int_value=0)
    kv = AnyValue()
    kv.kvlist_value.values.add(key="inner", value=AnyValue(string_value="x"))
    pairs = [
        _pair("text", string_value="chat"),
        _pair("empty", string_value=""),
        _pair("zero", int_value=0),
        _pair("int", int_value=-7),
        _pair("false", bool_value=False),
        _pair("true", bool_value=True),
        _pair("double", double_value=0.0),
        _pair("bytes", bytes_value=b"\x00\x01"),
        _pair("unset"),
        KeyValue(key="array", value=nested),
        KeyValue(key="kv", value=kv),
        _pair("text", string_value="again"),  # a repeated key: the last wins
    ]
    assert attributes_of(pairs) == {
        "text": "again",
        "empty": "",
        "zero": 0,
        "int": -7,
        "false": False,
        "true": True,
        "double": 0.0,
        "bytes": "AAE=",
        "unset": None,
        "array": ["", 0],
        "kv": {"inner": "x"},
    }
    assert type(attributes_of(pairs)["false"]) is bool


def test_a_span_attribute_overrides_its_resource_attribute_in_place() -> None:
    request = ExportTraceServiceRequest()
    resource_spans = request.resource_spans.add()
    resource_spans.resource.attributes.append(_pair("service.name", string_value="svc"))
    span = resource_spans.scope_spans.add().spans.add(
        trace_id=b"\x01" * 16, span_id=b"\x02" * 8, name="chat",
        start_time_unix_nano=1_700_000_000_123_456_789,
    )  # fmt: skip
    span.attributes.extend([_pair("resource.service.name", string_value="mine"),
                            _pair("a", int_value=1)])  # fmt: skip
    (record,), bad = spans_of(request)
    assert bad == 0
    assert list(record.attributes.items()) == [("resource.service.name", "mine"), ("a", 1)]
    assert record.start_at == record.end_at == datetime(2023, 11, 14, 22, 13, 20, 123456, UTC)


@pytest.mark.parametrize(
    "nanos", [0, 999, 1_000, 999_999_999, 1_000_000_000, 1_700_000_000_999_999_999, 2**64 - 1]
)
def test_times_are_exact(nanos: int) -> None:
    expected = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=nanos // 1000)
    assert time_of(nanos) == expected
    assert time_of(nanos).tzinfo is UTC
