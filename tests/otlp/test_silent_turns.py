"""OTLP turns whose trace goes silent: a running turn that receives no span for
AGENTOPS_STUCK_AFTER_SECONDS (its exporter's lease lapsed) is recorded
interrupted/abandoned, its open tool call a dangling call; a turn of the same session
still receiving spans keeps running; spans arriving again make a turn running again."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.utils import timezone
from opentelemetry import trace
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from sessions_app import models
from sessions_app.otlp.landing import OWNER_HOST
from sessions_app.store.owner import gone_running_turns
from tests.otlp.agent_spans import _call, _chat, _messages, _tool, _user, protobuf_body, provider
from tests.otlp.conftest import OtlpPoster


class OpenTurn:
    """A turn of session ``shared`` whose model asked for a tool that has not answered
    yet: its root span stays open, so the turn is running."""

    def __init__(self, name: str) -> None:
        self.exporter = InMemorySpanExporter()
        self.tracer = provider(self.exporter).get_tracer("tests.otlp.silent")
        self.root = self.tracer.start_span("invoke_agent worker")
        self.root.set_attribute("gen_ai.operation.name", "invoke_agent")
        self.ids = {"gen_ai.conversation.id": "shared", "gen_ai.agent.call.id": name}
        self.root.set_attributes(self.ids)
        self.sent = 0
        self.call_id = f"call_{name}"
        with trace.use_span(self.root, end_on_exit=False):
            asked = _call(self.call_id, "slow_tool", {"n": 1})
            question = _messages(_user(f"{name}: run the slow tool"))
            with _chat(self.tracer, question, _messages(asked)) as chat:
                chat.set_attributes(self.ids)  # as Pydantic AI sets them on every span

    def tool_answers(self) -> None:
        with trace.use_span(self.root, end_on_exit=False):
            _tool(self.tracer, self.call_id, "slow_tool", {"n": 1}, "done", self.ids)

    def batch(self) -> bytes:
        """The spans ended since the last batch, as a protobuf body."""
        spans = list(self.exporter.get_finished_spans())[self.sent :]
        self.sent += len(spans)
        return protobuf_body(spans)


def _turn(name: str) -> Any:
    return models.Turn.objects.get(pk=f"shared/{name}")


def _lapse_lease(turn_id: str) -> None:
    """As if its trace had sent nothing for longer than the stuck threshold."""
    models.Turn.objects.filter(pk=turn_id).update(lease_until=timezone.now() - timedelta(seconds=1))


def test_a_silent_turn_with_an_open_call_is_abandoned_alone(poster: OtlpPoster) -> None:
    silent, busy = OpenTurn("silent"), OpenTurn("busy")
    assert poster.post(silent.batch()).status_code == 200
    assert poster.post(busy.batch()).status_code == 200
    turn = _turn("silent")
    assert turn.status == "running" and (turn.owner_host, turn.owner_pid) == (OWNER_HOST, 0)
    assert turn.lease_until is not None and turn.lease_until > timezone.now()
    assert gone_running_turns() == []

    _lapse_lease(turn.id)  # the page's dead-turn recovery sees it gone too
    assert gone_running_turns() == [("shared", turn.id)]
    busy.tool_answers()
    assert poster.post(busy.batch()).status_code == 200  # any batch sweeps silent turns

    turn.refresh_from_db()
    assert (turn.status, turn.reason) == ("interrupted", "abandoned")
    assert turn.finished_at is not None
    assert _turn("busy").status == "running"
    session = models.Session.objects.get(pk="shared")
    assert session.protocol_issue_count == 1  # the silent turn's call, never answered


def test_spans_arriving_again_make_an_abandoned_turn_running(poster: OtlpPoster) -> None:
    late = OpenTurn("late")
    assert poster.post(late.batch()).status_code == 200
    _lapse_lease("shared/late")
    assert poster.post(OpenTurn("other").batch()).status_code == 200
    assert _turn("late").status == "interrupted"
    late.tool_answers()
    assert poster.post(late.batch()).status_code == 200
    turn = _turn("late")
    assert (turn.status, turn.reason, turn.finished_at) == ("running", "", None)
    assert turn.lease_until is not None and turn.lease_until > timezone.now()
    late.root.end()
    assert poster.post(late.batch()).status_code == 200
    assert _turn("late").status == "completed"
