"""The project's docs served at /docs/: rendered, linked, signed-in only."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.conf import settings
from django.test import Client

DOCS = Path(settings.BASE_DIR) / "docs"

pytestmark = pytest.mark.django_db


def test_docs_need_sign_in(client: Client) -> None:
    response = client.get("/docs/")
    assert response.status_code == 302
    assert "/accounts/login/" in response["Location"]


def test_every_document_renders_with_heading_anchors(operator_client: Client) -> None:
    names = sorted(p.stem for p in DOCS.glob("*.md"))
    assert "README" in names
    for name in names:
        url = "/docs/" if name == "README" else f"/docs/{name}.md"
        response = operator_client.get(url)
        assert response.status_code == 200, url
        html = response.content.decode()
        headings = re.findall(r"^## (.+)$", (DOCS / f"{name}.md").read_text(), re.MULTILINE)
        assert html.count("<h2 id=") == len(headings), name


def test_relative_links_between_documents_resolve(operator_client: Client) -> None:
    """Every `[x](other.md#anchor)` link in the docs names a document and a heading
    that exist, so the docs read the same in a clone and on the dashboard."""
    link = re.compile(r"\]\(([A-Za-z0-9_-]+)\.md(?:#([a-z0-9-]+))?\)")
    pages: dict[str, str] = {}
    for path in DOCS.glob("*.md"):
        for target, anchor in link.findall(path.read_text()):
            if target not in pages:
                response = operator_client.get(f"/docs/{target}.md")
                assert response.status_code == 200, f"{path.name} links to {target}.md"
                pages[target] = response.content.decode()
            if anchor:
                assert f'id="{anchor}"' in pages[target], f"{path.name} -> {target}.md#{anchor}"


def test_unknown_document_is_404(operator_client: Client) -> None:
    assert operator_client.get("/docs/nope.md").status_code == 404
    assert operator_client.get("/docs/..%2Fsettings.md").status_code == 404


def test_export_schema_is_served(operator_client: Client) -> None:
    response = operator_client.get("/docs/session-export.schema.json")
    assert response.status_code == 200
    assert response["Content-Type"] == "application/schema+json"
    assert b'"$schema"' in b"".join(response.streaming_content)  # type: ignore[attr-defined]
