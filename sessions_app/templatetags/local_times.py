"""Times on pages, in the reader's time zone: ``{% load local_times %}``.

``{% local_time value %}`` renders ``<time datetime=ISO data-local="datetime">`` with the
UTC date and time as its text and tooltip; ``static/localtime.js`` replaces the text with
the reader's local date and time (the tooltip keeps UTC), so a page without script still
reads correctly. ``{% local_time value "time" %}`` shows the time of day only. An empty
value renders "—".
"""

from __future__ import annotations

from datetime import UTC, datetime

from django import template
from django.utils.html import format_html
from django.utils.safestring import SafeString

register = template.Library()

_FORMATS = {"datetime": "%Y-%m-%d %H:%M:%S UTC", "time": "%H:%M:%S UTC"}


@register.simple_tag
def local_time(value: object, shown: str = "datetime") -> SafeString:
    """`value` (an aware datetime) as a ``<time>`` element that localtime.js shows in
    the reader's time zone; `shown` is "datetime" or "time" (KeyError otherwise)."""
    pattern = _FORMATS[shown]
    if not isinstance(value, datetime):
        return format_html("{}", "—")
    utc = value.astimezone(UTC) if value.tzinfo else value.replace(tzinfo=UTC)
    return format_html(
        '<time datetime="{}" title="{}" data-local="{}">{}</time>',
        utc.isoformat(),
        utc.strftime(_FORMATS["datetime"]),
        shown,
        utc.strftime(pattern),
    )
