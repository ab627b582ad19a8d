"""Redaction: no credential of any shape survives, in any field, of any source.

52 shapes (tests/redaction_cases.py: AWS key id and secret with and without quotes and
in env dumps, Authorization headers of every scheme (Bearer, Basic, Token, Digest,
AWS4-HMAC-SHA256), Cookie, prose and assigned passwords/secrets/api keys, env exports,
URL userinfo and query keys, GitHub classic (with a body longer than the pattern) and
fine-grained, GitLab, Slack bot and webhook, Stripe, OpenAI, Anthropic, Google, Hugging
Face, npm and .npmrc, PyPI, SendGrid, Discord, Telegram, Twilio SID and key, Mailchimp,
Artifactory, whole JWTs, RSA and OpenSSH PEM blocks, Azure storage, Square, IBM Cloud
IAM and COS HMAC, SoftLayer, Cloudant, legacy OpenAI, quoted keyword assignments, JSON
in text; together every detector detect-secrets has) are planted in every field of every
import format (texts, reasoning, tool arguments and results, raw records with JSON inside strings
inside JSON, usage, state, paths and file names, session/message/call/event ids, app
names, users, titles, todo items and their audit, tool outcomes) and in runtime events
appended through the Django store. Then the whole database (SQLite: every statement of
`iterdump`; PostgreSQL: every text and JSON column of every table), every page and the
export are searched for each secret and a distinctive piece of its body.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.db import connection
from django.test import Client
from django.urls import reverse
from hypothesis import given, settings
from hypothesis import strategies as st

from agentops.runtime import Content, Event, Role, ToolCall, ToolResponse, Turn, TurnStatus
from agentops.runtime.model import Usage
from agentops.runtime.session import TurnFailure, TurnOutcome, TurnReason
from agentops.runtime.todos import TodoItem
from sessions_app.export.build import build_export
from sessions_app.ingest import detect_format, files, import_file
from sessions_app.ingest.normalise import first_line
from sessions_app.ingest.redaction import (
    ID_MARKER_PREFIX,
    might_hold_secret,
    redact_id,
    redact_text,
    redact_value,
)
from sessions_app.ingest.registry import format_named
from sessions_app.ingest.writer import delete_sessions
from sessions_app.models import Event as EventRow
from sessions_app.models import ImportedFile, Session
from sessions_app.models import Turn as TurnRow
from sessions_app.store import DjangoSessionService
from tests.redaction_cases import ALL_TEXT, FORMATS, SHAPES, Shape, claude_code
from todos_app.services import Actor, replace_todos


def database_text() -> str:
    """Every value of every table: SQLite's `iterdump` (the whole file as SQL), or on
    PostgreSQL every text, varchar and JSON column of every table of the schema."""
    connection.ensure_connection()
    if connection.vendor == "sqlite":
        return "\n".join(connection.connection.iterdump())
    parts: list[str] = []
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT table_name, column_name FROM information_schema.columns "
            "WHERE table_schema = current_schema() AND data_type IN "
            "('text', 'character varying', 'character', 'json', 'jsonb')"
        )
        for table, column in cursor.fetchall():
            cursor.execute(f'SELECT "{column}"::text FROM "{table}"')
            parts.extend(value for (value,) in cursor.fetchall() if value)
    return "\n".join(parts)


def leaks(text: str, shapes: list[Shape] = SHAPES) -> list[tuple[str, str]]:
    """(shape name, fragment) for every secret or body piece found in `text`."""
    return [(s.name, f) for s in shapes for f in s.fragments if f in text]


def ident_of(shape: Shape) -> str:
    """The id part planted for `shape`: its text when an id can hold it."""
    return f"{shape.name}-{shape.id_form}" if shape.id_form else shape.name


# -- the rules on their own --------------------------------------------------------------


def test_there_are_at_least_thirty_shapes_with_distinct_names() -> None:
    assert len({s.name for s in SHAPES}) == len(SHAPES) >= 30


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: s.name)
@pytest.mark.parametrize(
    "context", ["{}", "see {} now", "({})", '"{}"', "'{}'", "`{}`", "<{}>", "{}.", "x\n{}\ny"]
)
def test_each_shape_alone_passes_the_prefilter_and_is_replaced_whole(
    shape: Shape, context: str
) -> None:
    text = context.format(shape.text)
    assert might_hold_secret(text)
    redacted = redact_text(text)
    assert leaks(redacted, [shape]) == []
    assert "[REDACTED:" in redacted
    assert redact_text(redacted) == redacted  # idempotent


def test_every_detect_secrets_detector_meets_one_of_the_shapes() -> None:
    """The shapes cover the whole library (so the prefilter is tested against each)."""
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class

    missed = []
    mapping: dict[str, Any] = get_mapping_from_secret_type_to_class()
    for secret_type, plugin_class in mapping.items():
        if plugin_class.__name__ in ("IPPublicDetector",) or "HighEntropy" in plugin_class.__name__:
            continue
        plugin: Any = plugin_class()
        if not any(list(plugin.analyze_string(shape.text)) for shape in SHAPES):
            missed.append(secret_type)
    assert missed == [], missed


@pytest.mark.parametrize("shape", [s for s in SHAPES if s.id_form], ids=lambda s: s.name)
def test_an_id_keeps_a_stable_url_safe_marker(shape: Shape) -> None:
    ident = f"sess-{shape.id_form}.7"
    redacted = redact_id(ident)
    assert leaks(redacted, [shape]) == []
    assert ID_MARKER_PREFIX in redacted and redacted.startswith("sess-")
    assert not {"[", "]", "/"} & (set(redacted) - set(ident))  # nothing a URL must escape
    assert redact_id(ident) == redacted  # stable: the same id always maps the same way


def test_a_github_token_longer_than_the_pattern_leaves_no_tail() -> None:
    shape = next(s for s in SHAPES if s.name == "github_classic")
    assert redact_text(f"token {shape.text} end") == "token [REDACTED:github_token] end"


def test_a_jwt_loses_all_three_segments() -> None:
    shape = next(s for s in SHAPES if s.name == "jwt")
    assert redact_text(f"jwt {shape.text} end") == "jwt [REDACTED:json_web_token] end"


def test_a_secret_in_json_in_a_string_in_json_is_redacted_recursively() -> None:
    shape = next(s for s in SHAPES if s.name == "stripe")
    inner = json.dumps({"log": json.dumps({"env": {"value": shape.text}})})
    redacted = redact_value({"raw": {"output": inner}})
    assert leaks(json.dumps(redacted), [shape]) == []
    assert json.loads(json.loads(redacted["raw"]["output"])["log"])["env"]["value"] == (
        "[REDACTED:stripe_access_key]"
    )


@pytest.mark.parametrize(
    "text",
    [
        "const token = crypto.randomBytes(32).toString('hex')",
        "def login(password: str) -> None:",
        "token = self.token",
        "params: { _csrf_token: csrfToken },",
        "login(password=password)",
        "self.api_key = api_key",
        "Wrong password: the form again",
        "password = os.environ['DB_PASSWORD']",
        "Enter your password and click Save",
        "the password is correct",
        "input_tokens: 1234567",
        "Bearer tokens expire after an hour",
        "see https://example.com/docs?page=2",
        "commit 1c2844a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6",
    ],
)
def test_ordinary_code_and_prose_are_kept(text: str) -> None:
    assert redact_text(text) == text


_AROUND = st.text(alphabet="ghijklmnopqrstuvwxyz GHIJKLMNOPQRSTUVWXYZ.,;()", max_size=120)


@settings(max_examples=300, deadline=None)
@given(
    shape=st.sampled_from(SHAPES),
    before=_AROUND,
    after=_AROUND,
    gap=st.sampled_from([" ", "\t", " (", ": ", ", "]),
)
def test_a_secret_at_any_offset_is_never_partly_visible(
    shape: Shape, before: str, after: str, gap: str
) -> None:
    """Anywhere in a text, and in a title cut at 80 characters (the cut may fall inside
    the secret): no 8 characters of the secret are left."""
    line = before + gap + shape.text + " " + after
    for shown in (redact_text(line), first_line(line), redact_id(line)):
        for secret in shape.secrets:
            pieces = {secret[i : i + 8] for i in range(len(secret) - 7)}
            assert not any(piece in shown for piece in pieces), (shape.name, shown)


# -- every import format ------------------------------------------------------------------


def _export_file(text: str, ident: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An agentops export holding `text` in every field: a Claude Code session imported
    and exported with redaction switched off, then deleted, plus the header, audit and
    tool outcome fields an export alone carries."""
    from sessions_app.export import build

    name, content = claude_code(text, ident)
    source = tmp_path / "plain" / name
    source.parent.mkdir(exist_ok=True)
    source.write_text(content)
    with monkeypatch.context() as unsafe:
        unsafe.setattr(files, "redact_parse_result", lambda result, text: None)
        unsafe.setattr(build, "redact_value", lambda value: value)
        report = import_file(source)
        session = Session.objects.get(pk=report.session_ids[0])
        doc: dict[str, Any] = build_export(session)
    delete_sessions(report.session_ids)
    ImportedFile.objects.all().delete()
    at = datetime(2026, 1, 1, tzinfo=UTC).isoformat()
    doc["session"].update(
        app_name=f"app-{ident}",
        user_id=f"user-{ident}",
        title=("Deploy: " + text)[:500],
        state={"note": text, "nested": json.dumps({"k": text})},
        source_path=f"/imports/{text}",
    )
    assert doc["todo_list"] is not None
    doc["todo_list"]["changes"] = [
        {"version": 1, "actor": "agent", "user": None, "turn_id": doc["turns"][0]["id"],
         "event_id": None, "action": "todos_update", "before": [],
         "after": [{"content": text, "status": "pending", "active_form": text}],
         "created_at": at},
    ]  # fmt: skip
    caller = next(e for e in doc["events"] if e["tool_calls"])
    doc["tool_outcomes"] = [
        {"event_id": caller["id"], "call_id": caller["tool_calls"][0]["id"],
         "tool_name": "Bash", "outcome": "ran", "result": {"stdout": text},
         "reason": text, "recorded_by": None, "recorded_at": at},
    ]  # fmt: skip
    path = tmp_path / f"export-{ident}.json"
    path.write_text(json.dumps(doc))
    return path


