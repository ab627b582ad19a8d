"""Files an import refuses whole (nothing written), and what a changed file replaces.

Found by a first-user walkthrough: a session id with "/" made /sessions/ fail; an import
silently replaced a session the runtime had recorded; deep JSON crashed the command; a
changed file with a new session id left the old session behind; one byte that is not
UTF-8 refused a whole file.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client
from django.urls import reverse

from sessions_app.ingest import ImportRefusedError, import_file, session_id_problem
from sessions_app.models import Event, Session
from tests.factories import make_session

pytestmark = pytest.mark.django_db


def _claude(path: Path, session_id: str, prompt: str = "hello") -> Path:
    lines = [
        {
            "type": "user",
            "uuid": "u1",
            "sessionId": session_id,
            "timestamp": "2025-05-01T10:00:00Z",
            "message": {"role": "user", "content": prompt},
        },
        {
            "type": "assistant",
            "uuid": "u2",
            "sessionId": session_id,
            "timestamp": "2025-05-01T10:00:01Z",
            "message": {
                "id": "m1",
                "role": "assistant",
                "content": [{"type": "text", "text": "hi"}],
            },
        },
    ]
    text = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("session_id", "reason"),
    [
        ("zz1/slash", "contains '/'"),
        ("..", "is not allowed"),
        ("tab\there", "contains '\\t'"),
        ("x" * 300, "300 characters long"),
    ],
)
def test_a_session_id_a_url_cannot_carry_refuses_the_file(
    tmp_path: Path, admin_client: Client, session_id: str, reason: str
) -> None:
    path = _claude(tmp_path / "s.jsonl", session_id)
    with pytest.raises(ImportRefusedError) as excinfo:
        import_file(path)
    assert reason in str(excinfo.value)
    assert Session.objects.count() == 0
    assert admin_client.get(reverse("sessions:list")).status_code == 200


def test_ids_with_spaces_and_url_characters_import_and_link(
    tmp_path: Path, admin_client: Client
) -> None:
    session_id = "weird id <x>?#%"
    assert session_id_problem(session_id) is None
    import_file(_claude(tmp_path / "s.jsonl", session_id))
    listing = admin_client.get(reverse("sessions:list"))
    assert listing.status_code == 200
    url = reverse("sessions:detail", args=[session_id])
    assert url.encode() in listing.content
    assert admin_client.get(url).status_code == 200


def test_deep_json_is_refused_by_name_and_skipped_in_a_directory(tmp_path: Path) -> None:
    deep = tmp_path / "dir" / "deep.json"
    deep.parent.mkdir()
    deep.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(CommandError) as excinfo:
        call_command("import_sessions", str(deep), "--no-progress")
    assert excinfo.value.returncode == 2
    assert "nested too deeply" in str(excinfo.value)
    with pytest.raises(ImportRefusedError):
        import_file(deep, "openai_chat")
    # In a directory walk it is reported as refused and the other files still land.
    _claude(tmp_path / "dir" / "ok.jsonl", "ok-session")
    with pytest.raises(CommandError, match=r"1 file\(s\) refused"):
        call_command("import_sessions", str(deep.parent), "--no-progress")
    assert Session.objects.filter(pk="ok-session").exists()


def test_a_session_from_another_source_is_not_replaced_without_replace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    make_session("taken", turns=2)
    Session.objects.filter(pk="taken").update(source_format="runtime", source_path="")
    path = _claude(tmp_path / "clash.jsonl", "taken")
    with pytest.raises(CommandError) as excinfo:
        call_command("import_sessions", str(path), "--no-progress")
    assert "1 file(s) refused" in str(excinfo.value)
    err = capsys.readouterr().err
    assert "session 'taken' already exists (agentops runtime)" in err and "--replace" in err
    assert Session.objects.get(pk="taken").source_format == "runtime"
    assert Event.objects.filter(session_id="taken").count() == 4

    call_command("import_sessions", str(path), "--no-progress", "--replace")
    replaced = Session.objects.get(pk="taken")
    assert (replaced.source_format, replaced.source_path) == ("claude_code", str(path))
    assert Event.objects.filter(session_id="taken").count() == 2


def test_another_file_with_the_same_session_id_is_refused(tmp_path: Path) -> None:
    import_file(_claude(tmp_path / "a.jsonl", "same-id", "from a"))
    with pytest.raises(
        ImportRefusedError, match=r"already exists \(Claude Code JSONL, .*a\.jsonl\)"
    ):
        import_file(_claude(tmp_path / "b.jsonl", "same-id", "from b"))
    assert Event.objects.filter(session_id="same-id", text="from a").exists()


def test_a_changed_file_with_a_new_session_id_replaces_the_old_session_with_replace(
    tmp_path: Path,
) -> None:
    path = tmp_path / "s.jsonl"
    import_file(_claude(path, "first-id"))
    # The new version no longer holds first-id: importing it would delete that history.
    with pytest.raises(ImportRefusedError, match=r"no longer holds session\(s\) first-id"):
        import_file(_claude(path, "second-id"))
    assert list(Session.objects.values_list("id", flat=True)) == ["first-id"]
    report = import_file(path, replace=True)
    assert report.replaced == ["first-id"]
    assert list(Session.objects.values_list("id", flat=True)) == ["second-id"]


def test_bytes_that_are_not_utf8_do_not_refuse_the_file(tmp_path: Path) -> None:
    path = _claude(tmp_path / "s.jsonl", "bytes", prompt="caf\u00e9")
    path.write_bytes(path.read_bytes().replace("caf\u00e9".encode(), b"caf\xff"))
    call_command("import_sessions", str(path), "--no-progress")
    assert Event.objects.get(session_id="bytes", role="user").text == "caf\ufffd"


def test_nul_characters_are_stored_as_replacement_characters(tmp_path: Path) -> None:
    """PostgreSQL text and jsonb cannot hold NUL: the import failed with a DataError."""
    path = _claude(tmp_path / "s.jsonl", "nul-session", prompt="a\u0000b")
    tool_use = '{"type": "tool_use", "id": "c1", "name": "X", "input": {"k\\u0000": "v\\u0000"}}'
    raw = path.read_text().replace('[{"type": "text", "text": "hi"}]', f"[{tool_use}]")
    path.write_text(raw)
    call_command("import_sessions", str(path), "--no-progress")
    user = Event.objects.get(session_id="nul-session", role="user")
    assert user.text == "a\ufffdb"
    call = Event.objects.get(session_id="nul-session", role="assistant")
    assert call.tool_calls[0]["arguments"] == {"k\ufffd": "v\ufffd"}
    assert "\u0000" not in json.dumps(call.raw, ensure_ascii=False)
