"""Session export: one JSON document per session (`agentops.session-export/1`).

- `format`: the format as pydantic models (the one definition: the JSON Schema in
  `docs/session-export.schema.json` is generated from them, and the importer validates
  exports with them).
- `schema`: generating and checking that JSON Schema (`manage.py export_schema`).
- `build`: a stored session as an export document (`build_export`).
- `views`: the download (GET /sessions/<id>/export/).
"""

from __future__ import annotations

from sessions_app.export.build import build_export
from sessions_app.export.format import EXPORT_SCHEMA

__all__ = ["EXPORT_SCHEMA", "build_export"]
