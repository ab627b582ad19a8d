"""Settings for agentops: one module, every value read from the environment.

Each variable, its default and meaning is listed in `.env.example` and the README.
The defaults are the embedded ones (SQLite file in the project directory, in-memory
channel layer), so a fresh machine needs no service. A malformed value fails loudly at
start-up with `ImproperlyConfigured` naming the variable.
"""

from __future__ import annotations

import json
import os
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlsplit

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent


def envstr(name: str, default: str) -> str:
    """The variable as a string, or `default` when unset or empty."""
    return os.environ.get(name) or default


def envbool(name: str, default: bool) -> bool:
    """The variable as a boolean: 1/true/yes/on or 0/false/no/off (any case).

    Raises ImproperlyConfigured for any other value.
    """
    raw = os.environ.get(name, "")
    if raw == "":
        return default
    lowered = raw.strip().lower()
    if lowered in {"1", "true", "yes", "on"}:
        return True
    if lowered in {"0", "false", "no", "off"}:
        return False
    raise ImproperlyConfigured(f"{name}={raw!r} is not a boolean (use true or false)")


def envint(name: str, default: int) -> int:
    """The variable as an integer; raises ImproperlyConfigured when it is not one."""
    raw = os.environ.get(name, "")
    if raw == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not an integer") from None


def envlist(name: str, default: list[str]) -> list[str]:
    """The variable as a comma-separated list (blank items dropped)."""
    raw = os.environ.get(name, "")
    if raw == "":
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


