"""Small value rules of the stored rows: model choices derived from the runtime's enums,
the stuck threshold, durations as phrases, and which sources record no times."""

from __future__ import annotations

from datetime import datetime, timedelta
from enum import StrEnum

from django.conf import settings
from django.utils import timezone

__all__ = ["EMPTY_LABEL", "UNTIMED_FORMATS", "choices_of", "format_duration", "stuck_before"]

#: Source formats (`Session.source_format`) whose shape has no timestamps: their importers
#: give event `i` a made-up time (`ingest.normalise.synthetic_time`), so durations measured
#: between their events mean nothing and pages do not show them.
UNTIMED_FORMATS = frozenset(
    {"openai_chat", "openai_agents", "anthropic_messages", "openai_responses"}
)

#: How the choices show an empty value ("no reason", "no failure stage", ...).
EMPTY_LABEL = "—"


def choices_of(values: type[StrEnum], *, empty: bool = False) -> list[tuple[str, str]]:
    """A model field's `choices` from a runtime enum: `(value, label)` per member in
    definition order, labelled as Django labels `TextChoices` members (the name, words
    title-cased) and EMPTY_LABEL for the empty value; `empty` puts ("", EMPTY_LABEL) first
    for an enum without an empty member. The runtime enum stays the one definition."""
    pairs = [("", EMPTY_LABEL)] if empty else []
    pairs += [
        (member.value, member.name.replace("_", " ").title() if member.value else EMPTY_LABEL)
        for member in values
    ]
    return pairs


def stuck_before(now: datetime | None = None) -> datetime:
    """The instant (aware UTC) before which a running turn's last activity makes it stuck:
    `now` (default: the current time) minus settings.AGENTOPS_STUCK_AFTER_SECONDS."""
    return (now or timezone.now()) - timedelta(seconds=settings.AGENTOPS_STUCK_AFTER_SECONDS)


def format_duration(seconds: float) -> str:
    """A duration in seconds as a short English phrase ("0.4 s", "3 min 5 s", "2 h 4 min",
    "29 d 11 h")."""
    if seconds < 10:
        return f"{seconds:.1f} s"
    total = int(seconds)
    days, rest = divmod(total, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days} d {hours} h"
    if hours:
        return f"{hours} h {minutes} min"
    if minutes:
        return f"{minutes} min {secs} s"
    return f"{secs} s"