def _import(fmt: str, text: str, ident: str, tmp_path: Path, mp: pytest.MonkeyPatch) -> str:
    """Import one transcript in `fmt` with `text` in every field; its session id."""
    if fmt == "agentops_export":
        path = _export_file(text, ident, tmp_path, mp)
    else:
        name, content = FORMATS[fmt](text, ident)
        path = tmp_path / name
        path.write_text(content)
    assert text in path.read_text() or json.dumps(text)[1:-1] in path.read_text()
    report = import_file(path)
    assert report.status == "imported" and not report.problems, (ident, report)
    assert len(report.session_ids) == 1
    return report.session_ids[0]


def _pages(client: Client, session_id: str) -> list[str]:
    """Every page and fragment of one session, and the export."""
    urls = [
        reverse(f"sessions:{name}", args=[session_id])
        for name in ("detail", "turns", "context", "protocol", "export")
    ]
    urls += [reverse(f"todos:{name}", args=[session_id]) for name in ("page", "panel")]
    urls += [
        reverse("sessions:turn_events", args=[session_id, turn_id])
        for turn_id in TurnRow.objects.filter(session_id=session_id).values_list("id", flat=True)
    ]
    urls += [
        reverse("sessions:event_raw", args=[session_id, event_id])
        for event_id in EventRow.objects.filter(session_id=session_id).values_list("id", flat=True)
    ]
    bodies = []
    for url in urls:
        response = client.get(url)
        assert response.status_code == 200, url
        bodies.append(response.getvalue().decode())
    return bodies


