"""The HTTP API's writes (its batched plain-event path and the store's append) keep the
page facts (`sessions_app.store.page_facts`) equal to the full recomputation."""

from __future__ import annotations

import pytest

from tests.api.conftest import ApiClient
from tests.test_page_facts import _kept, _recomputed

pytestmark = pytest.mark.django_db

USAGE = {"prompt_tokens": 120, "completion_tokens": 7, "total_tokens": 127,
         "details": {"cached_input_tokens": 20}}  # fmt: skip


def _item(key: str, turn: str, content: dict[str, object], **extra: object) -> dict[str, object]:
    return {"client_key": key, "turn_id": turn, "content": content, **extra}


def test_api_batches_keep_tokens_marks_and_the_legacy_flag(writer: ApiClient) -> None:
    assert writer.post("/sessions", {"app_name": "ops", "session_id": "s-f"}).status_code == 201
    assert writer.post("/sessions/s-f/turns", {"turn_id": "t-1"}).status_code == 201
    call = {"id": "c-1", "name": "ls", "arguments": {}}
    result = {"tool_call_id": "c-1", "name": "ls", "result": 1}
    stray = {"tool_call_id": "nobody", "name": "ls", "result": 1}
    batch = {
        "events": [
            _item("a", "t-1", {"role": "user", "text": "list"}),
            _item("b", "t-1", {"role": "assistant", "text": "thinking"}, usage=USAGE),
            _item("c", "t-1", {"role": "assistant", "tool_calls": [call, call]}, usage=USAGE),
            _item("d", "t-1", {"role": "tool", "tool_response": result}),
            _item("e", "t-1", {"role": "tool", "tool_response": stray}),
            _item("f", "", {"role": "assistant", "text": "legacy"}, usage=USAGE),
        ]
    }
    assert writer.post("/sessions/s-f/events", batch).status_code == 200
    kept = _kept("s-f")
    assert kept == _recomputed("s-f")
    assert kept["tokens"] == (360, 21, 60) and kept["legacy"]
    assert len(kept["issues"]) == 1 and len(kept["orphans"]) == 1
