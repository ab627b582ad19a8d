"""Plain words on pages: ``{% load plain_words %}``.

- ``{% label "status" turn.status %}``: a badge with the plain label of a machine word
  (`sessions_app.labels`), its one-line explanation and the raw word as the tooltip, linked
  to its docs heading; kinds "status", "reason", "stage", "code";
- ``{{ value|plain:"status" }}``: only the label's text (for an ``<option>``);
- ``{{ text|markdown }}``: model text (reasoning) rendered like messages (sanitised);
- ``{{ event.state_delta|state_changes }}``: a state update as rows of key and new value.
"""

from __future__ import annotations

from django import template
from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe

from sessions_app.labels import label_for
from sessions_app.pages import calls
from sessions_app.pages.calls import StateChange
from sessions_app.pages.rendering import render_markdown

register = template.Library()


@register.simple_tag
def label(kind: str, value: object) -> SafeString:
    """The badge of `value` of `kind` ("" when the value is empty, e.g. no reason): the
    label as text, explanation and raw word as `title`, a link to docs/concepts.md."""
    word = str(getattr(value, "value", value) or "")
    if not word:
        return mark_safe("")
    found = label_for(kind, word)
    href = reverse("docs:page", args=["concepts"]) + (f"#{found.anchor}" if found.anchor else "")
    title = f"{found.help} (recorded as “{word}”)" if found.help else word
    return format_html(
        '<a class="badge {}-{} label" href="{}" title="{}" data-word="{}">{}</a>',
        kind,
        word,
        href,
        title,
        word,
        found.text or word,
    )


@register.filter
def plain(value: object, kind: str) -> str:
    """The plain label of `value` of `kind` as text ("" for an empty value)."""
    word = str(getattr(value, "value", value) or "")
    return (label_for(kind, word).text or word) if word else ""


@register.filter
def markdown(text: object) -> SafeString:
    """`text` rendered as sanitised markdown (`render_markdown`), "" for an empty value."""
    return mark_safe(render_markdown(str(text or "")))  # sanitised by nh3


@register.filter
def state_changes(delta: object) -> list[StateChange]:
    """The keys a state update sets, with their values (`calls.state_changes`)."""
    return calls.state_changes(delta)
