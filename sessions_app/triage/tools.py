"""The triage queue's tool facet: which tools the queued turns called, and the queue
narrowed to the turns that called one (`?tool=`).

A turn calls many tools, so this facet is not one of the grouped dimensions. The failed
and interrupted turns' counts are kept (`tally.tallied`); the stuck and blocking turns'
come from one query of their own (`tool_counts`), over their active events (each turn's
events found through the `event_session_turn_idx` index). A turn counts once per tool it
called, however often.
"""

from __future__ import annotations

from django.db import connection
from django.db.models import BooleanField, Exists, OuterRef
from django.db.models.expressions import RawSQL

from sessions_app.models import Event, TurnQuerySet
from sessions_app.search.text import calls_tool_sql
from sessions_app.triage.facets import Facet, FacetValue
from sessions_app.triage.filters import Filters

MAX_TOOLS = 20
"""The most tools the facet lists (most called first); a selected tool is always listed."""


def turns_calling(turns: TurnQuerySet, name: str) -> TurnQuerySet:
    """The turns of `turns` with an active event that calls the tool `name` (exact)."""
    calls = Event.objects.active().filter(
        RawSQL(calls_tool_sql(), [name], output_field=BooleanField()),
        session=OuterRef("session"),
        turn_id=OuterRef("pk"),
    )
    return turns.filter(Exists(calls))


def tool_counts(turns: TurnQuerySet) -> list[tuple[str, int]]:
    """One query: (tool name, how many of `turns` called it), most called first, then by
    name. Calls without a string name are left out."""
    turn_sql, turn_params = turns.order_by().values("session_id", "id").query.sql_with_params()
    if connection.vendor == "postgresql":
        unnest = (
            "jsonb_array_elements(CASE WHEN jsonb_typeof(e.tool_calls) = 'array' "
            "THEN e.tool_calls ELSE '[]'::jsonb END) c"
        )
        name = "CASE WHEN jsonb_typeof(c.value -> 'name') = 'string' THEN c.value ->> 'name' END"
    else:
        unnest = (
            "json_each(CASE WHEN json_type(e.tool_calls) = 'array' "
            "THEN e.tool_calls ELSE '[]' END) c"
        )
        # Nested CASE: json_type() of an element that is not JSON text would raise.
        name = "CASE WHEN c.type = 'object' THEN (CASE WHEN json_type(c.value, '$.name') = "
        name += "'text' THEN json_extract(c.value, '$.name') END) END"
    sql = (
        f"SELECT {name} AS tool, COUNT(DISTINCT e.turn_id) AS n "
        f"FROM {Event._meta.db_table} e "
        f"JOIN ({turn_sql}) q ON q.session_id = e.session_id AND q.id = e.turn_id "
        f"CROSS JOIN {unnest} "
        "WHERE e.deleted_at IS NULL AND e.archived_at IS NULL AND e.tool_calls IS NOT NULL "
        "GROUP BY 1 ORDER BY 2 DESC, 1"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, turn_params)
        return [(str(tool), int(n)) for tool, n in cursor.fetchall() if tool]


def tool_facet(counts: list[tuple[str, int]], filters: Filters) -> Facet:
    """The "Tool" facet from `tool_counts` of the queue under every other filter; a
    selected tool is listed even when no turn called it, so it can be cleared."""
    listed = counts[:MAX_TOOLS]
    selected = filters.tool
    if selected and selected not in {tool for tool, _ in listed}:
        listed.append((selected, dict(counts).get(selected, 0)))
    values = [
        FacetValue(
            value=tool,
            label=tool,
            count=count,
            selected=tool == selected,
            query=filters.query(tool="" if tool == selected else tool),
        )
        for tool, count in listed
    ]
    return Facet(name="tool", label="Tool", values=values)


def merged_counts(*counts: list[tuple[str, int]]) -> list[tuple[str, int]]:
    """Tool counts of disjoint sets of turns added up, most called first, then by name."""
    total: dict[str, int] = {}
    for tool, n in (pair for pairs in counts for pair in pairs):
        total[tool] = total.get(tool, 0) + n
    return sorted(total.items(), key=lambda item: (-item[1], item[0]))
