"""A real producer: Microsoft Semantic Kernel 1.45.0's own telemetry (Python), captured
from a real ``ChatCompletionAgent`` (name ``weather_agent``, instructions "Answer in one
line.", one real ``@kernel_function`` ``get_weather(city)`` of the plugin
``WeatherPlugin``, auto function calling) whose service is Semantic Kernel's own
``OpenAIChatCompletion`` connector (model ``fake-weather-1``) talking to a fake OpenAI over
``httpx.MockTransport``, offline, and replayed from
``tests/otlp/fixtures/semantic_kernel_1.45.0_*.json`` (how they were made:
``tests/otlp/fixtures/README.md``). Semantic Kernel sends spans (an ``invoke_agent
weather_agent`` root per invocation, ``AutoFunctionInvocationLoop``, ``chat
fake-weather-1`` per model call, ``execute_tool WeatherPlugin-get_weather``) and, with
sensitive diagnostics on, each model call's messages as log records (OpenTelemetry's
``LoggingHandler`` on the ``semantic_kernel`` loggers), their body the JSON text of
Semantic Kernel's messages.

Each capture holds three invocations: thread ``<p>-s1`` "Weather in Paris?" (through the
tool, call id ``call_paris``, result ``sunny in Paris``) then "And in Rome?" (without it);
thread ``<p>-fail`` "Weather in Atlantis?", whose function raises
``ConnectionError(SECRET)``: Semantic Kernel catches it, gives the model ``An error
occurred while invoking the function WeatherPlugin-get_weather: <message>`` and the
invocation completes with "The weather service failed.". Usage (prompt, completion):
12/5 and 30/7 per tool run, 41/6 for Rome.

- ``..._spans.json`` / ``..._logs.json`` (``sk-``): both switches on
  (``SEMANTICKERNEL_EXPERIMENTAL_GENAI_ENABLE_OTEL_DIAGNOSTICS``, ``..._SENSITIVE``);
  Semantic Kernel names no thread or conversation: each invocation is a session of its
  own (its trace's);
- ``..._conversation_spans.json`` / ``..._conversation_logs.json`` (``skc-``): the same,
  each invocation inside a ``request`` span of the application naming its thread
  (``gen_ai.conversation.id``): the thread's invocations are one session;
- ``..._nocontent_spans.json`` / ``..._nocontent_logs.json`` (``sknc-``): sensitive
  diagnostics off (no message log records, no tool arguments or results).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from sessions_app import models
from tests.otlp.captured import FIXTURES, fixture_spans, session_turns
from tests.otlp.conftest import OtlpPoster
from tests.otlp.rows import EventRow
from tests.otlp.weather_runs import MODEL, SYSTEM, outcome, session_usages, tokens_of, turn_rows
from tests.test_redaction_shapes import database_text

APP = "sk-weather"
V = "1.45.0"
SECRET = "the-sk-tool-exception-text-r4t8"
#: SECRET holds ``sk-...``, which the redaction of imports takes for an API key: the
#: fixtures are also replayed with it replaced by a text no redaction recognises.
PLAIN_SECRET = "the-weather-tool-exception-text-r4t8"
ERROR_TEXT = "An error occurred while invoking the function"
TOOL = "WeatherPlugin-get_weather"
CAPTURES = {"": "sk", "conversation_": "skc"}
PARIS: list[EventRow] = [
    ("system", SYSTEM, [], ""),
    ("user", "Weather in Paris?", [], ""),
    ("assistant", "", ["call_paris"], ""),
    ("tool", "", [], "call_paris"),
    ("assistant", "It is sunny in Paris.", [], ""),
]
ROME: list[EventRow] = [
    ("user", "And in Rome?", [], ""),
    ("assistant", "Rome is sunny too.", [], ""),
]
ATLANTIS: list[EventRow] = [
    ("system", SYSTEM, [], ""),
    ("user", "Weather in Atlantis?", [], ""),
    ("assistant", "", ["call_atlantis"], ""),
    ("tool", "", [], "call_atlantis"),
    ("assistant", "The weather service failed.", [], ""),
]


def _document(fixture: str, secret: str = SECRET) -> bytes:
    return (FIXTURES / fixture).read_text().replace(SECRET, secret).encode()


def _land(
    poster: OtlpPoster, capture: str, *, logs_first: bool = False, secret: str = SECRET
) -> None:
    """POST the capture's spans and log records (each as its exporter sends: apart)."""
    posts = [(f"semantic_kernel_{V}_{capture}spans.json", "/v1/traces"),
             (f"semantic_kernel_{V}_{capture}logs.json", "/v1/logs")]  # fmt: skip
    for fixture, path in reversed(posts) if logs_first else posts:
        body = _document(fixture, secret)
        response = poster.post(body, "application/json", path=path)
        assert response.status_code == 200, response.content
        assert json.loads(response.content) == {}  # no partial success: everything kept


