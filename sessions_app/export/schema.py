"""The JSON Schema of the export format, generated from its models (`export.format`).

`docs/session-export.schema.json` is this schema as committed; `manage.py export_schema
--write` rewrites it, and a test fails while the committed file differs from what the
models generate.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic.json_schema import GenerateJsonSchema
from pydantic_core import core_schema

from sessions_app.export.format import ExportDocument

SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
SCHEMA_ID = "https://agentops.invalid/schemas/session-export-1.json"
#: Where the generated schema is committed.
SCHEMA_PATH = Path(__file__).resolve().parents[2] / "docs" / "session-export.schema.json"


class _ExportSchemaGenerator(GenerateJsonSchema):
    """pydantic's generator without a title on every property (the names say it)."""

    def field_title_should_be_set(
        self, schema: core_schema.CoreSchema | core_schema.ModelField | Any
    ) -> bool:
        return False


#: The order of the top-level keys: what the schema is first, the definitions last.
_TOP_LEVEL_ORDER = (
    "$schema",
    "$id",
    "title",
    "description",
    "type",
    "required",
    "additionalProperties",
    "properties",
    "$defs",
)


def export_json_schema() -> dict[str, Any]:
    """The export format's JSON Schema (draft 2020-12): `$schema`, `$id`, title and
    description first, then the document's properties, then the `$defs` they refer to."""
    generated = ExportDocument.model_json_schema(schema_generator=_ExportSchemaGenerator)
    generated |= {
        "$schema": SCHEMA_DIALECT,
        "$id": SCHEMA_ID,
        # The model's docstring, as one line.
        "description": " ".join(generated["description"].split()),
    }
    order = {key: n for n, key in enumerate(_TOP_LEVEL_ORDER)}
    return dict(sorted(generated.items(), key=lambda item: order.get(item[0], len(order))))


def export_schema_text() -> str:
    """`export_json_schema()` as the committed file holds it: 2-space indent, non-ASCII
    kept, one newline at the end."""
    return json.dumps(export_json_schema(), indent=2, ensure_ascii=False) + "\n"
