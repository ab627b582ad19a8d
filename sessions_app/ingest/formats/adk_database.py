"""Google ADK `DatabaseSessionService` databases: a SQLite file (what `adk web` and ADK
apps write) or a PostgreSQL database named by URL.

Schemas (google/adk-python `sessions/schemas/v0.py` and `v1.py`; tests/fixtures/adk has
databases written by google-adk 2.13 itself):

- both: `sessions(app_name, user_id, id, state JSON, create_time, update_time)`,
  `app_states(app_name, state)`, `user_states(app_name, user_id, state)`; events in
  `events(id, app_name, user_id, session_id, invocation_id, timestamp, ...)`;
- v0: one column per event field (`author`, `branch`, `content` JSON, `actions` a
  pickled `EventActions`, `long_running_tool_ids_json`, `partial`, `turn_complete`,
  `error_code`, `error_message`, `interrupted`, ...);
- v1: `event_data` JSON (`Event.model_dump(exclude_none=True, mode="json")`) and an
  `adk_internal_metadata(key, value)` table with `schema_version`.

Each session is read as ADK's own `get_session` reads it (app and user state merged in
under their `app:` / `user:` prefixes, events in timestamp order) and then parsed by the
ADK session rules (`google_adk.adk_session`). Databases are opened read-only. The v0
`actions` pickle is never executed: `SafeUnpickler` resolves no global at all (every
class becomes an inert stand-in), so only the data it holds (the state delta) is read.
"""

from __future__ import annotations

import hashlib
import io
import json
import pickle
import sqlite3
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

from sessions_app.ingest.errors import ImportRefusedError, UnknownFormatError
from sessions_app.ingest.formats.google_adk import adk_session
from sessions_app.ingest.normalise import json_or_none
from sessions_app.ingest.parsed import ImportProblem, ParseResult
from sessions_app.ingest.registry import DatabaseFormat
from sessions_app.models import Session

SQLITE_HEADER = b"SQLite format 3\x00"
SESSION_COLUMNS = ("app_name", "user_id", "id", "state", "create_time", "update_time")
V0_EVENT_COLUMNS = (
    "id",
    "app_name",
    "user_id",
    "session_id",
    "invocation_id",
    "author",
    "branch",
    "timestamp",
    "content",
    "actions",
    "long_running_tool_ids_json",
    "partial",
    "turn_complete",
    "error_code",
    "error_message",
    "interrupted",
)
V1_EVENT_COLUMNS = ("id", "app_name", "user_id", "session_id", "invocation_id", "timestamp")


