"""Corpus transcripts with unanswered tool calls, seen through the protocol and context
pages: the protocol page lists exactly those calls; the context page shows the cut and
the notice for an interrupted/failed turn, the unknown-execution error for a completed one.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.test import Client
from django.urls import reverse

from sessions_app.ingest import import_file
from sessions_app.models import Session

pytestmark = pytest.mark.django_db

CALL_ID = re.compile(r'<td class="mono small" data-label="Call id">([^<]+)</td>')


def _import(corpus: Path, relative: str) -> Session:
    report = import_file(corpus / relative)
    assert report.status == "imported"
    return Session.objects.get(source_path__endswith=relative)


def _protocol_calls(client: Client, session: Session) -> list[str]:
    body = client.get(reverse("sessions:protocol", args=[session.id])).content.decode()
    return CALL_ID.findall(body)


def _context(client: Client, session: Session) -> str:
    return client.get(reverse("sessions:context", args=[session.id])).content.decode()


def test_claude_session_cut_off_mid_tool_is_cut_with_an_abandoned_notice(
    corpus: Path, operator_client: Client
) -> None:
    session = _import(corpus, "claude-code/agentcmd__full-session-three.jsonl")
    assert _protocol_calls(operator_client, session) == [
        "toolu_019KCj6ze6s4xPHdfY6s1FC5",
        "toolu_011df4X9k8WZCHh9sXKVzGHZ",
        "toolu_01XSaf9HkXmiWhn7q2mekBiR",
    ]
    body = _context(operator_client, session)
    assert "Projection fails" not in body
    assert body.count("badge kind-notice") == 1
    assert "ended with status interrupted (abandoned)" in body
    assert "badge kind-cut" in body
    session.refresh_from_db()
    assert (session.protocol_issue_count > 0, session.cannot_resume) == (True, False)


def test_edge_cases_completed_turn_with_dangling_call_fails_closed(
    corpus: Path, operator_client: Client
) -> None:
    session = _import(corpus, "claude-code/claude-code-log__edge_cases.jsonl")
    # tool_edge_002 in a completed turn; the TodoWrite call in the abandoned last turn.
    assert _protocol_calls(operator_client, session) == ["tool_edge_002", "toolu_todowrite_002"]
    body = _context(operator_client, session)
    assert "The next turn would be refused: unknown whether tools ran" in body
    assert "tool_edge_002" in body and "edge_cases/turn-0002" in body
    session.refresh_from_db()
    assert session.cannot_resume is True


def test_pending_approval_is_listed_as_pending_and_cut_with_a_notice(
    corpus: Path, operator_client: Client
) -> None:
    session = _import(
        corpus, "openai-agents-sdk/run_state__resume__v1_13_pending_tool_approval.json"
    )
    body = operator_client.get(reverse("sessions:protocol", args=[session.id])).content.decode()
    assert len(CALL_ID.findall(body)) == 1
    assert "awaiting the user" in body and "no result</span>" not in body
    context = _context(operator_client, session)
    assert "ended with status interrupted (consumer_stopped)" in context
    assert "Projection fails" not in context


@pytest.mark.parametrize(
    "relative",
    [
        "claude-code/spotter__tool_heavy.jsonl",
        "codex-cli/agentcmd__rollout-2025-09-25T15-12-14-019982b8.jsonl",
        "google-adk/adk-samples__customer-service__123.session.json",
        "google-adk/adk-samples__personalized-shopping__text_search_floral_dress.session.json",
        "openai-chat-swe-agent/swe-agent__6e44b9__sweagenttestrepo-1c2844.traj.json",
    ],
)
def test_transcripts_without_unanswered_calls_are_clean(
    corpus: Path, operator_client: Client, relative: str
) -> None:
    session = _import(corpus, relative)
    assert _protocol_calls(operator_client, session) == []
    assert "Projection fails" not in _context(operator_client, session)


def test_every_corpus_session_renders_every_page(corpus: Path, operator_client: Client) -> None:
    for path in sorted(corpus.rglob("*.json*")):
        import_file(path)
    for session in Session.objects.all():
        for name in ("sessions:detail", "sessions:context", "sessions:protocol"):
            assert operator_client.get(reverse(name, args=[session.id])).status_code == 200
        for turn in session.turns.all():
            url = reverse("sessions:turn_events", args=[session.id, turn.id])
            assert operator_client.get(url).status_code == 200
    assert operator_client.get(reverse("sessions:list")).status_code == 200
