"""Safe rendering of untrusted model output for the dashboard.

Markdown is parsed by markdown-it-py (CommonMark plus GFM tables and strikethrough) with
raw HTML disabled, so `<script>` in model text becomes literal text; the HTML produced is
then passed through nh3 (ammonia) with a fixed allow-list as a second line of defence.
"""

from __future__ import annotations

import json
from typing import Any

import nh3
from markdown_it import MarkdownIt
from mdit_py_plugins.anchors import anchors_plugin

_markdown = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
_markdown.enable(["table", "strikethrough"])

_ALLOWED_TAGS = {
    "a", "p", "br", "hr", "pre", "code", "blockquote", "em", "strong", "del", "s",
    "ul", "ol", "li", "h1", "h2", "h3", "h4", "h5", "h6",
    "table", "thead", "tbody", "tr", "th", "td", "img",
}  # fmt: skip
_ALLOWED_ATTRIBUTES = {
    "a": {"href", "title"},
    "img": {"src", "alt", "title"},
    "th": {"style"},
    "td": {"style"},
    "ol": {"start"},
    "code": {"class"},
}


#: Characters of one text rendered on a page; the rest is left to raw JSON and export, so
#: one huge message cannot make a session page unusable.
MAX_RENDERED_CHARS = 50_000


def render_markdown(text: str) -> str:
    """Markdown `text` as sanitised HTML (a str safe to mark safe in a template).

    Links get rel="noopener noreferrer nofollow"; only http(s) and mailto URLs survive.
    Text beyond MAX_RENDERED_CHARS is not rendered: a note says how much was left out.
    """
    if not text:
        return ""
    left_out = len(text) - MAX_RENDERED_CHARS
    if left_out > 0:
        text = (
            text[:MAX_RENDERED_CHARS]
            + f"\n\n*… {left_out:,} more characters not shown here (see raw JSON or export).*"
        )
    html = _markdown.render(text)
    return nh3.clean(
        html,
        tags=_ALLOWED_TAGS,
        attributes=_ALLOWED_ATTRIBUTES,
        url_schemes={"http", "https", "mailto"},
        link_rel="noopener noreferrer nofollow",
        filter_style_properties={"text-align"},
    )


def pretty_json(value: Any) -> str:
    """`value` as indented JSON text (non-ASCII kept, keys in stored order)."""
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


_document_markdown = MarkdownIt("commonmark", {"html": False, "linkify": False})
_document_markdown.enable(["table", "strikethrough"])
_document_markdown.use(anchors_plugin, min_level=2, max_level=4)


def render_document(text: str) -> str:
    """The project's own Markdown documentation as sanitised HTML, with an `id` on every
    heading of levels 2-4 (GitHub-style slugs, so `concepts.md#turn-statuses` links work
    on the dashboard as in a clone). Relative links are kept; raw HTML stays text."""
    return nh3.clean(
        _document_markdown.render(text),
        tags=_ALLOWED_TAGS,
        attributes={**_ALLOWED_ATTRIBUTES, **{f"h{n}": {"id"} for n in range(1, 7)}},
        url_schemes={"http", "https", "mailto"},
        link_rel="noopener noreferrer nofollow",
        filter_style_properties={"text-align"},
    )
