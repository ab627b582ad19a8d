"""Bad request input answers 4xx with a reason, never 5xx, on SQLite and PostgreSQL: NUL
and control characters in paths, query strings and form fields (agentops.middleware),
over-long values, wrong types, deeply nested JSON; and a seeded fuzz over every URL
pattern as an admin and an operator. HEAD works wherever GET does; GET on the sign-out
URL shows a page; a 403 is logged as one line."""

from __future__ import annotations

import json
import logging
import os
import random
from typing import Any

import pytest
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import User
from django.test import Client
from django.urls import get_resolver

from agentops.middleware import OneLineClientErrors
from sessions_app.live.consumer import CLOSE_NOT_FOUND
from sessions_app.models import Event, ToolOutcome
from tests.test_access_matrix import MATRIX, SID, _patterns, _url, store_matrix_session, url_values

pytestmark = pytest.mark.django_db


@pytest.fixture
def stored_session() -> Event:
    return store_matrix_session()


NUL_REQUESTS = [
    ("GET", "/sessions/?q=a%00b", None, "query parameter 'q'"),
    ("GET", "/sessions/?app=%00", None, "query parameter 'app'"),
    ("GET", "/sessions/?status=x&%00=1", None, "query parameter"),
    ("GET", "/turns/?code=%00", None, "query parameter 'code'"),
    ("GET", "/turns/?stage=a%00&reason=%00", None, "query parameter"),
    ("GET", "/sessions/a%00b/", None, "the URL path"),
    ("GET", f"/sessions/{SID}/turns/t%00/events/", None, "the URL path"),
    ("GET", f"/sessions/{SID}/turns/t%0A1/events/", None, "the URL path"),
    ("GET", "/sessions/?q=%01", None, "control character"),
    ("POST", f"/sessions/{SID}/stop/", {"turn_id": "t\x00"}, "form field 'turn_id'"),
    ("POST", f"/sessions/{SID}/protocol/outcomes/", {"reason": "a\x00"}, "form field 'reason'"),
]


@pytest.mark.parametrize(("method", "url", "data", "reason"), NUL_REQUESTS)
def test_nul_and_control_characters_are_refused_with_a_reason(
    admin_client: Client, stored_session: Event, method: str, url: str, data: Any, reason: str
) -> None:
    response = admin_client.get(url) if method == "GET" else admin_client.post(url, data)
    assert response.status_code == 400, url
    body = response.content.decode()
    assert body.startswith("Bad request: ") and reason in body and body.count("\n") == 1


def test_tabs_and_line_breaks_in_form_text_are_fine(
    admin_client: Client, stored_session: Event
) -> None:
    response = admin_client.post(
        f"/sessions/{SID}/protocol/outcomes/",
        {"event_id": stored_session.id, "call_id": "c-1", "outcome": "did_not_run",
         "reason": "line one\r\n\tline two"},
    )  # fmt: skip
    assert response.status_code == 302
    assert ToolOutcome.objects.get().reason == "line one\r\n\tline two"


@pytest.mark.parametrize(
    ("result", "problem"),
    [
        ("[" * 5000 + "]" * 5000, "nests deeper than 32 levels"),
        (json.dumps(json.loads("[" * 40 + "]" * 40)), "nests deeper than 32 levels"),
        ('{"a": "b\\u0000c"}', "contains a NUL character"),
        ("x" * 100_001, "longer than 100,000 characters"),
    ],
)
def test_unstorable_results_are_refused_with_a_reason(
    admin_client: Client, stored_session: Event, result: str, problem: str
) -> None:
    response = admin_client.post(
        f"/sessions/{SID}/protocol/outcomes/",
        {"event_id": stored_session.id, "call_id": "c-1", "outcome": "ran", "result": result,
         "reason": "checked the logs"},
        follow=True,
    )  # fmt: skip
    assert response.status_code == 200
    assert problem in response.content.decode()
    assert not ToolOutcome.objects.exists()


@pytest.mark.django_db(transaction=True)
async def test_websocket_path_with_a_nul_is_refused_4404(operator_user: User) -> None:
    from asgiref.sync import sync_to_async

    from agentops.asgi import application
    from tests.live.helpers import session_cookie

    cookie = await sync_to_async(session_cookie)(operator_user)
    headers = [(b"origin", b"http://testserver"), (b"cookie", cookie.encode())]
    comm = WebsocketCommunicator(application, "/ws/sessions/a\x00b/", headers=headers)
    assert await comm.connect() == (False, CLOSE_NOT_FOUND)
    await comm.disconnect()


def test_head_works_wherever_get_does(admin_client: Client, stored_session: Event) -> None:
    for name, parameters in _patterns(get_resolver().url_patterns):
        if MATRIX[name][1] == "GET":
            url = _url(name, parameters, stored_session.id)
            get, head = admin_client.get(url), admin_client.head(url)
            assert head.status_code == get.status_code, url
            streamed = getattr(head, "streaming_content", None)
            body = b"".join(streamed) if head.streaming and streamed else head.content
            assert body == b"", url


