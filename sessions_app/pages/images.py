"""Images inside tool results: Anthropic image blocks, MCP / Gemini inline data, data:
URLs and bare base64 of a PNG/JPEG/GIF/WebP, taken out of a result's value so the page
shows them as images (a data: URL up to `IMAGE_INLINE_LIMIT` bytes) or as a placeholder
with their size, never as base64 text.
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass
from typing import Any

#: Decoded bytes up to which an image in a tool result is shown inline (data: URL).
IMAGE_INLINE_LIMIT = 512 * 1024
#: Image types shown inline (no SVG: an image type that can carry markup).
INLINE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
_BASE64_MAGIC = {"iVBORw0KGgo": "image/png", "/9j/": "image/jpeg", "R0lGOD": "image/gif"}
_BASE64_RE = re.compile(r"^[A-Za-z0-9+/=\s]+$")
_DATA_URL_RE = re.compile(r"^data:(image/[a-z0-9.+-]+);base64,(.*)$", re.S)


@dataclass(frozen=True)
class ResultImage:
    """An image found in a tool result: its type, decoded size in bytes, and a data: URL
    ("" when it is too large or of a type not shown inline)."""

    mime_type: str
    size: int
    data_url: str

    @property
    def label(self) -> str:
        """The placeholder text that stands in the result text for this image."""
        return f"[image {self.mime_type or '?'}, {self.size / 1024:.1f} KB]"


def _image(mime_type: str, data: str) -> ResultImage:
    compact = "".join(data.split())
    size = len(compact) * 3 // 4
    shown = mime_type in INLINE_TYPES and size <= IMAGE_INLINE_LIMIT
    if shown:
        try:
            base64.b64decode(compact, validate=True)
        except (binascii.Error, ValueError):
            shown = False
    url = f"data:{mime_type};base64,{compact}" if shown else ""
    return ResultImage(mime_type=mime_type, size=size, data_url=url)


def _as_image(value: Any) -> ResultImage | None:
    """The image `value` is (a block, inline data, a data: URL or bare base64), or None."""
    if isinstance(value, str):
        match = _DATA_URL_RE.match(value)
        if match:
            return _image(match[1], match[2])
        if len(value) >= 256 and _BASE64_RE.match(value[:4096]):
            for magic, mime_type in _BASE64_MAGIC.items():
                if value.startswith(magic):
                    return _image(mime_type, value)
        return None
    if not isinstance(value, dict):
        return None
    source = value.get("source")
    if value.get("type") == "image" and isinstance(source, dict):
        if isinstance(source.get("data"), str):
            return _image(str(source.get("media_type") or ""), source["data"])
    inline = value.get("inline_data", value.get("inlineData"))
    if isinstance(inline, dict) and isinstance(inline.get("data"), str):
        mime_type = str(inline.get("mime_type", inline.get("mimeType")) or "")
        if mime_type.startswith("image/"):
            return _image(mime_type, inline["data"])
    if value.get("type") == "image" and isinstance(value.get("data"), str):
        return _image(str(value.get("mimeType", value.get("mime_type")) or ""), value["data"])
    return None


def split_images(
    value: Any, images: list[ResultImage] | None = None
) -> tuple[Any, list[ResultImage]]:
    """`value` with every image in it replaced by its placeholder text, and the images
    (in order)."""
    found = images if images is not None else []
    image = _as_image(value)
    if image is not None:
        found.append(image)
        return image.label, found
    if isinstance(value, dict):
        return {k: split_images(v, found)[0] for k, v in value.items()}, found
    if isinstance(value, list):
        return [split_images(v, found)[0] for v in value], found
    return value, found
