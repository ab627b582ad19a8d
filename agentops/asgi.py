"""ASGI entry point: HTTP through Django, websockets through Channels.

HTTP requests of the machine endpoints (the API and the OTLP receiver) go to their own
Django handler with a lean middleware chain and long-lived threads, every other request
to Django's usual one (`agentops.handlers`).

Websockets (``ws/sessions/<id>/``, `sessions_app.live.consumer`) pass the origin check
(scheme, host and port against AGENTOPS_ALLOWED_ORIGINS, `agentops.origins`) and Django's
session authentication. With
``AGENTOPS_LIVE_DEMO=true`` (set by ``python3 dev.py serve``) the server process also keeps
the demo session ``demo-live`` running a slowly streaming turn (`sessions_app.live.demo_live`),
started on the first connection, so the dashboard always shows a live turn. On its first
call a server process also records abandoned the turns whose process died
(`sessions_app.live.stuck.recover_on_first_call`), and with ``AGENTOPS_WATCH_PATHS`` set it
follows those transcript folders (`sessions_app.ingest.tail_store.start_with`); with
``AGENTOPS_OTLP_GRPC_ADDRESS`` set it serves OTLP/gRPC there too
(`sessions_app.otlp.grpc_server`).
"""

from __future__ import annotations

import os

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agentops.settings")
# Django must be set up before anything imports models (channels routing does).
django.setup(set_prefix=False)

from agentops.handlers import MachineHandler, WebHandler, route_http  # noqa: E402

# The machine endpoints (/api/, /v1/) by their own lean handler, pages by Django's chain.
machine_handler = MachineHandler()
django_asgi_app = route_http(WebHandler(), machine_handler)

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from django.conf import settings  # noqa: E402

from agentops.origins import SettingsOriginValidator  # noqa: E402
from sessions_app.live.routing import websocket_urlpatterns  # noqa: E402

application = ProtocolTypeRouter(
    {
        "http": django_asgi_app,
        "websocket": SettingsOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns))),
    }
)

# Turns a crashed or stopped predecessor left running are recorded abandoned on the first
# call this process serves (sessions_app.live.stuck; daphne has no lifespan events).
from sessions_app.live.stuck import recover_on_first_call  # noqa: E402

application = recover_on_first_call(application)

if settings.AGENTOPS_LIVE_DEMO:
    from sessions_app.live.demo_live import start_with

    application = start_with(application)

# AGENTOPS_WATCH_PATHS: this server process also follows those transcript folders
# (`manage.py watch_transcripts` in the background; sessions_app.ingest.tail_store).
if settings.AGENTOPS_WATCH_PATHS:
    from sessions_app.ingest.tail_store import start_with as watch_with

    application = watch_with(application)

# AGENTOPS_OTLP_GRPC_ADDRESS: this server process also serves OTLP/gRPC there
# (sessions_app.otlp.grpc_server), on its own event loop, beside OTLP/HTTP.
if settings.AGENTOPS_OTLP_GRPC_ADDRESS:
    from sessions_app.otlp.grpc_server import start_with as grpc_with

    application = grpc_with(application)

# The garbage collector, tuned for a server (AGENTOPS_GC_THRESHOLD, `agentops.collector`)
# once everything it needs at start-up is loaded.
from agentops.collector import tune_collector  # noqa: E402

tune_collector()