@pytest.mark.django_db
@pytest.mark.parametrize("fmt", [*FORMATS, "agentops_export"])
def test_no_shape_survives_any_field_of_an_import(
    fmt: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, admin_client: Client
) -> None:
    # One session per shape (its ids, title, app name, user, path hold that shape), and
    # one holding every shape at once in its text fields, whose every page is checked.
    ids = [_import(fmt, s.text, ident_of(s), tmp_path, monkeypatch) for s in SHAPES]
    every = _import(fmt, ALL_TEXT, "every-shape", tmp_path, monkeypatch)
    assert len(set(ids)) == len(SHAPES)
    dump = database_text()
    # The dump holds the rows (SQL doubles a quote inside a string).
    assert all(sid in dump or sid.replace("'", "''") in dump for sid in ids)
    assert dump.count("[REDACTED:") > 10 * len(SHAPES)
    assert leaks(dump) == []
    # Titles are redacted before the 80-character cut (the secret straddles it).
    for title in Session.objects.filter(pk__in=ids).values_list("title", flat=True):
        assert title.startswith(("Please deploy", "Deploy: "))
        assert len(title) <= 80 or fmt == "agentops_export"
    shown = [admin_client.get(reverse("sessions:list")).content.decode()]
    shown.append(admin_client.get(reverse("turn_queue")).content.decode())
    for session_id in ids:
        shown.append(json.dumps(build_export(Session.objects.get(pk=session_id))))
        # Pages show what the database holds: each shape's header (id, title, app, user,
        # path; `<title>` too) on the formats that carry all of them, every page of the
        # session holding every shape on all formats.
        if fmt in ("google_adk", "agentops_export"):
            page = admin_client.get(reverse("sessions:detail", args=[session_id]))
            shown.append(page.content.decode())
    shown.extend(_pages(admin_client, every))
    assert leaks("\n".join(shown)) == []


