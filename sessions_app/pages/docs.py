"""The project's own documentation (`docs/*.md`), served inside the dashboard.

Pages link to concepts (`/docs/concepts.md#turn-statuses`) so that a label on a page is
one click from its explanation; the URLs mirror the repository layout, so the relative
links between the Markdown files work both here and when the files are read in a clone.
Like every page, they are for users with a dashboard role. Markdown is rendered by
markdown-it-py (GFM tables, heading anchors from mdit-py-plugins) and cleaned by nh3 like
every other rendered text.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import path
from django.views.decorators.http import require_safe

from sessions_app.access import require_viewer
from sessions_app.pages.rendering import render_document

#: Where the documentation lives: the repository's own `docs/` folder.
DOCS_DIR: Path = Path(settings.BASE_DIR) / "docs"

#: The export format's JSON Schema, linked from the docs and downloadable.
EXPORT_SCHEMA = "session-export.schema.json"


def _doc_path(name: str) -> Path:
    """The Markdown file of document `name` (URL-validated: letters, digits, `-`, `_`)."""
    path = DOCS_DIR / f"{name}.md"
    if len(name) > 100 or not path.is_file():  # a longer name is no file (and os.stat fails)
        raise Http404(f"No document named {name!r}.")
    return path


@lru_cache(maxsize=32)
def _rendered(path: Path, mtime_ns: int) -> tuple[str, str]:
    """(title, HTML) of a Markdown file; cached per file version (`mtime_ns`)."""
    text = path.read_text(encoding="utf-8")
    title = next(
        (line.lstrip("#").strip() for line in text.splitlines() if line.startswith("# ")),
        path.stem,
    )
    return title, render_document(text)


def documents() -> list[tuple[str, str]]:
    """(name, title) of every document, the index (README) first, then by name."""
    paths = sorted(DOCS_DIR.glob("*.md"), key=lambda p: (p.stem != "README", p.stem))
    return [(p.stem, _rendered(p, p.stat().st_mtime_ns)[0]) for p in paths]


@require_safe
@login_required
def doc_page(request: HttpRequest, name: str = "README") -> HttpResponse:
    """GET /docs/ (the index) or /docs/NAME.md: one document rendered as a page; 404 if
    there is no such document."""
    require_viewer(request)
    path = _doc_path(name)
    title, html = _rendered(path, path.stat().st_mtime_ns)
    return render(
        request,
        "docs/page.html",
        {"name": name, "title": title, "html": html, "documents": documents()},
    )


@require_safe
@login_required
def export_schema(request: HttpRequest) -> FileResponse:
    """GET /docs/session-export.schema.json: the export format's JSON Schema."""
    require_viewer(request)
    return FileResponse(
        (DOCS_DIR / EXPORT_SCHEMA).open("rb"), content_type="application/schema+json"
    )


app_name = "docs"
urlpatterns = [
    path("", doc_page, name="index"),
    path(EXPORT_SCHEMA, export_schema, name="export_schema"),
    path("<slug:name>.md", doc_page, name="page"),
]
