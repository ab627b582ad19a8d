"""The rows of the triage queue, each with its deep link into the session timeline."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.urls import NoReverseMatch, reverse

from sessions_app.labels import label_for
from sessions_app.models import Turn
from sessions_app.search.numbers import TokenTotals


@dataclass(frozen=True)
class QueueRow:
    """A turn of the queue as a row: the turn (with `queue_status`, `last_event_at` and
    `timeline_index` annotations and its session joined) and derived figures.

    `timeline_page` is the page of the session timeline that shows the turn; `now` the
    aware UTC time the queue was read at.
    """

    turn: Turn
    timeline_page: int
    now: datetime

    @classmethod
    def for_turn(cls, turn: Turn, *, turns_per_page: int, now: datetime) -> QueueRow:
        """The row of `turn` (annotated by `TurnQuerySet.with_timeline_index`), for a
        session timeline of `turns_per_page` turns a page."""
        return cls(turn, turn.timeline_index // turns_per_page + 1, now)  # type: ignore[attr-defined]

    @property
    def turn_url(self) -> str:
        """The session page at the timeline page that holds the turn, scrolled to it ("" for
        a session id stored before the id rules that no URL can hold, `sessions_app.ids`)."""
        try:
            detail = reverse("sessions:detail", args=[self.turn.session_id])
        except NoReverseMatch:
            return ""
        return f"{detail}?page={self.timeline_page}#turn-{self.turn.id}"

    @property
    def stuck_minutes(self) -> int | None:
        """Whole minutes since the last event of a stuck turn; None for other turns."""
        if self.turn.queue_status != "stuck":  # type: ignore[attr-defined]
            return None
        elapsed = self.now - self.turn.last_event_at  # type: ignore[attr-defined]
        return int(elapsed.total_seconds() // 60)

    @property
    def meaning(self) -> str:
        """The turn's reason (or "blocks the session") in plain words, one line from
        `sessions_app.labels`; "" when none."""
        if self.turn.queue_status == "blocks":  # type: ignore[attr-defined]
            return label_for("status", "blocks").help
        return label_for("reason", self.turn.reason).help if self.turn.reason else ""

    @property
    def note(self) -> str:
        """The safe explanation recorded with the turn: the importer's `status_note` (e.g.
        "interrupt marker at line 17"), "" when none. Notes are redacted when stored."""
        return self.turn.status_note

    @property
    def tokens(self) -> TokenTotals:
        """The turn's token totals (annotated by `with_turn_tokens`), priced for the
        session's model."""
        return TokenTotals.of(self.turn, self.turn.session.model)

    @property
    def duration(self) -> str:
        """Start to finish, e.g. "42 s", "3 min 5 s", "2 h 4 min"; "" while running."""
        return self.turn.duration_text
