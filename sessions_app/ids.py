"""Which ids a stored session and turn may have: ids a URL can carry.

A session id becomes one URL path segment (/sessions/<id>/): no "/", no control
characters, not "." or "..", at most 255 characters (the column). A turn id goes into
URLs as a path (/sessions/<id>/turns/<turn id>/events/, and importers name turns
`<session id>/turn-NNNN`), so it may hold "/", but none of its segments may be "." or
"..", which a client would resolve away.
"""

from __future__ import annotations

import re
from typing import cast

from sessions_app.models import Session, Turn

_BAD_ID_CHARACTER = re.compile(r"[/\x00-\x1f\x7f]")
_BAD_TURN_ID_CHARACTER = re.compile(r"[\x00-\x1f\x7f]")
MAX_ID_LENGTH = cast(int, Session._meta.get_field("id").max_length)
MAX_TURN_ID_LENGTH = cast(int, Turn._meta.get_field("id").max_length)


def session_id_problem(session_id: str) -> str | None:
    """Why `session_id` cannot be stored and linked to, or None when it can."""
    if not session_id:
        return "the session id is empty"
    if len(session_id) > MAX_ID_LENGTH:
        return f"the session id is {len(session_id)} characters long (at most {MAX_ID_LENGTH})"
    if session_id in (".", ".."):
        return f"the session id {session_id!r} is not allowed"
    bad = _BAD_ID_CHARACTER.search(session_id)
    if bad:
        return f"the session id {session_id!r} contains {bad.group()!r}, which ids may not hold"
    return None


def turn_id_problem(turn_id: str) -> str | None:
    """Why `turn_id` cannot be stored and linked to, or None when it can."""
    if not turn_id:
        return "the turn id is empty"
    if len(turn_id) > MAX_TURN_ID_LENGTH:
        return f"the turn id is {len(turn_id)} characters long (at most {MAX_TURN_ID_LENGTH})"
    if any(segment in (".", "..") for segment in turn_id.split("/")):
        return f"the turn id {turn_id[:80]!r} has a '.' or '..' segment, which ids may not hold"
    bad = _BAD_TURN_ID_CHARACTER.search(turn_id)
    if bad:
        return f"the turn id {turn_id[:80]!r} contains {bad.group()!r}, which ids may not hold"
    return None