def _runs(capture: str) -> list[dict[str, Any]]:
    """The ``invoke_agent`` spans of a capture, in run order: Paris, Rome, Atlantis."""
    fixture = f"semantic_kernel_{V}_{capture}spans.json"
    runs = [s for s in fixture_spans(fixture) if s["name"] == "invoke_agent weather_agent"]
    assert len(runs) == 3
    return runs


def _assert_call(turn: models.Turn, call: str, city: str) -> None:
    asking = models.Event.objects.get(turn_id=turn.id, role="assistant", text="")
    assert asking.tool_calls == [{"id": call, "name": TOOL, "arguments": {"city": city}}]


def _assert_run(turn: models.Turn, rows: Any, call: str, city: str, answer: dict[str, Any]) -> None:
    """A completed run of `rows`, its call `call` for `city` answered by `answer`."""
    assert outcome(turn) == ("completed", "", "", "", "")
    assert turn_rows(turn) == rows
    _assert_call(turn, call, city)
    result = models.Event.objects.get(turn_id=turn.id, role="tool")
    assert result.tool_response == {"tool_call_id": call, "name": TOOL, **answer}


def _assert_paris(turn: models.Turn) -> None:
    _assert_run(turn, PARIS, "call_paris", "Paris", {"result": "sunny in Paris"})


def _assert_atlantis(turn: models.Turn) -> None:
    # Semantic Kernel catches the function's exception and hands the model its text: the
    # invocation, and its turn, complete; the call is answered by the error's class.
    _assert_run(turn, ATLANTIS, "call_atlantis", "Atlantis", {"error": "ConnectionError"})


def _assert_no_error_text() -> None:
    text = database_text()
    assert (SECRET in text, PLAIN_SECRET in text, ERROR_TEXT in text) == (False, False, False)
    assert "r4t8" not in text


# --- with content ------------------------------------------------------------------------


@pytest.mark.parametrize("logs_first", [False, True])
def test_semantic_kernel_thread_in_a_conversation_span_is_one_session(
    poster: OtlpPoster, logs_first: bool
) -> None:
    _land(poster, "conversation_", logs_first=logs_first)
    session = models.Session.objects.get(pk="skc-s1")
    assert (session.app_name, session.model, session.title) == (APP, MODEL, "Weather in Paris?")
    assert session.state["otlp"] == {"content_captured": True}
    paris, rome = session_turns(session.id)
    paris_run, rome_run, _ = _runs("conversation_")
    assert [paris.id, rome.id] == [
        f"skc-s1/{paris_run['traceId']}",
        f"skc-s1/{rome_run['traceId']}",
    ]
    _assert_paris(paris)
    # The thread's history, sent again to the model, is not stored again, nor the same
    # instructions.
    assert outcome(rome) == ("completed", "", "", "", "")
    assert turn_rows(rome) == ROME
    used = list(models.Event.objects.filter(session=session, usage__isnull=False).order_by("id"))
    assert [(e.text, tokens_of(e)) for e in used] == [
        ("", (12, 5)),
        ("It is sunny in Paris.", (30, 7)),
        ("Rome is sunny too.", (41, 6)),
    ]
    assert {(e.usage or {})["details"].get("model") for e in used} == {MODEL}
    assert (session.tokens_input, session.tokens_output) == (12 + 30 + 41, 5 + 7 + 6)
    assert (session.protocol_issue_count, session.orphan_result_count) == (0, 0)
    (failing,) = session_turns("skc-fail")
    _assert_atlantis(failing)
    assert session_usages("skc-fail") == [(12, 5), (30, 7)]
    _assert_no_error_text()


