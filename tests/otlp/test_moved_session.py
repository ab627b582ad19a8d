"""The session a trace had of its own (``otlp-<trace id>``) until its root named the
conversation: its page redirects to the session the trace moved into, so a watcher of
the running turn who reloads follows it; for anyone without a role, and for ids of no
moved trace, it is still 404. The watchers of that session are told to resume from the
database when the trace leaves it (so their page, finding it gone, reloads)."""

from __future__ import annotations

import pytest
from asgiref.sync import async_to_sync
from django.contrib.auth.models import User
from django.test import Client
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from sessions_app import models
from sessions_app.api.keys import create_key
from sessions_app.live.payloads import RESYNC
from sessions_app.otlp.writer import receive
from tests.otlp.agent_spans import ok_turn, protobuf_body, provider
from tests.otlp.conftest import OtlpPoster
from tests.otlp.test_broadcast import Sent, _records


def _moved_trace(poster: OtlpPoster) -> str:
    exporter = InMemorySpanExporter()
    ok_turn(provider(exporter).get_tracer("tests.otlp.moved"), conversation="conv-moved")
    spans = list(exporter.get_finished_spans())
    children, root = spans[:-1], spans[-1]
    assert root.parent is None
    assert poster.post(protobuf_body(children)).status_code == 200
    own = f"otlp-{root.context.trace_id:032x}"
    assert models.Session.objects.filter(pk=own).exists()  # no span named the conversation
    assert poster.post(protobuf_body([root])).status_code == 200
    assert not models.Session.objects.filter(pk=own).exists()
    return own


def test_a_moved_traces_own_session_redirects_to_its_conversation(
    poster: OtlpPoster, operator_client: Client
) -> None:
    own = _moved_trace(poster)
    response = operator_client.get(f"/sessions/{own}/")
    assert response.status_code == 302
    assert response["Location"] == "/sessions/conv-moved/"
    assert operator_client.get(response["Location"]).status_code == 200
    assert operator_client.get(f"/sessions/otlp-{'0' * 32}/").status_code == 404


def test_no_redirect_without_a_role(poster: OtlpPoster, client: Client) -> None:
    own = _moved_trace(poster)
    client.force_login(User.objects.create_user("no-role"))
    assert client.get(f"/sessions/{own}/").status_code == 404


@pytest.mark.django_db
def test_watchers_of_the_session_a_trace_left_resume(monkeypatch: pytest.MonkeyPatch) -> None:
    key = create_key("moved-watchers").row
    sent = Sent(monkeypatch)
    exporter = InMemorySpanExporter()
    ok_turn(provider(exporter).get_tracer("tests.otlp.moved"), conversation="conv-left")
    spans = list(exporter.get_finished_spans())
    children, root = spans[:-1], spans[-1]
    own = f"otlp-{root.context.trace_id:032x}"
    async_to_sync(receive)(_records(children), key)
    assert RESYNC not in [m["type"] for m in sent.take()[own]]
    async_to_sync(receive)(_records([root]), key)
    after = sent.take()
    # Told to resume from the database: they reconnect, find the session gone (4404) and
    # the page reloads into the session the trace moved to.
    assert [m["type"] for m in after[own]] == [RESYNC]
    assert "conv-left" in after
