"""Every page carries the strict Content-Security-Policy (django-csp, settings.py), and
`manage.py check --deploy` passes with the deployment variables the README lists."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import get_resolver

from sessions_app.models import Event
from tests.test_access_matrix import MATRIX, _patterns, _url, store_matrix_session

pytestmark = pytest.mark.django_db


@pytest.fixture
def stored_session() -> Event:
    return store_matrix_session()


ROOT = Path(__file__).resolve().parents[1]

DIRECTIVES = {
    "default-src": "'self'",
    "script-src": "'self'",
    "style-src": "'self'",
    "img-src": "'self' data:",
    "connect-src": "'self'",
    "object-src": "'none'",
    "frame-ancestors": "'none'",
    "base-uri": "'none'",
    "form-action": "'self'",
}


def _policy(header: str) -> dict[str, str]:
    directives = (part.strip().split(" ", 1) for part in header.split(";") if part.strip())
    return {name: value for name, value in directives}


def test_every_page_has_the_strict_policy(
    stored_session: Event,
    admin_user: User,
) -> None:
    client = Client()
    client.force_login(admin_user)
    seen = 0
    for name, parameters in _patterns(get_resolver().url_patterns):
        if MATRIX[name][1] != "GET":
            continue
        url = _url(name, parameters, stored_session.id)
        for response in (client.get(url), client.head(url)):
            assert _policy(response["Content-Security-Policy"]) == DIRECTIVES, url
        seen += 1
    assert seen >= 15
    # Error pages and refusals too.
    for url in ("/sessions/no-such/", "/sessions/a%00b/", "/admin/"):
        assert _policy(client.get(url)["Content-Security-Policy"]) == DIRECTIVES, url


def test_no_template_has_inline_script_style_or_handlers() -> None:
    import re

    inline = re.compile(r"<script(?![^>]*\bsrc=)|<style|\son[a-z]+=|\sstyle=|\shx-on|javascript:")
    for template in (ROOT / "templates").rglob("*.html"):
        found = inline.search(template.read_text())
        assert found is None, f"{template.relative_to(ROOT)}: {found and found.group()}"


DEPLOY_ENV = {
    "DEBUG": "false",
    "SECRET_KEY": "k3y-" + "x9Q!" * 16,
    "AGENTOPS_REQUIRE_SECRET_KEY": "true",
    "ALLOWED_HOSTS": "ops.example.com",
    "CSRF_TRUSTED_ORIGINS": "https://ops.example.com",
    "SECURE_COOKIES": "true",
    "SECURE_SSL_REDIRECT": "true",
    "SECURE_HSTS_SECONDS": "31536000",
    "SECURE_HSTS_INCLUDE_SUBDOMAINS": "true",
    "SECURE_HSTS_PRELOAD": "true",
    "SECURE_PROXY_SSL_HEADER": "true",
}


def _check_deploy(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    base = {"PATH": "/usr/bin:/bin", "HOME": "/tmp", "DATABASE_URL": "sqlite:////tmp/deploy.db"}
    return subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT, env={**base, **env}, capture_output=True, text=True,
    )  # fmt: skip


def test_check_deploy_passes_with_the_deployment_variables() -> None:
    done = _check_deploy(DEPLOY_ENV)
    assert done.returncode == 0, done.stdout + done.stderr


def test_check_deploy_fails_without_them() -> None:
    done = _check_deploy({"DEBUG": "false"})
    assert done.returncode != 0
    assert "security.W004" in done.stderr + done.stdout  # no HSTS
