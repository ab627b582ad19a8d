"""Tool results on the session page: images shown as images (never base64 text), long
results cut with a "show all" that loads the whole value."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from django.test import Client
from django.urls import reverse

from sessions_app.ingest import import_file
from sessions_app.models import Event, Turn
from sessions_app.pages.images import IMAGE_INLINE_LIMIT, split_images
from sessions_app.pages.presenters import RESULT_PREVIEW_CHARS

pytestmark = pytest.mark.django_db

FORMATS = Path(__file__).parent / "fixtures" / "formats"
PNG = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQ"
    "DwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)


def test_image_shapes_become_placeholders_and_images() -> None:
    big = base64.b64encode(b"\x89PNG" + b"\0" * (IMAGE_INLINE_LIMIT + 10)).decode()
    value = [
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
        {"inline_data": {"mime_type": "image/jpeg", "data": "/9j/" + "A" * 400}},
        "data:image/gif;base64,R0lGODlhAQABAAAAACw=",
        "iVBORw0KGgo" + "A" * 300,
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": big}},
        {"type": "image", "source": "not-an-object"},
        "plain text",
    ]
    clean, images = split_images(value)
    assert [i.mime_type for i in images] == [
        "image/png",
        "image/jpeg",
        "image/gif",
        "image/png",
        "image/png",
    ]
    assert images[0].data_url == f"data:image/png;base64,{PNG}"
    assert images[4].data_url == "" and images[4].size > IMAGE_INLINE_LIMIT  # too large
    assert clean[0] == images[0].label and clean[0].startswith("[image image/png, ")
    assert clean[5] == {"type": "image", "source": "not-an-object"}
    assert clean[6] == "plain text"
    assert PNG not in str(clean)


def test_an_image_in_a_tool_result_is_shown_as_an_image(operator_client: Client) -> None:
    import_file(FORMATS / "anthropic_request.json")
    turn = Turn.objects.get(session_id="anthropic:anthropic_request")
    url = reverse("sessions:turn_events", args=[turn.session_id, turn.id])
    body = operator_client.get(url, headers={"HX-Request": "true"}).content.decode()
    assert f'<img class="result-image" src="data:image/png;base64,{PNG}"' in body
    assert body.count(PNG) == 1  # the image only, never the text of the result


def test_a_long_result_is_cut_with_show_all_loading_the_whole_value(
    operator_client: Client, tmp_path: Path
) -> None:
    import json

    long = "line of output\n" * 3000  # 45,000 characters
    path = tmp_path / "chat.json"
    path.write_text(
        json.dumps(
            [
                {"role": "user", "content": "run it"},
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [
                        {
                            "id": "c1",
                            "type": "function",
                            "function": {"name": "sh", "arguments": "{}"},
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": "c1", "content": long + "THE END"},
            ]
        )
    )
    import_file(path)
    sid = "openai-chat:chat"
    turn = Turn.objects.get(session_id=sid)
    result = Event.objects.get(session_id=sid, role="tool")
    page = operator_client.get(
        reverse("sessions:turn_events", args=[sid, turn.id]), headers={"HX-Request": "true"}
    ).content.decode()
    assert "THE END" not in page
    assert f"show all ({len(long) + 7} characters)" in page
    raw = reverse("sessions:event_raw", args=[sid, result.id]) + "?value=result"
    assert raw.replace("&", "&amp;") in page or raw in page
    full = operator_client.get(raw, headers={"HX-Request": "true"}).content.decode()
    assert full.startswith(f'<pre class="result" id="result-{result.id}">')
    assert "THE END" in full and len(full) > RESULT_PREVIEW_CHARS
    plain = operator_client.get(raw)
    assert plain["Content-Type"].startswith("text/plain") and plain.content.decode().endswith(
        "THE END"
    )


def test_show_all_is_404_for_a_session_one_may_not_see(
    outsider_client: Client, tmp_path: Path
) -> None:
    import_file(FORMATS / "responses_items.json")
    event = Event.objects.filter(role="tool").first()
    assert event is not None
    url = reverse("sessions:event_raw", args=[event.session_id, event.id]) + "?value=result"
    assert outsider_client.get(url).status_code == 404
