"""The session rows of the traces a request lands (`landing.land`): the sessions they
create, in bulk, and the rare changes to the stored ones."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sessions_app import models
from sessions_app.ingest.writer import insert_rows

if TYPE_CHECKING:
    from sessions_app.otlp.landing import Plan

__all__ = ["STATE_KEY", "first_prompt", "land_sessions"]

#: Session state key of sessions made by the receiver: {"content_captured": bool}.
STATE_KEY = "otlp"

_NEW_SESSION_COLUMNS = ("id", "app_name", "user_id", "title", "state", "source_format", "model",
                        "created_at", "updated_at")  # fmt: skip


def land_sessions(
    plans: Sequence[Plan], sessions: dict[str, models.Session], now: datetime
) -> None:
    """Create the sessions of `plans` not in `sessions` (one INSERT; added to it), each
    titled by its first prompt and created when its first span started; update a stored
    one whose title, content mark, model or start the plans change (a query each)."""
    new: dict[str, models.Session] = {}
    for plan in sorted(plans, key=lambda plan: plan.spans[0].start_at):
        captured = plan.where.content_captured
        row = sessions.get(plan.session_id) or new.get(plan.session_id)
        # Created when its first span started (as an import's, when its transcript
        # began), never later than now; an earlier trace arriving late moves it back.
        began = min(plan.spans[0].start_at, now)
        if row is None:
            new[plan.session_id] = models.Session(
                id=plan.session_id,
                app_name=plan.where.app_name[:255],
                user_id=plan.where.user_id[:255],
                title=first_prompt(plan),
                state={STATE_KEY: {"content_captured": captured}},
                source_format=models.Session.SourceFormat.OTLP,
                model=plan.where.model,
                created_at=began,
                updated_at=now,
            )
        elif plan.session_id in new:
            row.title = row.title or first_prompt(plan)
        else:  # rare changes: one query for the row
            changes: dict[str, Any] = {}
            if not row.title and (title := first_prompt(plan)):
                changes["title"] = title
            mark = row.state.get(STATE_KEY) if isinstance(row.state, dict) else None
            if captured and isinstance(mark, dict) and mark.get("content_captured") is False:
                changes["state"] = {**row.state, STATE_KEY: {"content_captured": True}}
            if plan.where.model and row.model != plan.where.model:
                changes["model"] = plan.where.model
            if began < row.created_at:
                changes["created_at"] = began
            if changes:
                for name, value in changes.items():
                    setattr(row, name, value)
                models.Session.objects.filter(pk=row.pk).update(**changes)
    # As bulk_create, without the ORM's per-value cost (`insert_rows`: same stored values).
    insert_rows(
        models.Session,
        _NEW_SESSION_COLUMNS,
        ([getattr(row, name) for name in _NEW_SESSION_COLUMNS] for row in new.values()),
    )
    sessions.update(new)


def first_prompt(plan: Plan) -> str:
    """The session's title from a trace: its first user message's text (already
    redacted with the attributes it came from), or "" (content not captured)."""
    text = next((draft.text for draft in plan.drafts if draft.role == "user" and draft.text), "")
    return " ".join(text.split())[:500]
