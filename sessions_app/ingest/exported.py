"""What an agentops export carries beside its events: the ids its audit rows and recorded
tool outcomes name, mapped to the stored rows, and those outcomes written."""

from __future__ import annotations

from sessions_app.ingest.parsed import ParsedSession
from sessions_app.models import Event, Session, ToolOutcome

__all__ = ["exported_ids", "write_tool_outcomes"]


def exported_ids(parsed: ParsedSession, session: Session) -> tuple[dict[int, int], dict[str, int]]:
    """(exported event id -> stored id, username -> user id) for an agentops export's
    audit rows and tool outcomes.

    Event ids are database-assigned, so the exported ids are mapped by position: the
    n-th stored event of the session is the n-th parsed one.
    """
    from django.contrib.auth import get_user_model

    new_ids = list(
        Event.objects.filter(session_id=session.id).order_by("id").values_list("id", flat=True)
    )
    id_map = {
        e.original_id: new
        for e, new in zip(parsed.events, new_ids, strict=True)
        if e.original_id is not None
    }
    names = {c.get("user") for c in parsed.todo_changes} | {
        o.get("recorded_by") for o in parsed.tool_outcomes
    }
    users = dict(
        get_user_model()
        .objects.filter(username__in=[n for n in names if n])
        .values_list("username", "id")
    )
    return id_map, users


def write_tool_outcomes(
    parsed: ParsedSession, session: Session, id_map: dict[int, int], users: dict[str, int]
) -> None:
    """The recorded tool outcomes of an agentops export, with event ids and users mapped."""
    ToolOutcome.objects.bulk_create(
        [
            ToolOutcome(
                **{k: v for k, v in o.items() if k not in ("recorded_by", "event_id")},
                session=session,
                event_id=id_map[o["event_id"]],
                recorded_by_id=users.get(o.get("recorded_by") or ""),
            )
            for o in parsed.tool_outcomes
        ]
    )