@pytest.mark.django_db
def test_the_planting_reaches_every_field(tmp_path: Path) -> None:
    """The test above can fail: without redaction, each kind of field holds the secret."""
    shape = next(s for s in SHAPES if s.name == "github_classic")
    secret = shape.secrets[0]
    for fmt, build in FORMATS.items():
        name, content = build(shape.text, ident_of(shape))
        path = tmp_path / name
        path.write_text(content)
        parser = format_named(str(detect_format(path, content)))
        assert parser is not None
        parsed = parser.parse(path, content).sessions[0]
        assert secret in parsed.id or fmt in ("openai_chat", "swe_agent", "run_state")
        assert secret in str(path)
        for event_field in ("text", "tool_calls", "tool_response", "raw"):
            assert any(secret in json.dumps(getattr(e, event_field)) for e in parsed.events), (
                fmt,
                event_field,
            )
        if fmt in ("claude_code", "codex_cli"):
            assert any(secret in json.dumps(e.usage) for e in parsed.events), fmt
            assert parsed.todos and secret in parsed.todos[0].content, fmt
        if fmt == "google_adk":
            assert secret in parsed.app_name and secret in parsed.user_id
            assert secret in json.dumps(parsed.state)


# -- runtime events through the Django store ----------------------------------------------


def _run_a_turn_full_of_secrets(service: DjangoSessionService, session_id: str) -> None:
    """Events, state, todos and a failure, each holding every shape, written by the
    runtime's store (and a person's todo edit through todos_app.services)."""
    text = ALL_TEXT
    run = async_to_sync
    run(service.create_session)("app", "u1", session_id=session_id, state={"note": text})
    turn_id = f"{session_id}/t1"
    now = datetime.now(UTC)
    run(service.begin_turn)(
        session_id,
        Turn(id=turn_id, session_id=session_id, status=TurnStatus.RUNNING, started_at=now),
    )

    def event(content: Content, **extra: Any) -> Event:
        return Event(session_id=session_id, turn_id=turn_id, content=content, **extra)

    run(service.append_event)(event(Content(role=Role.USER, text=text), author="user"))
    run(service.append_event)(
        event(
            Content(
                role=Role.ASSISTANT,
                text=text,
                reasoning=text,
                tool_calls=(ToolCall(id="c1", name="run", arguments={"cmd": text, "k": text}),),
            ),
            author="bot",
            usage=Usage(prompt_tokens=1, details={"note": text}),
            state_delta={"seen": text, "todos": [{"content": text, "status": "pending"}]},
        )
    )
    run(service.append_event)(
        event(
            Content(
                role=Role.TOOL,
                tool_response=ToolResponse(
                    tool_call_id="c1", name="run", result={"out": json.dumps({"log": text})}
                ),
            ),
            author="tool",
        )
    )
    run(service.finalize_turn)(
        turn_id,
        TurnOutcome(
            status=TurnStatus.FAILED,
            reason=TurnReason.AGENT_ERROR,
            failure=TurnFailure(code="agent_error", message=text, stage="agent"),
        ),
    )
    replace_todos(
        session_id,
        [TodoItem(content=text, active_form=text)],
        actor=Actor.agent(turn_id=turn_id),
        action="edit",
    )


