"""Frames a watcher may send that are not the protocol: answered with an error message,
the connection stays open (a first user's `garbage{` frame closed it with 1011)."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User

from tests.factories import make_session
from tests.live.helpers import communicator, receive_frame, session_cookie

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize("frame", ["garbage{", " ", "[1, 2]", '{"type": "resume"}'])
async def test_a_frame_that_is_not_the_protocol_gets_an_error_message(
    operator_user: User, frame: str
) -> None:
    await sync_to_async(make_session)("s-frames")
    comm = communicator("s-frames", await sync_to_async(session_cookie)(operator_user))
    connected, code = await comm.connect()
    assert connected, code
    try:
        await comm.send_to(text_data=frame)
        answer = await receive_frame(comm, timeout=5)
        assert (answer["kind"], answer["error"]) == ("error", "expected {type: resume, after: id}")
        # Still open and answering.
        await comm.send_json_to({"type": "resume", "after": 0})
        assert (await receive_frame(comm, timeout=5))["kind"] in {"turn", "event", "hello"}
    finally:
        await comm.disconnect()
