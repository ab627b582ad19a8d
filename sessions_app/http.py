"""HTTP helpers shared by the dashboard's views (sessions_app and todos_app).

It lives in sessions_app because todos_app may import sessions_app, never the reverse.
"""

from __future__ import annotations

from django.http import HttpRequest
from django_htmx.middleware import HtmxDetails

__all__ = ["HtmxHttpRequest"]


class HtmxHttpRequest(HttpRequest):
    """The request type of a view behind `django_htmx.middleware.HtmxMiddleware`.

    The middleware sets `request.htmx` on every request: an `HtmxDetails` that is truthy
    for an htmx request and carries its headers (`target`, `current_url_abs_path`, ...).
    This class only tells the type checker so (the pattern of django-htmx's example
    project); no request is ever constructed from it.
    """

    htmx: HtmxDetails
