"""What an import replaces: the replace rules of `import_file`.

A changed version of a file replaces its sessions: sessions imported from the same path
are deleted and the new ones written. When that would lose history (a session the new
version no longer holds, or one that now holds fewer events than are stored), the file is
refused unless the caller asks to replace. A session id that exists from another source
(another file, the runtime, the demo) refuses the file, unless the caller asks to replace
such sessions.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from django.db.models import Count

from sessions_app.ingest.errors import ImportRefusedError
from sessions_app.ingest.parsed import ParsedSession
from sessions_app.ingest.writer import stored_path, stored_source_path
from sessions_app.models import Event, ImportedFile, Session


@dataclass(slots=True)
class Replacement:
    """What importing a file replaces: `session_ids` (sessions to delete before the new
    ones are written: existing ones with the file's ids, then sessions an older version of
    the file held that this one does not) and `stale_records` (primary keys of the
    `ImportedFile` records that no longer describe the database)."""

    session_ids: list[str]
    stale_records: list[int]


def _origin(source_format: str, source_path: str) -> str:
    label = (
        Session.SourceFormat(source_format).label
        if source_format in Session.SourceFormat.values
        else source_format
    )
    return f"{label}, {source_path}" if source_path else label


def plan_replacement(path: Path | str, sessions: list[ParsedSession], replace: bool) -> Replacement:
    """The sessions and import records that importing `sessions` from `path` replaces.

    Call inside the import's transaction. Raises `ImportRefusedError`, unless `replace`
    is set, when a session id exists from another source (another file, the runtime, the
    demo), or when the import would drop stored history: a session an older version of
    this file held that this one does not, or fewer events than are stored.
    """
    ids = [s.id for s in sessions]
    sources = {s.id: stored_source_path(s, str(path)) for s in sessions}
    existing = list(
        Session.objects.filter(id__in=ids).values_list("id", "source_format", "source_path")
    )
    for session_id, old_format, old_path in existing:
        same_file = old_path == sources[session_id] and old_format not in (
            Session.SourceFormat.RUNTIME,
            Session.SourceFormat.DEMO,
        )
        if not (same_file or replace):
            raise ImportRefusedError(
                path,
                f"session {session_id!r} already exists ({_origin(old_format, old_path)}); "
                "nothing was imported (replace it with --replace)",
            )
    # Records of older versions of this file (or of these sessions) no longer
    # describe the database; sessions an older version of this file held go too.
    here = stored_path(str(path))
    stale = [
        f
        for f in ImportedFile.objects.only("pk", "path", "session_ids")
        if f.path == here or set(f.session_ids) & set(ids)
    ]
    dropped = {sid for f in stale if f.path == here for sid in f.session_ids} - set(ids)
    dropped_here = list(
        Session.objects.filter(id__in=dropped, source_path=here).values_list("id", flat=True)
    )
    if not replace:
        _refuse_lost_history(path, sessions, [i for i, _f, _p in existing], dropped_here)
    return Replacement(
        session_ids=[i for i, _f, _p in existing] + sorted(dropped_here),
        stale_records=[f.pk for f in stale],
    )


def _refuse_lost_history(
    path: Path | str, sessions: list[ParsedSession], existing: list[str], dropped: list[str]
) -> None:
    """Raise `ImportRefusedError` when replacing `existing` (and deleting `dropped`) would
    lose stored events."""
    if dropped:
        raise ImportRefusedError(
            path,
            f"this version no longer holds session(s) {', '.join(sorted(dropped))[:300]}; "
            "importing it would delete them: nothing was imported (use --replace)",
        )
    stored = dict(
        Event.objects.filter(session_id__in=existing)
        .values_list("session_id")
        .annotate(n=Count("id"))
        .values_list("session_id", "n")
    )
    for parsed in sessions:
        before = stored.get(parsed.id, 0)
        if before > len(parsed.events):
            raise ImportRefusedError(
                path,
                f"session {parsed.id!r} has {before} stored events and this version "
                f"{len(parsed.events)}; importing it would drop {before - len(parsed.events)}: "
                "nothing was imported (use --replace)",
            )