class _Stand_in:
    """What `SafeUnpickler` builds instead of any class: holds args and state, runs
    nothing."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.args = args
        self.state: Any = None

    def __setstate__(self, state: Any) -> None:
        self.state = state

    def __call__(self, *args: Any, **kwargs: Any) -> _Stand_in:
        return _Stand_in(*args)


class SafeUnpickler(pickle.Unpickler):
    """An unpickler that never imports or calls anything: every global is a stand-in."""

    def find_class(self, module: str, name: str) -> Any:
        """Any class or function the pickle names: an inert stand-in."""
        return _Stand_in


def _plain(value: Any, depth: int = 0) -> Any:
    """A stand-in tree as plain JSON-able values (a pydantic model's fields as a dict)."""
    if depth > 50:
        return None
    if isinstance(value, _Stand_in):
        state = value.state
        if isinstance(state, tuple) and state and isinstance(state[0], dict):
            state = state[0]
        if isinstance(state, dict) and isinstance(state.get("__dict__"), dict):
            state = state["__dict__"]
        if state is None and value.args:
            return _plain(value.args[0], depth + 1)
        return _plain(state, depth + 1)
    if isinstance(value, dict):
        return {str(k): _plain(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_plain(v, depth + 1) for v in value]
    if isinstance(value, bytes | bytearray):
        return f"<{len(value)} bytes>"
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)


def read_actions(blob: Any) -> dict[str, Any]:
    """The fields of a v0 pickled `EventActions` (or a JSON text of them) as a dict; {}
    for what cannot be read."""
    if isinstance(blob, memoryview):
        blob = blob.tobytes()
    if isinstance(blob, str):
        return json_or_none(blob) or {}
    if not isinstance(blob, bytes | bytearray) or not blob:
        return {}
    try:
        value = _plain(SafeUnpickler(io.BytesIO(bytes(blob))).load())
    except Exception:
        return {}
    return value if isinstance(value, dict) else {}


def _time(value: Any) -> Any:
    """A timestamp column (SQLite text, PostgreSQL naive datetime: both UTC) as ISO text."""
    if isinstance(value, datetime):
        return (value if value.tzinfo else value.replace(tzinfo=UTC)).isoformat()
    return value


def _v0_event(row: dict[str, Any]) -> dict[str, Any]:
    event = {k: row[k] for k in ("id", "invocation_id", "author", "branch")}
    event["timestamp"] = _time(row["timestamp"])
    event["content"] = json_or_none(row["content"])
    event["actions"] = read_actions(row["actions"])
    event["long_running_tool_ids"] = json_or_none(row["long_running_tool_ids_json"]) or []
    for key in ("partial", "turn_complete", "error_code", "error_message", "interrupted"):
        if row[key] is not None:
            event[key] = (
                bool(row[key]) if key in ("partial", "turn_complete", "interrupted") else row[key]
            )
    return event


def _v1_event(row: dict[str, Any]) -> dict[str, Any]:
    data = json_or_none(row["event_data"])
    event = dict(data) if isinstance(data, dict) else {}
    event.setdefault("id", row["id"])
    event.setdefault("invocation_id", row["invocation_id"])
    event.setdefault("timestamp", _time(row["timestamp"]))
    return event


def sessions_from_rows(
    name: str,
    version: str,
    sessions: Iterable[dict[str, Any]],
    events: Iterable[dict[str, Any]],
    app_states: dict[str, Any],
    user_states: dict[tuple[str, str], Any],
) -> ParseResult:
    """Parse the rows of an ADK database (`version` "0" or "1") into sessions, each as
    ADK's `get_session` would return it."""
    problems: list[ImportProblem] = []
    by_key: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for row in events:
        key = (row["app_name"], row["user_id"], row["session_id"])
        by_key.setdefault(key, []).append(_v1_event(row) if version == "1" else _v0_event(row))
    result = ParseResult(sessions=[], problems=problems)
    for row in sessions:
        key = (row["app_name"], row["user_id"], row["id"])
        state = json_or_none(row["state"])
        state = dict(state) if isinstance(state, dict) else {}
        for k, v in (json_or_none(app_states.get(row["app_name"])) or {}).items():
            state[f"app:{k}"] = v
        for k, v in (json_or_none(user_states.get(key[:2])) or {}).items():
            state[f"user:{k}"] = v
        document = {
            "id": row["id"],
            "app_name": row["app_name"],
            "user_id": row["user_id"],
            "state": state,
            "events": by_key.get(key, []),
            "last_update_time": _time(row["update_time"]),
        }
        parsed = adk_session(name, document, problems, Session.SourceFormat.ADK_DATABASE, row["id"])
        if parsed is None:
            problems.append(ImportProblem(name, 0, f"session {row['id']!r} has no events"))
        else:
            result.sessions.append(parsed)
    return result


def _query(cursor: Any, sql: str) -> list[dict[str, Any]]:
    cursor.execute(sql)
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def _read(cursor: Any, columns: dict[str, set[str]], name: str) -> tuple[ParseResult, str]:
    """Read every table of an ADK database through a DB-API cursor; (result, digest)."""
    event_columns = columns.get("events", set())
    if not {"sessions", "events"} <= set(columns) or "invocation_id" not in event_columns:
        raise UnknownFormatError(name, "not a Google ADK session database")
    version = "1" if "event_data" in event_columns else "0"
    wanted = (*V1_EVENT_COLUMNS, "event_data") if version == "1" else V0_EVENT_COLUMNS
    missing = [c for c in wanted if c not in event_columns]
    missing += [c for c in SESSION_COLUMNS if c not in columns["sessions"]]
    if missing:
        raise ImportRefusedError(
            name, f"ADK database schema v{version} lacks columns {', '.join(missing)}"
        )
    sessions = _query(
        cursor, f"SELECT {', '.join(SESSION_COLUMNS)} FROM sessions ORDER BY create_time, id"
    )
    order = "app_name, user_id, session_id, timestamp, id"
    events = _query(cursor, f"SELECT {', '.join(wanted)} FROM events ORDER BY {order}")
    app_states: dict[str, Any] = {}
    user_states: dict[tuple[str, str], Any] = {}
    if "app_states" in columns:
        app_states = {
            r["app_name"]: r["state"]
            for r in _query(cursor, "SELECT app_name, state FROM app_states")
        }
    if "user_states" in columns:
        user_states = {
            (r["app_name"], r["user_id"]): r["state"]
            for r in _query(cursor, "SELECT app_name, user_id, state FROM user_states")
        }
    digest = hashlib.sha256(
        json.dumps(
            [sessions, events, app_states, sorted(user_states.items())], default=str
        ).encode()
    ).hexdigest()
    return sessions_from_rows(name, version, sessions, events, app_states, user_states), digest


def is_sqlite(path: Path) -> bool:
    """True when `path` starts with the SQLite file header."""
    try:
        with path.open("rb") as handle:
            return handle.read(len(SQLITE_HEADER)) == SQLITE_HEADER
    except OSError:
        return False


def read_sqlite(path: Path) -> ParseResult:
    """Every session of an ADK SQLite database, opened read-only. Raises
    `UnknownFormatError` for a SQLite file that is not an ADK database and
    `ImportRefusedError` for one that cannot be read."""
    try:
        connection = sqlite3.connect(f"file:{quote(str(path.resolve()))}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        raise ImportRefusedError(path, f"cannot open SQLite database ({exc})") from None
    try:
        cursor = connection.cursor()
        tables = [r[0] for r in cursor.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        columns = {
            t: {r[1] for r in cursor.execute(f"PRAGMA table_info({quote_ident(t)})")}
            for t in tables
        }
        result, _digest = _read(cursor, columns, str(path))
        return result
    except sqlite3.Error as exc:
        raise ImportRefusedError(path, f"cannot read SQLite database ({exc})") from None
    finally:
        connection.close()


def quote_ident(name: str) -> str:
    """`name` as a quoted SQL identifier."""
    return '"' + name.replace('"', '""') + '"'


def is_database_url(value: str) -> bool:
    """True for a PostgreSQL URL (`postgresql://...` or `postgres://...`)."""
    return value.startswith(("postgresql://", "postgres://"))


def shown_url(url: str) -> str:
    """`url` without its password (what reports and `source_path` show)."""
    scheme, _, rest = url.partition("://")
    if "@" in rest.split("/", 1)[0]:
        userinfo, _, host = rest.partition("@")
        rest = f"{userinfo.split(':', 1)[0]}@{host}"
    return f"{scheme}://{rest}"


def read_postgres(url: str) -> tuple[ParseResult, str]:
    """Every session of an ADK PostgreSQL database (read-only transaction; the URL's
    `options` may set `search_path`), and a digest of its rows. Raises
    `ImportRefusedError` when the database cannot be read, `UnknownFormatError` when it
    holds no ADK tables."""
    import psycopg

    label = shown_url(url)
    try:
        with psycopg.connect(url, autocommit=False) as connection:
            connection.read_only = True
            with connection.cursor() as cursor:
                rows = _query(
                    cursor,
                    "SELECT table_name, column_name FROM information_schema.columns "
                    "WHERE table_schema = current_schema()",
                )
                columns: dict[str, set[str]] = {}
                for row in rows:
                    columns.setdefault(row["table_name"], set()).add(row["column_name"])
                return _read(cursor, columns, label)
    except psycopg.Error as exc:
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ImportRefusedError(label, f"cannot read database ({reason})") from None


FORMAT = DatabaseFormat(
    name=Session.SourceFormat.ADK_DATABASE,
    looks_like_file=is_sqlite,
    parse_path=read_sqlite,
)
