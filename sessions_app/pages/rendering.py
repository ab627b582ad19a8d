"""Safe rendering of untrusted model output for the dashboard.

Markdown is parsed by markdown-it-py (CommonMark plus GFM tables and strikethrough) with
raw HTML disabled, so `<script>` in model text becomes literal text; the HTML produced is
then passed through nh3 (ammonia) with a fixed allow-list as a second line of defence.

Nothing in a transcript makes the operator's browser fetch anything: an image whose
source is not a ``data:image/...`` URL (a remote or relative one, which would tell its
owner who reads the transcript, and when) is rendered as a link to it, its text the alt
text or the URL. Table alignment becomes a class (``align-left|center|right``), not an
inline style, so pages keep a Content-Security-Policy without 'unsafe-inline'.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

import nh3
from markdown_it import MarkdownIt
from markdown_it.renderer import RendererHTML
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict
from mdit_py_plugins.anchors import anchors_plugin

#: Image sources kept as images: raster data URLs (never fetched from anywhere).
_DATA_IMAGE = re.compile(r"data:image/(png|gif|jpeg|webp);base64,[A-Za-z0-9+/=\s]*\Z")
_ALIGN = re.compile(r"text-align:(left|center|right)\Z")


def _image_or_link(
    renderer: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType
) -> str:
    token = tokens[idx]
    src = str(token.attrGet("src") or "")
    if _DATA_IMAGE.match(src):
        return renderer.image(tokens, idx, options, env)
    alt = renderer.renderInlineAsText(token.children or [], options, env)
    escaped = src.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;")
    text = (alt or src).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return f'<a href="{escaped}" class="remote-image" title="image, not loaded">{text}</a>'


def _cell_open(
    renderer: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType
) -> str:
    token = tokens[idx]
    align = _ALIGN.match(str(token.attrGet("style") or ""))
    if "style" in token.attrs:
        del token.attrs["style"]
    if align:
        token.attrSet("class", f"align-{align.group(1)}")
    return renderer.renderToken(tokens, idx, options, env)


def _markdown_parser(**options: bool) -> MarkdownIt:
    parser = MarkdownIt("commonmark", {"html": False, "typographer": False, **options})
    parser.enable(["table", "strikethrough"])
    parser.add_render_rule("image", _image_or_link)
    parser.add_render_rule("th_open", _cell_open)
    parser.add_render_rule("td_open", _cell_open)
    return parser


_markdown = _markdown_parser(linkify=False)

_ALLOWED_TAGS = {
    "a", "p", "br", "hr", "pre", "code", "blockquote", "em", "strong", "del", "s",
    "ul", "ol", "li", "h1", "h2", "h3", "h4", "h5", "h6",
    "table", "thead", "tbody", "tr", "th", "td", "img",
}  # fmt: skip
_ALLOWED_ATTRIBUTES = {
    "a": {"href", "title"},
    "img": {"src", "alt", "title"},
    "ol": {"start"},
    "code": {"class"},
}
_CLASSES = {
    "th": {"align-left", "align-center", "align-right"},
    "td": {"align-left", "align-center", "align-right"},
    "a": {"remote-image"},
}


def _keep_attribute(element: str, attribute: str, value: str) -> str | None:
    """nh3's attribute filter: an img keeps only a raster data: source; no link may
    point at a data: URL."""
    if element == "img" and attribute == "src":
        return value if _DATA_IMAGE.match(value) else None
    if element == "a" and attribute == "href" and value.strip().lower().startswith("data:"):
        return None
    return value


def _clean(html: str, attributes: dict[str, set[str]]) -> str:
    return nh3.clean(
        html,
        tags=_ALLOWED_TAGS,
        attributes=attributes,
        attribute_filter=_keep_attribute,
        allowed_classes=_CLASSES,
        url_schemes={"http", "https", "mailto", "data"},
        link_rel="noopener noreferrer nofollow",
    )


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
    return _clean(_markdown.render(text), _ALLOWED_ATTRIBUTES)


def pretty_json(value: Any) -> str:
    """`value` as indented JSON text (non-ASCII kept, keys in stored order)."""
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


_document_markdown = _markdown_parser(linkify=False)
_document_markdown.use(anchors_plugin, min_level=2, max_level=4)


def render_document(text: str) -> str:
    """The project's own Markdown documentation as sanitised HTML, with an `id` on every
    heading of levels 2-4 (GitHub-style slugs, so `concepts.md#turn-statuses` links work
    on the dashboard as in a clone). Relative links are kept; raw HTML stays text."""
    return _clean(
        _document_markdown.render(text),
        {**_ALLOWED_ATTRIBUTES, **{f"h{n}": {"id"} for n in range(1, 7)}},
    )
