"""The OTLP/HTTP receiver: real SDK spans as protobuf and JSON land as sessions, turns and
events; retries, splits and reordering change nothing; bad requests write nothing."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from django.test import override_settings
from google.rpc import status_pb2
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from sessions_app import models
from sessions_app.otlp.models import OtlpSpan
from tests.otlp.agent_spans import (
    SECRET_MESSAGE,
    STATUS_TEXT,
    conversation_spans,
    json_body,
    protobuf_body,
    shuffled_batches,
)
from tests.otlp.conftest import OtlpPoster
from tests.test_page_facts import _kept, _recomputed
from tests.test_redaction_shapes import database_text


def landed() -> list[Any]:
    """Sessions, their turns and events, as comparable values (ids of turns cut to their
    session part, event ids left out)."""
    found = []
    for session in models.Session.objects.order_by("id"):
        turns = []
        for turn in models.Turn.objects.filter(session=session).order_by("started_at"):
            events = [
                (
                    e.role,
                    e.text,
                    [c["id"] for c in e.tool_calls],
                    (e.tool_response or {}).get("tool_call_id", ""),
                )
                for e in models.Event.objects.filter(turn_id=turn.id).order_by("id")
            ]
            turns.append((turn.status, turn.reason, turn.failure_code, turn.failure_stage, events))
        found.append((session.id, session.app_name, session.user_id, turns))
    return found


def test_protobuf_conversation_lands_as_sessions_turns_and_events(poster: OtlpPoster) -> None:
    response = poster.post(protobuf_body(conversation_spans()))
    assert response.status_code == 200
    assert response["Content-Type"] == "application/x-protobuf"
    answer = ExportTraceServiceResponse.FromString(response.content)
    assert answer.partial_success.rejected_spans == 0

    (conv1, app, user, turns), (conv2, _, _, running) = landed()
    assert (conv1, app, user) == ("conv-1", "weather-agent", "ada")
    assert conv2.startswith("otlp-")  # its root (naming conv-2) has not arrived: the trace's own
    sources = set(models.Session.objects.values_list("source_format", flat=True))
    assert sources == {"otlp"}  # not "runtime": the dashboard's agent does not run them
    titles = dict(models.Session.objects.values_list("id", "title"))
    assert titles["conv-1"] == "What is the weather in Paris?"  # its first turn's prompt
    ok, failed = turns
    assert ok == (
        "completed", "", "", "",
        [
            ("user", "What is the weather in Paris?", [], ""),
            ("assistant", "", ["call_1"], ""),
            ("tool", "", [], "call_1"),
            ("assistant", "It is sunny in Paris.", [], ""),
        ],
    )  # fmt: skip
    status, reason, code, stage, events = failed
    assert (status, reason, code, stage) == (
        "failed",
        "agent_error",
        "openai.rate_limit_error",
        "provider",
    )
    assert events == [
        ("user", "Look up order 42", [], ""),
        ("assistant", "", ["call_d"], ""),
        ("assistant", "", [], ""),  # the failing model call: its usage alone
    ]
    assert running[0][0] == "running"
    assert [e[0] for e in running[0][4]] == ["user", "assistant", "tool"]

    result = models.Event.objects.get(role="tool", tool_response__tool_call_id="call_1")
    assert (result.tool_response or {})["result"] == '{"sky": "sunny"}'
    usage = models.Event.objects.get(text="It is sunny in Paris.").usage or {}
    assert usage["prompt_tokens"] == 20 and usage["details"]["model"] == "gpt-4o"
    session = models.Session.objects.get(pk="conv-1")
    assert session.cannot_resume or session.protocol_issue_count >= 1  # the dangling call
    dump = database_text()
    assert SECRET_MESSAGE not in dump and STATUS_TEXT not in dump


def test_json_encoding_lands_the_same(poster: OtlpPoster, db: None) -> None:
    spans = conversation_spans()
    response = poster.post(json_body(spans), "application/json")
    assert response.status_code == 200, response.content
    assert response["Content-Type"] == "application/json"
    assert json.loads(response.content) == {}
    via_json = landed()
    models.Session.objects.all().delete()
    OtlpSpan.objects.all().delete()
    assert poster.post(protobuf_body(spans), gzipped=True).status_code == 200
    assert landed() == via_json


def test_resent_split_and_reordered_batches_land_once(poster: OtlpPoster) -> None:
    spans = conversation_spans()
    assert poster.post(protobuf_body(spans)).status_code == 200
    expected = landed()
    events = models.Event.objects.count()
    assert poster.post(protobuf_body(spans)).status_code == 200  # an exporter's retry
    assert landed() == expected and models.Event.objects.count() == events
    for seed in (1, 2, 3):
        models.Session.objects.all().delete()
        OtlpSpan.objects.all().delete()
        for batch in shuffled_batches(spans, seed):
            assert poster.post(protobuf_body(batch)).status_code == 200
        assert landed() == expected, seed


def test_without_content_calls_and_results_come_from_tool_spans(poster: OtlpPoster) -> None:
    spans = conversation_spans()
    for span in spans:  # as a framework with content capture off sends them
        attributes = span._attributes
        for name in (
            "gen_ai.input.messages",
            "gen_ai.output.messages",
            "gen_ai.tool.call.result",
            "gen_ai.tool.call.arguments",
        ):
            attributes._dict.pop(name, None)  # type: ignore[union-attr]
    assert poster.post(protobuf_body(spans)).status_code == 200
    ok = models.Turn.objects.filter(session_id="conv-1").order_by("started_at").first()
    assert ok is not None and "message content was not captured" in ok.status_note
    events = list(models.Event.objects.filter(turn_id=ok.id).order_by("id"))
    # Each model call is an event of its usage alone (the tokens are counted all the same).
    assert [(e.role, [c["id"] for c in e.tool_calls], e.usage is not None) for e in events] == [
        ("assistant", [], True),
        ("assistant", ["call_1"], False),
        ("tool", [], False),
        ("assistant", [], True),
    ]
    assert (events[2].tool_response or {})["tool_call_id"] == "call_1"
    session = models.Session.objects.get(pk="conv-1")
    assert session.state["otlp"] == {"content_captured": False}
    assert session.tokens_input > 0  # counted from the model spans without content
    assert session.title == ""  # no prompt to name it: the list shows its id


def _status(response: Any) -> str:
    return str(status_pb2.Status.FromString(response.content).message)


@pytest.mark.parametrize(
    ("body", "content_type", "status"),
    [
        (b"\xff\xff\xff not protobuf", "application/x-protobuf", 400),
        (b"{not json", "application/json", 400),
        (
            b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "zz"}]}]}]}',
            "application/json",
            400,
        ),
        (b"<xml/>", "text/xml", 415),
    ],
)
def test_malformed_bodies_get_a_clear_4xx_and_write_nothing(
    poster: OtlpPoster, body: bytes, content_type: str, status: int
) -> None:
    response = poster.post(body, content_type)
    assert response.status_code == status
    if content_type == "application/json":
        reason = json.loads(response.content)["message"]
    elif content_type == "text/xml":  # not an OTLP encoding: the API's problem+json
        reason = response.json()["detail"]
    else:
        reason = _status(response)
    assert reason and "Traceback" not in reason
    assert not OtlpSpan.objects.exists() and not models.Session.objects.exists()


def test_oversized_and_bomb_bodies_get_413(poster: OtlpPoster) -> None:
    body = protobuf_body(conversation_spans())
    with override_settings(AGENTOPS_API_MAX_BODY_BYTES=100):
        assert poster.post(body).status_code == 413
    with override_settings(
        AGENTOPS_API_MAX_BODY_BYTES=len(body) - 1, AGENTOPS_OTLP_INFLATE_FACTOR=1
    ):
        response = poster.post(body, gzipped=True)
    assert response.status_code == 413 and "decompressed" in _status(response)
    assert not OtlpSpan.objects.exists()


def test_a_body_over_djangos_own_upload_limit_gets_the_otlp_413(poster: OtlpPoster) -> None:
    # As settings.py sets them: Django refuses to read a body over its upload limit
    # (a plain HTML 400) from the same size on as the API's limit.
    body = protobuf_body(conversation_spans())
    limit = len(body) - 10
    with override_settings(AGENTOPS_API_MAX_BODY_BYTES=limit, DATA_UPLOAD_MAX_MEMORY_SIZE=limit):
        for path in ("/v1/traces", "/v1/logs"):
            response = poster.post(body, path=path)
            assert response.status_code == 413, response.content
            assert response["Content-Type"] == "application/x-protobuf"
            assert f"the limit is {limit}" in _status(response)
    assert not OtlpSpan.objects.exists()


def test_keys_no_key_401_read_only_403_basic_on_the_langfuse_path(
    poster: OtlpPoster, reader: OtlpPoster
) -> None:
    body = protobuf_body(conversation_spans())
    assert OtlpPoster("").post(body).status_code == 401
    assert OtlpPoster("ao_nope_nope").post(body).status_code == 401
    assert reader.post(body).status_code == 403
    assert not OtlpSpan.objects.exists()
    basic = "Basic " + base64.b64encode(f"pk-anything:{poster.key}".encode()).decode()
    assert poster.post(body, Authorization=basic).status_code == 401  # not on /v1/traces
    response = poster.post(body, path="/api/public/otel/v1/traces", Authorization=basic)
    assert response.status_code == 200
    assert models.Session.objects.count() == 2
    wrong = "Basic " + base64.b64encode(b"pk-anything:ao_nope_nope").decode()
    refused = poster.post(body, path="/api/public/otel/v1/traces", Authorization=wrong)
    assert refused.status_code == 401 and "password of HTTP Basic auth" in _status(refused)
    xml = poster.post(b"<xml/>", "text/xml")
    assert (xml.status_code, xml.json()["title"]) == (415, "Unsupported media type")


def test_a_key_limited_to_other_apps_gets_partial_success(db: None) -> None:
    from sessions_app.api.keys import create_key

    limited = OtlpPoster(create_key("other-app", app_names=["billing"]).key)
    spans = conversation_spans()
    response = limited.post(protobuf_body(spans))
    assert response.status_code == 200
    answer = ExportTraceServiceResponse.FromString(response.content)
    assert answer.partial_success.rejected_spans == len(spans)
    assert "billing" not in answer.partial_success.error_message
    assert "weather-agent" in answer.partial_success.error_message
    assert not models.Session.objects.exists()


def test_over_the_rate_gets_429_with_retry_after(poster: OtlpPoster) -> None:
    body = protobuf_body(conversation_spans())
    with override_settings(AGENTOPS_OTLP_SPANS_PER_SECOND=1, AGENTOPS_OTLP_BURST_SPANS=12):
        assert poster.post(body).status_code == 200
        response = poster.post(body)
    assert response.status_code == 429
    assert int(response["Retry-After"]) >= 1


def test_events_are_dated_by_their_spans(poster: OtlpPoster) -> None:
    spans = conversation_spans()
    assert poster.post(protobuf_body(spans)).status_code == 200
    chat = next(s for s in spans if s.name.startswith("chat") and "Paris" in str(s.attributes))
    tool = next(
        s for s in spans if s.attributes and s.attributes.get("gen_ai.tool.call.id") == "call_1"
    )
    at = {e.text or e.role: e.created_at for e in models.Event.objects.filter(session_id="conv-1")}
    nanos = {key: round(value.timestamp() * 1e6) for key, value in at.items()}
    assert nanos["What is the weather in Paris?"] == (chat.start_time or 0) // 1000
    assert nanos["tool"] == (tool.end_time or 0) // 1000  # the result: when the tool ended


def test_a_session_is_created_when_its_first_span_started(poster: OtlpPoster) -> None:
    spans = [s for s in conversation_spans() if s.context and s.start_time]
    first, second = dict.fromkeys(s.context.trace_id for s in spans if s.parent is None)
    later = [s for s in spans if s.context.trace_id == second]
    # The later turn arrives first: the session's start moves back with the earlier one.
    assert poster.post(protobuf_body(later)).status_code == 200
    began = min(s.start_time or 0 for s in later) // 1000
    assert round(models.Session.objects.get(pk="conv-1").created_at.timestamp() * 1e6) == began
    assert poster.post(protobuf_body(spans)).status_code == 200
    began = min(s.start_time or 0 for s in spans if s.context.trace_id == first) // 1000
    assert round(models.Session.objects.get(pk="conv-1").created_at.timestamp() * 1e6) == began


@pytest.mark.parametrize("wbits", [15, -15], ids=["zlib", "raw"])
def test_deflate_bodies_land_the_same(poster: OtlpPoster, wbits: int) -> None:
    import zlib

    spans = conversation_spans()
    assert poster.post(protobuf_body(spans)).status_code == 200
    expected = landed()
    models.Session.objects.all().delete()
    OtlpSpan.objects.all().delete()
    packer = zlib.compressobj(wbits=wbits)
    body = packer.compress(json_body(spans)) + packer.flush()
    response = poster.post(body, "application/json", Content_Encoding="deflate")
    assert response.status_code == 200, response.content
    assert landed() == expected


def _cut_and_padded_bodies() -> dict[str, tuple[bytes, str]]:
    """Compressed bodies an exporter never sends: cut short or followed by other bytes."""
    import gzip
    import zlib

    body = protobuf_body(conversation_spans())
    packed = gzip.compress(body)
    packer = zlib.compressobj(wbits=15)
    deflated = packer.compress(body) + packer.flush()
    return {
        "gzip without its checksum": (packed[:-8], "gzip"),
        "gzip cut in the middle": (packed[: len(packed) // 2], "gzip"),
        "gzip with other bytes after it": (packed + b"trailing", "gzip"),
        "not gzip at all": (b"x", "gzip"),
        "deflate cut short": (deflated[:-4], "deflate"),
        "deflate with other bytes after it": (deflated + b"xyz", "deflate"),
    }


@pytest.mark.parametrize("case", list(_cut_and_padded_bodies()))
def test_corrupt_compressed_bodies_are_refused_and_write_nothing(
    poster: OtlpPoster, case: str
) -> None:
    body, encoding = _cut_and_padded_bodies()[case]
    for path in ("/v1/traces", "/v1/logs"):
        response = poster.post(body, path=path, Content_Encoding=encoding)
        assert response.status_code == 400, (case, path, response.content)
        assert f"not valid {encoding}".encode() in response.content
    assert not OtlpSpan.objects.exists() and not models.Session.objects.exists()


def test_a_gzip_body_of_two_members_lands_whole(poster: OtlpPoster) -> None:
    """gzip allows several members one after another: all of them are read."""
    import gzip

    spans = conversation_spans()
    half = len(spans) // 2
    assert poster.post(protobuf_body(spans)).status_code == 200
    expected = landed()
    models.Session.objects.all().delete()
    OtlpSpan.objects.all().delete()
    first, second = protobuf_body(spans[:half]), protobuf_body(spans[half:])
    # Two serialised requests concatenated are one request whose repeated fields join.
    body = gzip.compress(first) + gzip.compress(second)
    assert poster.post(body, Content_Encoding="gzip").status_code == 200
    assert landed() == expected


def test_landed_sessions_keep_their_page_facts(poster: OtlpPoster) -> None:
    """The session header's token totals and the protocol page's marks of a traced session
    equal their recomputation from its events, also after a later batch rebuilt a turn."""
    spans = conversation_spans()
    assert poster.post(protobuf_body(spans[: len(spans) // 2])).status_code == 200
    assert poster.post(protobuf_body(spans)).status_code == 200
    sessions = list(models.Session.objects.values_list("pk", flat=True))
    assert sessions
    for session_id in sessions:
        assert _kept(session_id) == _recomputed(session_id), session_id
    assert any(_kept(session_id)["tokens"] != (0, 0, 0) for session_id in sessions)


@pytest.mark.parametrize("bad_trace_id", ["abcdef", "00" * 16])
def test_spans_with_bad_ids_are_rejected_alone_in_both_encodings(
    poster: OtlpPoster, bad_trace_id: str
) -> None:
    spans = conversation_spans()
    document = json.loads(json_body(spans))
    listed = document["resourceSpans"][0]["scopeSpans"][0]["spans"]
    listed[0]["traceId"] = bad_trace_id
    response = poster.post(json.dumps(document).encode(), "application/json")
    assert response.status_code == 200, response.content
    answer = json.loads(response.content)["partialSuccess"]
    assert answer["rejectedSpans"] == "1"
    assert "wrong length or all zero" in answer["errorMessage"]
    assert OtlpSpan.objects.count() == len(spans) - 1


def test_lone_surrogates_in_message_json_are_stored_replaced(poster: OtlpPoster) -> None:
    spans = conversation_spans()
    for span in spans:  # each message's JSON text escapes half a surrogate pair
        for name in ("gen_ai.input.messages", "gen_ai.output.messages"):
            value = (span.attributes or {}).get(name)
            if isinstance(value, str):
                span._attributes._dict[name] = value.replace('"content": "', '"content": "\\udc00')  # type: ignore[union-attr]
    assert poster.post(protobuf_body(spans)).status_code == 200
    texts = [e.text for e in models.Event.objects.filter(session_id="conv-1") if e.text]
    assert texts and all("\ud800" not in t and "\udc00" not in t for t in texts)
    assert "\ufffd" in models.Session.objects.get(pk="conv-1").title


def test_a_conversation_id_of_spaces_names_no_session(poster: OtlpPoster) -> None:
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from tests.otlp.agent_spans import ok_turn, provider

    exporter = InMemorySpanExporter()
    tracer = provider(exporter).get_tracer("tests.otlp.blank")
    for blank in (" ", "\t", "  \n"):
        ok_turn(tracer, conversation=blank)
    assert poster.post(protobuf_body(exporter.get_finished_spans())).status_code == 200
    # Each trace its own session, as with no conversation id: not one shared by them all.
    ids = set(models.Session.objects.values_list("id", flat=True))
    traces = {f"otlp-{s.context.trace_id:032x}" for s in exporter.get_finished_spans()}
    assert ids == traces and len(ids) == 3


def test_a_failed_tool_spans_result_is_kept_nowhere(poster: OtlpPoster) -> None:
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from opentelemetry.trace import Status, StatusCode

    from tests.otlp.agent_spans import provider

    exporter = InMemorySpanExporter()
    tracer = provider(exporter).get_tracer("tests.otlp.failed-tool")
    secret = "the-failed-tool-result-text-k2"
    with tracer.start_as_current_span("invoke_agent weather") as root:
        root.set_attribute("gen_ai.operation.name", "invoke_agent")
        with tracer.start_as_current_span("execute_tool lookup") as tool:
            tool.set_attributes({
                "gen_ai.operation.name": "execute_tool", "gen_ai.tool.call.id": "call_x",
                "gen_ai.tool.name": "lookup", "gen_ai.tool.call.result": f"Error: {secret}",
                "error.type": "TimeoutError",
            })  # fmt: skip
            tool.set_status(Status(StatusCode.ERROR))
    assert poster.post(protobuf_body(exporter.get_finished_spans())).status_code == 200
    result = models.Event.objects.get(role="tool")
    assert result.tool_response == {
        "tool_call_id": "call_x",
        "name": "lookup",
        "error": "TimeoutError",
    }
    assert secret not in database_text()


def test_nul_in_attributes_names_and_message_json_is_stored_replaced(poster: OtlpPoster) -> None:
    # PostgreSQL stores no NUL, in text or JSON: it was a 500 there, losing the batch.
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from tests.otlp.agent_spans import ok_turn, provider

    exporter = InMemorySpanExporter()
    ok_turn(provider(exporter).get_tracer("tests.otlp.nul"), conversation="conv-nul")
    spans = exporter.get_finished_spans()
    for span in spans:
        attributes = span._attributes._dict  # type: ignore[union-attr]
        attributes["app.note"] = "x\x00y"  # a NUL character, and one JSON text escapes
        if isinstance(inputs := attributes.get("gen_ai.input.messages"), str):
            attributes["gen_ai.input.messages"] = inputs.replace(
                '"content": "', '"content": "\\u0000\x00'
            )
        span._name = f"{span.name}\x00"
    assert poster.post(protobuf_body(spans)).status_code == 200
    session = models.Session.objects.get(pk="conv-nul")
    assert session.title == "\ufffd\ufffdWhat is the weather in Paris?"
    assert "\x00" not in database_text()
