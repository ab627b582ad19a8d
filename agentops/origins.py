"""The websocket Origin check: scheme, host and port against AGENTOPS_ALLOWED_ORIGINS.

Browsers send ``Origin`` with every websocket handshake, and cookies go along whatever
page opened it, so the origin is what tells a dashboard page from another web app on the
same host (``http://localhost:9999``). Channels' `AllowedHostsOriginValidator` compares
host names only; this one compares the whole origin: an entry matches when scheme, host
and port (80/443 when omitted) are equal; an entry whose host begins with a dot also
matches its subdomains (Channels' rule). A handshake without ``Origin`` is refused.
The list is read from settings on every handshake, so tests may change it.
"""

from __future__ import annotations

from typing import Any

from channels.security.websocket import OriginValidator
from django.conf import settings

__all__ = ["SettingsOriginValidator"]


class SettingsOriginValidator(OriginValidator):  # type: ignore[misc]  # channels is untyped
    """Channels' `OriginValidator` on ``settings.AGENTOPS_ALLOWED_ORIGINS`` (entries with a
    scheme are compared by scheme, host and port; ``"*"`` is never accepted)."""

    def __init__(self, application: Any) -> None:
        super().__init__(application, [])

    @property
    def allowed_origins(self) -> list[str]:
        """The configured origins, each with a scheme (others are ignored)."""
        return [o for o in settings.AGENTOPS_ALLOWED_ORIGINS if "://" in o]

    @allowed_origins.setter
    def allowed_origins(self, value: list[str]) -> None:
        """Ignored: the list always comes from settings."""
