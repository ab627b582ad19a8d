"""Rows of the HTTP API: API keys, run leases of remote runners, and event client keys.

Imported by `sessions_app.models` so Django registers them with the app (migration
`0005_api_key`). All timestamps are aware UTC datetimes.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone


class ApiKeyQuerySet(models.QuerySet["ApiKey"]):
    def active(self) -> ApiKeyQuerySet:
        """Keys that are not revoked."""
        return self.filter(revoked_at__isnull=True)


class ApiKey(models.Model):
    """A key a program presents as ``Authorization: Bearer <key>`` (docs/interfaces.md).

    The key is ``ao_<prefix>_<secret>``: `prefix` (8 characters) is stored in clear and
    shown to people, so a key can be recognised and revoked; the secret (43 characters,
    256 random bits) is stored only as its SHA-256 (`secret_hash`). A slow password hash
    is for guessable secrets: a 256-bit random token cannot be brute-forced, so one SHA-256
    per request is enough and keeps each API call cheap. `app_names` empty means every
    app; `read_only` keys may only read.
    """

    name = models.CharField(max_length=100, unique=True)
    prefix = models.CharField(max_length=16, unique=True)
    secret_hash = models.CharField(max_length=64)
    read_only = models.BooleanField(default=False)
    app_names = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    objects = ApiKeyQuerySet.as_manager()

    class Meta:
        ordering = ["name"]
        verbose_name = "API key"

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix})"

    @property
    def label(self) -> str:
        """How records people see name this key: "api key NAME"."""
        return f"api key {self.name}"

    @property
    def read_only_refusal(self) -> str:
        """Why this read-only key's write is refused (the API's and the receivers' 403)."""
        return f"key {self.prefix} is read-only: it cannot write"

    def allows_app(self, app_name: str) -> bool:
        """True when this key may see sessions of `app_name` (empty list: every app)."""
        return not self.app_names or app_name in self.app_names


class RunLease(models.Model):
    """The run lease a remote runner holds on a session (docs/interfaces.md, leases).

    One row per session at most. `expires_at` moves forward with every renewal; a lease
    past it is expired, and the running turn it covered (`turn_id`) is recorded
    interrupted/abandoned the next time anyone touches the session
    (`sessions_app.api.lease.expire_lease`). `holder` is shown to a refused runner.
    """

    session = models.OneToOneField(
        "sessions_app.Session", on_delete=models.CASCADE, related_name="run_lease"
    )
    lease_id = models.CharField(max_length=64, unique=True)
    holder = models.CharField(max_length=200, blank=True, default="")
    api_key = models.ForeignKey(ApiKey, null=True, on_delete=models.SET_NULL, related_name="+")
    turn_id = models.CharField(max_length=255, blank=True, default="")
    ttl_seconds = models.FloatField()
    acquired_at = models.DateTimeField()
    expires_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"lease {self.lease_id} on {self.session_id}"


class EventClientKey(models.Model):
    """The client key (idempotency key) an API client gave an event it appended.

    Unique per session, so a retried batch finds the events it already stored and
    answers their ids instead of storing them twice.
    """

    session = models.ForeignKey("sessions_app.Session", on_delete=models.CASCADE, related_name="+")
    client_key = models.CharField(max_length=200)
    event = models.ForeignKey("sessions_app.Event", on_delete=models.CASCADE, related_name="+")

    class Meta:
        constraints = [
            # A retried batch: look the keys up per session; one event per key.
            models.UniqueConstraint(
                fields=["session", "client_key"],
                name="event_client_key_unique",
                condition=~Q(client_key=""),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.client_key} -> event {self.event_id}"