@pytest.mark.django_db
def test_runtime_events_are_stored_and_shown_redacted(admin_client: Client) -> None:
    service = DjangoSessionService()
    _run_a_turn_full_of_secrets(service, "runtime-secrets")
    dump = database_text()
    assert "runtime-secrets" in dump and dump.count("[REDACTED:") > 5 * len(SHAPES)
    assert leaks(dump) == []
    events = async_to_sync(service.list_events)("runtime-secrets")
    assert len(events) == 3 and leaks(json.dumps([e.model_dump(mode="json") for e in events])) == []
    shown = [admin_client.get(reverse("sessions:list")).content.decode()]
    shown.append(admin_client.get(reverse("turn_queue")).content.decode())
    shown.extend(_pages(admin_client, "runtime-secrets"))
    assert leaks("\n".join(shown)) == []


@pytest.mark.django_db
def test_runtime_redaction_can_be_switched_off(settings: Any) -> None:
    settings.AGENTOPS_REDACT_RUNTIME_EVENTS = False
    _run_a_turn_full_of_secrets(DjangoSessionService(), "runtime-plain")
    names = {name for name, _fragment in leaks(database_text())}
    # Stored as given (todo items are redacted by todos_app whatever the setting).
    assert names == {s.name for s in SHAPES}


@pytest.mark.django_db
def test_a_recorded_tool_outcome_is_stored_redacted(admin_user: Any) -> None:
    """A person's words on the protocol page go through the same pipeline."""
    from sessions_app.outcomes import record_tool_outcome
    from tests.factories import add_unanswered_call, make_session

    session = make_session("outcome-secrets")
    call = add_unanswered_call(session.turns.get())
    record_tool_outcome(
        session,
        event_id=call.id,
        call_id="call-1",
        outcome="ran",
        result={"stdout": ALL_TEXT},
        reason=ALL_TEXT,
        user=admin_user,
    )
    dump = database_text()
    assert "outcome-secrets" in dump and leaks(dump) == []


def test_numbers_under_password_names_go_counts_stay() -> None:
    value = {"password": 123456, "db": {"pin_password": 4321}, "max_token": 4096, "n": 3}
    assert redact_value(value) == {
        "password": "[REDACTED:password]",
        "db": {"pin_password": "[REDACTED:password]"},
        "max_token": 4096,
        "n": 3,
    }


def test_the_key_name_cache_stays_bounded_whatever_names_arrive() -> None:
    """Attribute and field names come from what exporters and files send: any number of
    distinct names must not grow the process's memory without bound."""
    from sessions_app.ingest.redaction.rules import key_kind

    for number in range(20_000):
        key_kind(f"exporter_field_{number}")
    info = key_kind.cache_info()
    assert info.maxsize is not None and info.currsize <= info.maxsize
    assert key_kind("secretAccessKey") == "aws_secret_access_key"
