"""Download a session as one JSON document (`sessions_app.export`), streamed."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Iterator

from asgiref.sync import sync_to_async
from django.core.handlers.asgi import ASGIRequest
from django.http import HttpRequest, StreamingHttpResponse
from django.views.decorators.http import require_safe

from sessions_app.access import get_session_for_user
from sessions_app.export.build import export_text
from sessions_app.models import Session

# Text pieces are joined into writes of about this many characters.
_WRITE_CHARS = 256 * 1024


def export_filename(session_id: str) -> str:
    """A safe download name: `<session id with [^A-Za-z0-9._-] as _>.agentops.json`."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", session_id)[:150] + ".agentops.json"


def _buffered(pieces: Iterator[str]) -> Iterator[bytes]:
    buffer: list[str] = []
    size = 0
    for piece in pieces:
        buffer.append(piece)
        size += len(piece)
        if size >= _WRITE_CHARS:
            yield "".join(buffer).encode()
            buffer, size = [], 0
    yield ("".join(buffer) + "\n").encode()


def _next_chunk(chunks: Iterator[bytes]) -> bytes | None:
    return next(chunks, None)


async def _async_chunks(chunks: Iterator[bytes]) -> AsyncIterator[bytes]:
    # Each step reads the database, so it runs in the sync thread (thread-sensitive).
    step = sync_to_async(_next_chunk)
    while (chunk := await step(chunks)) is not None:
        yield chunk


def export_response(
    request: HttpRequest, session: Session, *, attachment: bool = True
) -> StreamingHttpResponse:
    """`session`'s export document as a streamed `application/json` response
    (`export.build.export_text`: turns and events read page by page, so memory does not
    grow with the session; under ASGI the pages are read between writes), as a download
    (`Content-Disposition: attachment`) when `attachment`."""
    chunks = _buffered(export_text(session))
    content = _async_chunks(chunks) if isinstance(request, ASGIRequest) else chunks
    response = StreamingHttpResponse(content, content_type="application/json; charset=utf-8")
    if attachment:
        name = export_filename(session.id)
        response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


@require_safe
def session_export(request: HttpRequest, session_id: str) -> StreamingHttpResponse:
    """GET /sessions/<id>/export/: the `agentops.session-export/1` document as a streamed
    download (`export_response`). 404 for a missing session or a user without a
    dashboard role (`get_session_for_user`).
    """
    return export_response(request, get_session_for_user(request, session_id))
