"""Sign-out at /accounts/logout/: POST signs out (Django's LogoutView); GET and HEAD show
a page with the sign-out button, or send a visitor who is not signed in to the sign-in
page, instead of Django's empty 405 (the link is easy to type or follow)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_not_required
from django.contrib.auth.views import LogoutView
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

__all__ = ["sign_out"]

_logout = LogoutView.as_view()


@login_not_required
@require_http_methods(["GET", "HEAD", "POST"])
def sign_out(request: HttpRequest) -> HttpResponse:
    """POST: sign out and redirect to the sign-in page (LOGOUT_REDIRECT_URL). GET/HEAD:
    the confirmation page for a signed-in user, else a redirect to the sign-in page."""
    if request.method == "POST":
        return _logout(request)
    if not request.user.is_authenticated:
        return redirect("login")
    return render(request, "registration/logout.html")