def envprices(name: str) -> dict[str, dict[str, float]]:
    """The variable as model prices: a JSON object `{model: {"input": $, "output": $,
    "cached": $}}` in dollars per million tokens (`cached` optional); {} when unset.
    Raises ImproperlyConfigured for anything else."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return {}
    try:
        value = json.loads(raw)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name} is not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise ImproperlyConfigured(f"{name} must be a JSON object of models")
    prices: dict[str, dict[str, float]] = {}
    for model, entry in value.items():
        ok = isinstance(entry, dict) and {"input", "output"} <= entry.keys() <= {
            "input",
            "output",
            "cached",
        }
        numbers = ok and all(
            isinstance(v, int | float) and not isinstance(v, bool) and v >= 0
            for v in entry.values()
        )
        if not numbers:
            raise ImproperlyConfigured(
                f"{name}[{model!r}] must be {{input, output, cached?}} with numbers >= 0"
            )
        prices[model] = {key: float(v) for key, v in entry.items()}
    return prices


DEBUG = envbool("DEBUG", False)
SECRET_KEY = envstr("SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG and envbool("AGENTOPS_REQUIRE_SECRET_KEY", False):
        raise ImproperlyConfigured("SECRET_KEY must be set when AGENTOPS_REQUIRE_SECRET_KEY=true")
    # Local default: good for the embedded demo, never for a shared deployment.
    SECRET_KEY = "agentops-local-insecure-key-set-SECRET_KEY-in-production"

ALLOWED_HOSTS = envlist("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "testserver"])
CSRF_TRUSTED_ORIGINS = envlist("CSRF_TRUSTED_ORIGINS", [])


def envorigins(name: str, default: list[str]) -> list[str]:
    """The variable as a list of origins, each ``scheme://host[:port]`` (no path).

    Raises ImproperlyConfigured for an entry that is not one."""
    origins = envlist(name, default)
    for origin in origins:
        parsed = urlsplit(origin)
        if parsed.scheme not in {"http", "https"} or not parsed.hostname or parsed.path:
            raise ImproperlyConfigured(f"{name}: {origin!r} is not an origin like http://host:port")
    return origins


# Origins whose pages may open the live websocket, compared by scheme, host and port
# (agentops.origins). Default: this machine on the port `dev.py serve` uses (PORT), plus
# the origins trusted for forms.
_PORT = envint("PORT", 8000)
AGENTOPS_ALLOWED_ORIGINS = envorigins(
    "AGENTOPS_ALLOWED_ORIGINS",
    [f"http://127.0.0.1:{_PORT}", f"http://localhost:{_PORT}", *CSRF_TRUSTED_ORIGINS],
)

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "channels",
    "axes",
    "csp",
    "django_htmx",
    "template_partials",
    "ninja",
    "sessions_app",
    "todos_app",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # First after security: an oversized API body is refused before anything reads it.
    "sessions_app.api.middleware.api_body_limit",
    "csp.middleware.CSPMiddleware",
    # whitenoise's static files; asynchronous for every other request (agentops/static_files.py).
    "agentops.static_files.static_files",
    # 400 for a NUL or control character in the path, query or form, before any view.
    "agentops.middleware.reject_unusable_input",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.auth.middleware.LoginRequiredMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # A write that cannot get the database lock in time: 503 + Retry-After, not a 500.
    "agentops.db_busy.DatabaseBusyMiddleware",
    # Last, as django-axes asks: it turns a lockout raised during sign-in into a response.
    "axes.middleware.AxesMiddleware",
]

# The machine endpoints (the HTTP API, the OTLP receiver: programs with an API key, no
# browser session) are served by their own handler with this shorter chain, every hook of
# it on the event loop (agentops/handlers.py): the same security headers, Content-Security-
# Policy, body limit, problem+json answers, input checks and database-busy 503 as pages.
MACHINE_PATH_PREFIXES = ("/api/", "/v1/")
MACHINE_MIDDLEWARE = [
    "agentops.handlers.Security",
    "sessions_app.api.middleware.api_body_limit",
    "agentops.handlers.ContentSecurityPolicy",
    "agentops.middleware.reject_unusable_input",
    "agentops.handlers.Common",
    "agentops.handlers.FrameOptions",
    "agentops.db_busy.DatabaseBusyMiddleware",
]
# Long-lived threads serving machine requests' database work, one request at a time each;
# each keeps its database connection for CONN_MAX_AGE seconds (agentops/handlers.py).
AGENTOPS_MACHINE_THREADS = envint("AGENTOPS_MACHINE_THREADS", 4)
if AGENTOPS_MACHINE_THREADS < 1:
    raise ImproperlyConfigured("AGENTOPS_MACHINE_THREADS must be at least 1")

# A server process (agentops/asgi.py) freezes what it loaded at start-up out of the
# garbage collector's sight and collects its first generation after this many new
# objects (0: Python's default, 700): fewer, shorter collections under load.
AGENTOPS_GC_THRESHOLD = envint("AGENTOPS_GC_THRESHOLD", 50_000)

# Sign-in rate limiting (django-axes): after AXES_FAILURE_LIMIT failed attempts for one
# username from one address, that pair is locked out for AXES_COOLOFF_MINUTES.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = envint("AXES_FAILURE_LIMIT", 5)
AXES_COOLOFF_TIME = timedelta(minutes=envint("AXES_COOLOFF_MINUTES", 15))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
AXES_VERBOSE = False

ROOT_URLCONF = "agentops.urls"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

ASGI_APPLICATION = "agentops.asgi.application"
WSGI_APPLICATION = None

# Database: DATABASE_URL (postgres://..., sqlite:///...), default an SQLite file.
DATABASE_URL = envstr("DATABASE_URL", f"sqlite:///{BASE_DIR / 'db.sqlite3'}")
# A connection is kept this many seconds (0: closed after each request; only the machine
# endpoints' long-lived threads keep one, agentops/handlers.py) and, with
# CONN_HEALTH_CHECKS, checked before it is reused.
_database = dj_database_url.parse(
    DATABASE_URL,
    conn_max_age=envint("CONN_MAX_AGE", 300),
    conn_health_checks=envbool("CONN_HEALTH_CHECKS", True),
)
if _database["ENGINE"] == "django.db.backends.sqlite3":
    _database.setdefault("OPTIONS", {})
    # WAL lets readers (the dashboard) and one writer (a run or an import) overlap;
    # IMMEDIATE takes the write lock at BEGIN so two writers queue instead of deadlocking.
    # The page cache (per connection) and the WAL's checkpoint interval: SQLite's defaults
    # (2 MB, 1000 pages) make a large database's bulk writes read pages back and run a
    # checkpoint (its fsyncs) inside many commits; durability is the same (WAL,
    # synchronous=NORMAL: a commit survives a crash of the process; a power loss may
    # lose the last commits, never corrupt the file), the WAL file grows up to ~40 MB.
    _database["OPTIONS"].update(
        {
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; "
            f"PRAGMA cache_size=-{1024 * envint('SQLITE_CACHE_MB', 64)}; "
            f"PRAGMA wal_autocheckpoint={envint('SQLITE_WAL_AUTOCHECKPOINT_PAGES', 10000)};",
            "transaction_mode": "IMMEDIATE",
            "timeout": envint("SQLITE_TIMEOUT_SECONDS", 20),
        }
    )
    # A file (not :memory:) so a live server in another thread/process sees test data.
    _database["TEST"] = {"NAME": str(BASE_DIR / ".local" / "test-db.sqlite3")}
else:
    # Set explicitly so ChannelsLiveServerTestCase's server finds it (django/channels#2176).
    _database["TEST"] = {"NAME": envstr("TEST_DATABASE_NAME", "test_agentops")}
DATABASES = {"default": _database}
# SQLite: the longest an import holds the one write lock at a time (milliseconds); a longer
# import commits in chunks and lets waiting writers in between (sessions_app.ingest.chunked).
AGENTOPS_IMPORT_LOCK_MS = envint("AGENTOPS_IMPORT_LOCK_MS", 1000)
# Claude Code files of this size or more are imported while they are parsed (flat memory).
AGENTOPS_IMPORT_STREAM_BYTES = envint("AGENTOPS_IMPORT_STREAM_BYTES", 4 << 20)
# PostgreSQL: the append's statements are prepared once run this many times (0: never,
# for a pooler that cannot keep prepared statements; sessions_app/store/prepared.py).
AGENTOPS_PG_PREPARE_THRESHOLD = envint("AGENTOPS_PG_PREPARE_THRESHOLD", 5)

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Channel layer: Redis when REDIS_URL is set (several processes), else in-memory (one process).
REDIS_URL = envstr("REDIS_URL", "")
if REDIS_URL:
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {
                # No client-side socket timeout, as redis-py had before 8.0 (channels_redis
                # #422): receive() blocks in BZPOPMIN for up to 5 s server-side anyway, and
                # with any socket_timeout set redis-py sends each command through
                # asyncio.wait_for, which on Python 3.11 swallows a cancellation that lands
                # just as the send completes (CPython gh-86296, fixed in 3.12). A consumer's
                # receive() then ignores its cancel and keeps popping: disconnects hang
                # (channels awaits the cancelled receive) and so does a run's stop-request
                # listener. Connecting keeps redis-py's 5 s limit; its default TCP keepalive
                # (probes after 30 s idle) notices a peer that vanished.
                "hosts": [{"address": REDIS_URL, "socket_timeout": None}],
                # Room for bursts of streamed fragments per watcher before messages drop.
                "capacity": 1000,
                # Key prefix: deployments (or test runs) sharing one Redis stay apart.
                "prefix": envstr("REDIS_CHANNEL_PREFIX", "asgi"),
            },
        }
    }
else:
    # Channels' in-memory layer without its scan of every channel on each message
    # (sessions_app/live/layers.py).
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "sessions_app.live.layers.InMemoryChannelLayer",
            "CONFIG": {"capacity": 1000},
        }
    }

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "sessions:list"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = envstr("TIME_ZONE", "UTC")
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
# Only for `collectstatic` in a deployment; whitenoise serves from the finders otherwise.
STATIC_ROOT = envstr("STATIC_ROOT", "") or None
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
WHITENOISE_USE_FINDERS = True

SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SECURE = envbool("SECURE_COOKIES", False)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE

# Deployment behind HTTPS (`manage.py check --deploy` passes with these set; README).
SECURE_SSL_REDIRECT = envbool("SECURE_SSL_REDIRECT", False)
SECURE_HSTS_SECONDS = envint("SECURE_HSTS_SECONDS", 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = envbool("SECURE_HSTS_INCLUDE_SUBDOMAINS", False)
SECURE_HSTS_PRELOAD = envbool("SECURE_HSTS_PRELOAD", False)
# Behind a TLS-terminating proxy that sets X-Forwarded-Proto (and strips it from clients).
if envbool("SECURE_PROXY_SSL_HEADER", False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
X_FRAME_OPTIONS = "DENY"

# Content-Security-Policy on every response (django-csp). Scripts and styles only from
# this site's static files: no inline script, no eval (htmx runs with allowEval false, see
# base.html), no inline style (Markdown table alignment becomes a class, rendering.py).
# Images: this site and data: URLs; remote images in transcripts are links, never fetched.
# connect-src 'self' also covers the same-origin ws:/wss: live socket (CSP Level 3).
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "img-src": ["'self'", "data:"],
        "connect-src": ["'self'"],
        "object-src": ["'none'"],
        "frame-ancestors": ["'none'"],
        "base-uri": ["'none'"],
        "form-action": ["'self'"],
    }
}

# Sessions page: rows per page; session page: turns per page (the timeline loads lazily).
AGENTOPS_SESSIONS_PER_PAGE = envint("AGENTOPS_SESSIONS_PER_PAGE", 50)
AGENTOPS_TURNS_PER_PAGE = envint("AGENTOPS_TURNS_PER_PAGE", 20)
AGENTOPS_EVENTS_PER_TURN_PAGE = envint("AGENTOPS_EVENTS_PER_TURN_PAGE", 200)
# Next-context page: entries per page (each is a whole message with its calls and result).
AGENTOPS_CONTEXT_ENTRIES_PER_PAGE = envint("AGENTOPS_CONTEXT_ENTRIES_PER_PAGE", 100)
# Next-context page: a view that would read more events than this (no kept state yet, e.g.
# right after an import) computes them in a background thread and answers at once (0: never).
AGENTOPS_CONTEXT_BACKGROUND_EVENTS = envint("AGENTOPS_CONTEXT_BACKGROUND_EVENTS", 20_000)
# Cost per model (sessions list, session header, triage): $ per million tokens.
AGENTOPS_MODEL_PRICES = envprices("AGENTOPS_MODEL_PRICES")
# Triage queue: a running turn with no new event for this long counts as stuck.
AGENTOPS_STUCK_AFTER_SECONDS = envint("AGENTOPS_STUCK_AFTER_SECONDS", 600)
# Run locks on SQLite (docs/runtime.md §2): one OS file lock per session in this directory
# (created on demand), shared by every process on this machine; PostgreSQL uses advisory locks.
# A relative path is taken from the project directory.
AGENTOPS_LOCK_DIR = BASE_DIR / envstr("AGENTOPS_LOCK_DIR", ".local/locks")
# A running turn's owner renews its lease every third of this; a lease this old means the
# owner is gone (docs/concepts.md "Stuck turns").
AGENTOPS_TURN_LEASE_SECONDS = envint("AGENTOPS_TURN_LEASE_SECONDS", 15)
if AGENTOPS_TURN_LEASE_SECONDS < 3:
    raise ImproperlyConfigured("AGENTOPS_TURN_LEASE_SECONDS must be at least 3")

# Live turns (sessions_app.live): dotted path of the agent factory used for turns started
# from the session page and `manage.py run_turn`: factory(*, todo_store) -> agent.
AGENTOPS_AGENT = envstr("AGENTOPS_AGENT", "agentops.agents.demo.make_agent")
# Dotted path of the function returning the durable TodoStore handed to that factory
# (wiring between the apps, not a deployment choice: sessions_app imports no todos_app).
AGENTOPS_TODO_STORE = "todos_app.store.get_todo_store"
# true: the server process keeps the demo session "demo-live" running a slowly streaming
# turn (set by `python3 dev.py serve`; off everywhere else, tests included).
AGENTOPS_LIVE_DEMO = envbool("AGENTOPS_LIVE_DEMO", False)
# Each live websocket re-reads its sign-in and user this often and closes (4403) when they
# may no longer view sessions; sign-out, deactivation and role changes close it at once.
AGENTOPS_WATCHER_RECHECK_SECONDS = envint("AGENTOPS_WATCHER_RECHECK_SECONDS", 30)
# A live websocket more than this many messages behind is closed (4429) and resumes from
# the database; a session's outbox holds at most this many messages waiting for the
# channel layer (beyond that, its watchers resume from the database too).
AGENTOPS_WATCHER_BACKLOG = envint("AGENTOPS_WATCHER_BACKLOG", 1000)
AGENTOPS_LIVE_OUTBOX_MESSAGES = envint("AGENTOPS_LIVE_OUTBOX_MESSAGES", 10_000)
# On a channel layer of one process (the in-memory default), what other processes write
# (`run_turn`, `watch_transcripts`, `import_sessions` without --to) cannot arrive through
# it: each watched session's database marks are read this often (milliseconds; 0: never)
# and its watchers resume from the database when another process changed it.
AGENTOPS_LIVE_POLL_MS = envint("AGENTOPS_LIVE_POLL_MS", 1000)

# Transcript folders/files `manage.py watch_transcripts` follows when given no PATH
# (comma-separated, `~` expanded); a server process with it set (`dev.py serve`) follows
# them itself in the background (agentops/asgi.py).
AGENTOPS_WATCH_PATHS = envlist("AGENTOPS_WATCH_PATHS", [])
# Seconds a watched transcript must stop growing before its latest turn gets its outcome.
AGENTOPS_WATCH_IDLE_SECONDS = envint("AGENTOPS_WATCH_IDLE_SECONDS", 30)

# HTTP API (/api/v1/): request bodies larger than this many bytes get 413 problem+json.
AGENTOPS_API_MAX_BODY_BYTES = envint("AGENTOPS_API_MAX_BODY_BYTES", 5_000_000)
# Django refuses bodies above DATA_UPLOAD_MAX_MEMORY_SIZE with a plain 400; keep it above.
DATA_UPLOAD_MAX_MEMORY_SIZE = max(2_621_440, AGENTOPS_API_MAX_BODY_BYTES)

# OTLP receiver (/v1/traces, docs/otlp.md): spans per second each API key may send on
# average (0: no limit) and the burst it may send at once; over it: 429 with Retry-After.
# A body may be this many times AGENTOPS_API_MAX_BODY_BYTES once decompressed.
AGENTOPS_OTLP_SPANS_PER_SECOND = envint("AGENTOPS_OTLP_SPANS_PER_SECOND", 50_000)
AGENTOPS_OTLP_BURST_SPANS = envint("AGENTOPS_OTLP_BURST_SPANS", 100_000)
AGENTOPS_OTLP_INFLATE_FACTOR = envint("AGENTOPS_OTLP_INFLATE_FACTOR", 8)
# OTLP/gRPC receiver host:port in the server process (empty: none; dev.py serve: :4317).
AGENTOPS_OTLP_GRPC_ADDRESS = envstr("AGENTOPS_OTLP_GRPC_ADDRESS", "")

# true: the runtime's own events (and the state and failure messages it stores) are
# redacted like imports before the Django store writes them (sessions_app.ingest.redaction).
AGENTOPS_REDACT_RUNTIME_EVENTS = envbool("AGENTOPS_REDACT_RUNTIME_EVENTS", True)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    # A 403 or 400 is logged as one line, without the traceback Django attaches.
    "filters": {"one_line_4xx": {"()": "agentops.middleware.OneLineClientErrors"}},
    "handlers": {
        "console": {"class": "logging.StreamHandler", "filters": ["one_line_4xx"]},
    },
    "root": {"handlers": ["console"], "level": envstr("LOG_LEVEL", "INFO")},
    "loggers": {
        # Replaces Django's own handlers (a second console in DEBUG): one line per record.
        "django": {"handlers": [], "level": "INFO", "propagate": True},
        "django.db.backends": {"level": "INFO"},
    },
}