def test_get_on_sign_out_shows_a_page_or_the_sign_in(client: Client, operator_user: User) -> None:
    response = client.get("/accounts/logout/")
    assert response.status_code == 302 and response["Location"] == "/accounts/login/"
    client.force_login(operator_user)
    response = client.get("/accounts/logout/")
    assert response.status_code == 200 and b'action="/accounts/logout/"' in response.content
    assert client.post("/accounts/logout/").status_code == 302
    assert client.get("/sessions/").status_code == 302  # signed out


def test_a_403_is_logged_as_one_line(
    operator_client: Client, stored_session: Event, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="django.request"):
        response = operator_client.post(f"/sessions/{SID}/protocol/outcomes/", {})
        assert response.status_code == 403
    (record,) = [r for r in caplog.records if r.name == "django.request"]
    # Django attached the PermissionDenied traceback; the console handler's filter (which
    # saw the record first) dropped it.
    assert record.getMessage().startswith("Forbidden (Permission denied): /sessions/")
    assert record.exc_info is None and record.exc_text is None
    console = logging.getLogger().handlers
    assert any(isinstance(f, OneLineClientErrors) for h in console for f in h.filters)
    fresh = logging.LogRecord("django.request", logging.WARNING, "", 0, "Forbidden", (), None)
    fresh.exc_info, fresh.status_code = (PermissionError, PermissionError(), None), 403
    assert OneLineClientErrors().filter(fresh) and fresh.exc_info is None


def test_a_5xx_keeps_its_traceback() -> None:
    record = logging.LogRecord("django.request", logging.ERROR, "", 0, "boom", (), None)
    record.exc_info = (ValueError, ValueError("x"), None)
    record.status_code = 500
    assert OneLineClientErrors().filter(record) and record.exc_info is not None


# -- fuzz ---------------------------------------------------------------------------------

SEED = int(os.environ.get("AGENTOPS_FUZZ_SEED", "20261201"))
ROUNDS = int(os.environ.get("AGENTOPS_FUZZ_ROUNDS", "48"))

QUERY_NAMES = ["q", "app", "status", "health", "page", "after", "code", "stage", "reason", "x"]
FORM_NAMES = [
    "event_id", "call_id", "outcome", "result", "reason", "turn_id", "version", "content",
    "active_form", "status", "direction", "next",
]  # fmt: skip
PIECES = [
    "", "0", "-1", "1", "2", "99999999999999999999", "1e3", "nan", "true", "null", "[]", "{}",
    "ran", "did_not_run", "failed", "stuck", "up", "down", "pending", "completed", "..", ".",
    "%", "%00", "%zz", "/", "\\", "'", '"', "<script>", "é", "日本", "\U0001f600", "\ufeff",
    "\x00", "\x01", "\x1f", "\x7f", "\t", "\n", "\r\n", " ", "c-1", "t-1", SID, "legacy",
    "x" * 300, "y" * 5000, "[" * 200, '{"a":' * 50,
]  # fmt: skip


def _text(rng: random.Random) -> str:
    return "".join(rng.choice(PIECES) for _ in range(rng.randint(0, 3)))


def _path_value(rng: random.Random, converter: str, default: Any) -> str:
    if rng.random() < 0.3:
        return str(default)
    value = _text(rng) or "z"
    if converter == "index" or converter == "event_id":
        value = rng.choice([str(rng.randint(0, 10**12)), "0", "1", "00", str(2**63)])
    return value.replace("/", "-") if converter == "session_id" else value


def _fuzz_requests(rng: random.Random, event_id: int) -> list[tuple[str, str, dict[str, str]]]:
    from urllib.parse import quote, urlencode

    defaults = url_values(event_id)
    requests = []
    for name, parameters in _patterns(get_resolver().url_patterns):
        method = MATRIX[name][1]
        if name == "logout":
            continue
        base = _url(name, parameters, event_id)
        for _ in range(ROUNDS):
            path = base
            for parameter in parameters:
                value = _path_value(rng, parameter, defaults[parameter])
                path = path.replace(quote(str(defaults[parameter]), safe="/"), quote(value), 1)
            query = {rng.choice(QUERY_NAMES): _text(rng) for _ in range(rng.randint(0, 3))}
            url = path + ("?" + urlencode(query) if query else "")
            form: dict[str, str] = {}
            if method == "POST" and name != "sessions:run_turn":  # a valid message runs a turn
                form = {rng.choice(FORM_NAMES): _text(rng) for _ in range(rng.randint(0, 6))}
            requests.append((method, url, form))
    return requests


def test_fuzz_every_url_pattern_never_answers_5xx(
    stored_session: Event, admin_user: User, operator_user: User
) -> None:
    rng = random.Random(SEED)
    failures: list[str] = []
    total = 0
    for user in (admin_user, operator_user):
        client = Client(raise_request_exception=False)
        client.force_login(user)
        for method, url, form in _fuzz_requests(rng, stored_session.id):
            response = client.get(url) if method == "GET" else client.post(url, form)
            total += 1
            if response.status_code >= 500:
                failures.append(f"{user.username} {method} {url[:200]!r} {form!r:.200}")
    print(f"fuzz: {total} requests, seed {SEED}, {len(failures)} answered 5xx")
    assert not failures, "\n".join(failures[:10])
    assert total > 2000