@pytest.mark.parametrize("logs_first", [False, True])
def test_semantic_kernel_invocations_without_a_conversation_are_sessions_of_their_own(
    poster: OtlpPoster, logs_first: bool
) -> None:
    _land(poster, "", logs_first=logs_first)
    assert models.Session.objects.count() == 3
    paris_run, rome_run, atlantis_run = _runs("")
    expected = {paris_run["traceId"]: PARIS, rome_run["traceId"]: [PARIS[0], *ROME]}
    for trace_id, rows in expected.items():
        (turn,) = session_turns(f"otlp-{trace_id}")
        assert turn.id == f"otlp-{trace_id}/{trace_id}"
        assert turn_rows(turn) == rows
        session = models.Session.objects.get(pk=f"otlp-{trace_id}")
        assert (session.app_name, session.model) == (APP, MODEL)
        assert session.title == rows[1][1]
        assert (session.protocol_issue_count, session.orphan_result_count) == (0, 0)
    _assert_paris(session_turns(f"otlp-{paris_run['traceId']}")[0])
    assert session_usages(f"otlp-{rome_run['traceId']}") == [(41, 6)]
    (failing,) = session_turns(f"otlp-{atlantis_run['traceId']}")
    _assert_atlantis(failing)
    _assert_no_error_text()


@pytest.mark.parametrize("capture", CAPTURES)
def test_semantic_kernel_failed_functions_text_is_kept_nowhere(
    poster: OtlpPoster, capture: str
) -> None:
    """The function's exception message reaches the receiver in the tool span's status,
    its exception events, an error log record and the next model call's tool message
    (Semantic Kernel's error text): none of it is kept, also when the message is no text
    any redaction would recognise."""
    sent = b"".join(
        _document(f"semantic_kernel_{V}_{capture}{kind}.json", PLAIN_SECRET)
        for kind in ("spans", "logs")
    )
    assert sent.count(PLAIN_SECRET.encode()) >= 5 and ERROR_TEXT.encode() in sent
    _land(poster, capture, secret=PLAIN_SECRET)
    prefix = CAPTURES[capture]
    session_id = "skc-fail" if prefix == "skc" else f"otlp-{_runs(capture)[2]['traceId']}"
    (failing,) = session_turns(session_id)
    _assert_atlantis(failing)
    _assert_no_error_text()


# --- without content ---------------------------------------------------------------------


def test_semantic_kernel_without_content_lands_calls_results_and_usage(
    poster: OtlpPoster,
) -> None:
    _land(poster, "nocontent_")
    paris_run, rome_run, atlantis_run = _runs("nocontent_")
    for run in (paris_run, rome_run, atlantis_run):
        session = models.Session.objects.get(pk=f"otlp-{run['traceId']}")
        assert (session.app_name, session.model, session.title) == (APP, MODEL, "")
        assert session.state["otlp"] == {"content_captured": False}
        (turn,) = session_turns(session.id)
        assert turn.status == "completed"
        assert "message content was not captured" in turn.status_note
    (paris,) = session_turns(f"otlp-{paris_run['traceId']}")
    # The tool span's call (its id, no arguments) and result (not captured); each model
    # call's usage on a row of its own.
    assert turn_rows(paris) == [
        ("assistant", "", [], ""),
        ("assistant", "", ["call_paris"], ""),
        ("tool", "", [], "call_paris"),
        ("assistant", "", [], ""),
    ]
    assert models.Event.objects.get(turn_id=paris.id, role="tool").tool_response == {
        "tool_call_id": "call_paris",
        "name": TOOL,
        "result": {"content_captured": False},
    }
    assert session_usages(f"otlp-{paris_run['traceId']}") == [(12, 5), (30, 7)]
    (rome,) = session_turns(f"otlp-{rome_run['traceId']}")
    assert turn_rows(rome) == [("assistant", "", [], "")]
    (failing,) = session_turns(f"otlp-{atlantis_run['traceId']}")
    assert outcome(failing) == ("completed", "", "", "", "")
    assert models.Event.objects.get(turn_id=failing.id, role="tool").tool_response == {
        "tool_call_id": "call_atlantis",
        "name": TOOL,
        "error": "ConnectionError",
    }
    _assert_no_error_text()


def test_only_semantic_kernels_agent_spans_lose_their_messages() -> None:
    from sessions_app.otlp.semantic_kernel import semantic_kernel_attributes

    older = json.dumps([{"role": "user", "content": "hi"}])
    # Another producer's agent span in the earlier {"role", "content"} shape: kept as sent.
    other = {"gen_ai.operation.name": "invoke_agent", "gen_ai.input.messages": older}
    assert semantic_kernel_attributes(other) is other
    # Semantic Kernel's names its agent by id: its own-shape copies are dropped.
    sk = {**other, "gen_ai.agent.id": "4654d07c", "gen_ai.output.messages": "[]"}
    assert semantic_kernel_attributes(sk) == {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.id": "4654d07c",
    }
