"""Session export (`agentops.session-export/1`): schema, download, command, round trip."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from django.core.management import call_command
from django.forms.models import model_to_dict
from django.urls import reverse
from django.utils import timezone

from sessions_app.export import build_export
from sessions_app.ingest import import_file
from sessions_app.models import Event, Session, ToolOutcome, Turn
from sessions_app.store import refresh_resume_status
from tests.claude_lines import SID, Lines, project_folder
from tests.conftest import CORPUS
from todos_app.models import TodoChange, TodoList

pytestmark = pytest.mark.django_db

SCHEMA = json.loads(
    (Path(__file__).resolve().parents[1] / "docs" / "session-export.schema.json").read_text()
)
CORPUS_FILES = sorted(p for p in CORPUS.rglob("*") if p.suffix in (".json", ".jsonl"))


def validate(document: dict[str, Any]) -> None:
    jsonschema.validate(document, SCHEMA, format_checker=jsonschema.FormatChecker())


def snapshot(session_id: str) -> dict[str, Any]:
    """Every stored fact of a session, ids of events replaced by their position."""
    session = model_to_dict(Session.objects.get(pk=session_id))
    events = list(Event.objects.filter(session_id=session_id).order_by("id"))
    position = {e.id: n for n, e in enumerate(events)}
    todo = TodoList.objects.filter(session_id=session_id).first()
    return {
        # The context page's kept states are a cache of this database, not a fact.
        "session": {
            k: v for k, v in session.items() if k not in ("source_path", "context_checkpoint")
        },
        "turns": [model_to_dict(t) for t in Turn.objects.filter(session_id=session_id)],
        "events": [{k: v for k, v in model_to_dict(e).items() if k != "id"} for e in events],
        "todo": None
        if todo is None
        else {
            "version": todo.version,
            "updated_at": todo.updated_at,
            "items": [i.as_state() | {"pos": i.position} for i in todo.items.all()],
            "changes": [
                {
                    **{k: v for k, v in model_to_dict(c).items() if k not in ("id", "todo_list")},
                    "event_id": position.get(c.event_id or 0, c.event_id),
                }
                for c in TodoChange.objects.filter(todo_list=todo).order_by("id")
            ],
        },
        "outcomes": [
            {
                **{k: v for k, v in model_to_dict(o).items() if k not in ("id", "event")},
                "event": position[o.event_id],
            }
            for o in ToolOutcome.objects.filter(session_id=session_id).order_by("id")
        ],
    }


def _enrich(session_id: str, user: Any) -> None:
    """Give a session what imports lack: soft-deleted/archived events, audit, an outcome."""
    events = list(Event.objects.filter(session_id=session_id).order_by("id"))
    now = timezone.now()
    Event.objects.filter(pk=events[0].pk).update(deleted_at=now, updated_at=now)
    Event.objects.filter(pk=events[-1].pk).update(archived_at=now + timedelta(seconds=1))
    todo, _ = TodoList.objects.get_or_create(
        session_id=session_id, defaults={"version": 0, "updated_at": now}
    )
    TodoChange.objects.create(
        todo_list=todo,
        version=todo.version + 1,
        actor="person",
        user=user,
        event_id=events[-1 if len(events) < 2 else 1].pk,
        turn_id=events[-1 if len(events) < 2 else 1].turn_id,
        action="edit",
        before=[],
        after=[{"content": "x", "status": "pending"}],
        created_at=now,
    )
    ToolOutcome.objects.create(
        session_id=session_id,
        event=events[-1 if len(events) < 2 else 1],
        call_id="call-x",
        tool_name="Bash",
        outcome="ran",
        result={"ok": True},
        reason="checked the server",
        recorded_by=user,
        recorded_at=now,
    )
    refresh_resume_status(session_id)


@pytest.mark.parametrize("source", CORPUS_FILES, ids=lambda p: p.name[:40])
def test_every_corpus_session_survives_export_delete_reimport(
    source: Path, tmp_path: Path, admin_user: Any
) -> None:
    report = import_file(source)
    assert report.session_ids
    for session_id in report.session_ids:
        _enrich(session_id, admin_user)
        before = snapshot(session_id)
        document = build_export(Session.objects.get(pk=session_id))
        validate(document)
        target = tmp_path / "export.json"
        target.write_text(json.dumps(document))
        Session.objects.filter(pk=session_id).delete()
        again = import_file(target)
        assert again.status == "imported" and again.source_format == "agentops_export"
        assert snapshot(session_id) == before
        restored = Session.objects.get(pk=session_id)
        assert restored.source_path == document["session"]["source_path"]


@pytest.mark.parametrize("order", [(0, 1, 2, 3), (3, 2, 1, 0)])
def test_sub_agent_links_and_orphan_counts_survive_export_delete_reimport(
    tmp_path: Path, order: tuple[int, ...]
) -> None:
    for path in project_folder(tmp_path / "project"):
        import_file(path)
    orphan = Lines(session_id="s-orphan")
    orphan.prompt("go")
    orphan.use("msg_1", "A")
    orphan.result("A")
    orphan.result("ghost")  # answers no call
    import_file(orphan.write(tmp_path / "orphan.jsonl"))
    ids = [SID, f"{SID}.agent-a1", f"{SID}.agent-acompact-x", "s-orphan"]
    heads = {sid: build_export(Session.objects.get(pk=sid))["session"] for sid in ids}
    assert [(heads[sid]["parent_session_id"], heads[sid]["parent_call_id"]) for sid in ids] == [
        ("", ""),
        (SID, "task-1"),
        (SID, ""),
        ("", ""),
    ]
    assert [heads[sid]["orphan_result_count"] for sid in ids] == [0, 0, 0, 1]
    before = {sid: snapshot(sid) for sid in ids}
    exports = []
    for n, sid in enumerate(ids):
        document = build_export(Session.objects.get(pk=sid))
        validate(document)
        exports.append(tmp_path / f"export-{n}.json")
        exports[-1].write_text(json.dumps(document))
    Session.objects.all().delete()
    for n in order:
        assert import_file(exports[n]).status == "imported"
    assert {sid: snapshot(sid) for sid in ids} == before


def test_an_export_without_sub_agent_links_imports_as_no_sub_agent(tmp_path: Path) -> None:
    # Exports written before the links and the orphan count were part of the format.
    for path in project_folder(tmp_path / "project"):
        import_file(path)
    sid = f"{SID}.agent-a1"
    document = build_export(Session.objects.get(pk=sid))
    for key in ("parent_session_id", "parent_call_id", "orphan_result_count"):
        del document["session"][key]
    validate(document)
    target = tmp_path / "old.json"
    target.write_text(json.dumps(document))
    Session.objects.filter(pk=sid).delete()
    assert import_file(target).status == "imported"
    restored = Session.objects.get(pk=sid)
    assert (restored.parent_session_id, restored.parent_call_id) == ("", "")


def test_export_keeps_soft_deleted_and_archived_events(corpus: Path, admin_user: Any) -> None:
    report = import_file(corpus / "claude-code/spotter__tool_heavy.jsonl")
    session_id = report.session_ids[0]
    _enrich(session_id, admin_user)
    document = build_export(Session.objects.get(pk=session_id))
    assert len(document["events"]) == Event.objects.filter(session_id=session_id).count()
    assert document["events"][0]["deleted_at"] is not None
    assert document["events"][-1]["archived_at"] is not None
    assert document["todo_list"]["changes"][0]["user"] == admin_user.username
    assert document["tool_outcomes"][0]["recorded_by"] == admin_user.username


def test_export_keeps_redactions_and_redacts_runtime_sessions(tmp_path: Path) -> None:
    now = timezone.now()
    session = Session.objects.create(
        id="rt", app_name="app", state={"api_key": "k-123456"}, created_at=now, updated_at=now
    )
    Event.objects.create(
        session=session,
        role="user",
        text="my key is AKIAIOSFODNN7EXAMPLE",
        tool_calls=[],
        created_at=now,
        updated_at=now,
    )
    document = build_export(session)
    validate(document)
    text = json.dumps(document)
    assert "AKIAIOSFODNN7EXAMPLE" not in text and "k-123456" not in text
    assert document["session"]["state"] == {"api_key": "[REDACTED:api_key]"}
    # A re-import keeps the markers as they are.
    target = tmp_path / "rt.json"
    target.write_text(text)
    Session.objects.all().delete()
    import_file(target)
    assert Session.objects.get(pk="rt").state == {"api_key": "[REDACTED:api_key]"}
    assert "[REDACTED:" in Event.objects.get(session_id="rt").text


def test_export_link_downloads_an_attachment(corpus: Path, operator_client: Any) -> None:
    session_id = import_file(corpus / "google-adk/adk-samples__customer-service__123.session.json")
    sid = session_id.session_ids[0]
    page = operator_client.get(reverse("sessions:detail", args=[sid]))
    url = reverse("sessions:export", args=[sid])
    assert f'href="{url}"' in page.content.decode() and "Export JSON" in page.content.decode()
    response = operator_client.get(url)
    assert response.status_code == 200
    assert response["Content-Disposition"].startswith("attachment; filename=")
    validate(json.loads(b"".join(response.streaming_content)))


def test_export_is_404_for_outsiders_and_missing_sessions(
    corpus: Path, outsider_client: Any
) -> None:
    sid = import_file(corpus / "google-adk/adk-samples__customer-service__123.session.json")
    url = reverse("sessions:export", args=[sid.session_ids[0]])
    assert outsider_client.get(url).status_code == 404


def test_missing_session_export_is_404(admin_client: Any) -> None:
    assert admin_client.get(reverse("sessions:export", args=["nope"])).status_code == 404


def test_export_query_count_does_not_grow_with_events(
    corpus: Path, admin_client: Any, django_assert_num_queries: Any
) -> None:
    sid = import_file(corpus / "codex-cli/agentcmd__rollout-2025-09-25T15-12-14-019982b8.jsonl")
    url = reverse("sessions:export", args=[sid.session_ids[0]])
    admin_client.get(url)  # warm caches (groups, permissions)
    with django_assert_num_queries(9, exact=False):
        b"".join(admin_client.get(url).streaming_content)


def test_export_session_command_writes_a_file_import_sessions_reads(
    corpus: Path, tmp_path: Path
) -> None:
    sid = import_file(corpus / "claude-code/agentcmd__full-session-three.jsonl").session_ids[0]
    out = tmp_path / "s.json"
    call_command("export_session", sid, "-o", str(out))
    validate(json.loads(out.read_text()))
    before = snapshot(sid)
    Session.objects.all().delete()
    call_command("import_sessions", str(out), "--no-progress")
    assert snapshot(sid) == before
