"""Token totals and cost: summed by the database from the events' `usage` JSON.

Every importer and the runtime store usage as `{prompt_tokens, completion_tokens,
total_tokens, details}` (`agentops.runtime.model.Usage`); `details` keeps the provider's
own figures. Input = `prompt_tokens` (for Claude Code it already includes cache reads and
writes), output = `completion_tokens`, cached = the provider's cache-read count found in
`details`: `cache_read_input_tokens` (Anthropic, Claude Code), `cached_input_tokens`
(Codex CLI) or `prompt_tokens_details.cached_tokens` (OpenAI). Cached tokens are part of
the input. A value that is not a JSON number counts 0, so odd imports never break a page.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import BigIntegerField, Func, OuterRef, Subquery, Sum, Value
from django.db.models.functions import Coalesce
from django.db.models.sql.compiler import SQLCompiler

from sessions_app.models import Event, TurnQuerySet

_KEY = re.compile(r"^[a-z_]+$")
#: The largest token count summed (absurd values are capped so a sum never overflows a
#: bigint); negative ones count 0.
TOKEN_MAX = 10**15


class JsonNumber(Func):
    """The number at `path` inside the JSON column `column`, as an integer between 0 and
    10^15; 0 when it is missing or not a number. `path` keys come from code, never from
    users (checked against `[a-z_]+`)."""

    output_field = BigIntegerField()

    def __init__(self, column: str, *path: str) -> None:
        if not path or not all(_KEY.match(key) for key in path):
            raise ValueError(f"bad JSON path {path!r}")
        self.path = path
        super().__init__(column)

    def as_sqlite(
        self, compiler: SQLCompiler, connection: BaseDatabaseWrapper, **extra: Any
    ) -> tuple[str, Any]:
        sql, params = compiler.compile(self.source_expressions[0])
        at = "'$." + ".".join(self.path) + "'"
        value = f"json_extract({sql}, {at})"
        template = (
            f"(CASE WHEN json_type({sql}, {at}) IN ('integer', 'real') "
            f"THEN CAST(min(max({value}, 0), {TOKEN_MAX}) AS INTEGER) ELSE 0 END)"
        )
        return template, [*params, *params, *params, *params]

    def as_postgresql(
        self, compiler: SQLCompiler, connection: BaseDatabaseWrapper, **extra: Any
    ) -> tuple[str, Any]:
        sql, params = compiler.compile(self.source_expressions[0])
        at = "'{" + ",".join(self.path) + "}'"
        template = (
            f"(CASE WHEN jsonb_typeof({sql} #> {at}) = 'number' "
            f"THEN LEAST(GREATEST(({sql} #>> {at})::numeric, 0), {TOKEN_MAX})::bigint ELSE 0 END)"
        )
        return template, [*params, *params]


def token_expressions() -> dict[str, Any]:
    """{"input", "output", "cached"}: an event's token figures as SQL expressions."""
    return {
        "input": JsonNumber("usage", "prompt_tokens"),
        "output": JsonNumber("usage", "completion_tokens"),
        "cached": JsonNumber("usage", "details", "cache_read_input_tokens")
        + JsonNumber("usage", "details", "cached_input_tokens")
        + JsonNumber("usage", "details", "prompt_tokens_details", "cached_tokens"),
    }


def _sum_subquery(events: Any, expression: Any) -> Coalesce:
    summed = (
        events.filter(usage__isnull=False)
        .order_by()
        .values("session")
        .annotate(total=Sum(expression))
        .values("total")
    )
    return Coalesce(Subquery(summed, output_field=BigIntegerField()), Value(0))


def with_turn_tokens(turns: TurnQuerySet) -> TurnQuerySet:
    """Annotate `tokens_input`, `tokens_output`, `tokens_cached` (ints) on turns: sums
    over the active events carrying the turn's id. Correlated subqueries."""
    events = Event.objects.active().filter(session=OuterRef("session"), turn_id=OuterRef("pk"))
    return turns.annotate(
        **{
            f"tokens_{name}": _sum_subquery(events, expr)
            for name, expr in token_expressions().items()
        }
    )


def cost_of(
    model: str, input_tokens: int, output_tokens: int, cached_tokens: int
) -> Decimal | None:
    """Dollars for these tokens at `settings.AGENTOPS_MODEL_PRICES[model]` ($ per million
    tokens for `input`, `output` and `cached`; cached defaults to the input price), or None
    when the model has no price. Cached tokens are billed at the cached price, the rest of
    the input at the input price."""
    prices = settings.AGENTOPS_MODEL_PRICES.get(model) if model else None
    if prices is None:
        return None
    uncached = max(input_tokens - cached_tokens, 0)
    cached_price = prices.get("cached", prices["input"])
    total = (
        Decimal(uncached) * Decimal(str(prices["input"]))
        + Decimal(min(cached_tokens, input_tokens)) * Decimal(str(cached_price))
        + Decimal(output_tokens) * Decimal(str(prices["output"]))
    )
    return total / Decimal(1_000_000)


@dataclass(frozen=True)
class TokenTotals:
    """Token figures of a session or turn, and their cost in dollars (None: no price for
    the model). `of` reads the `tokens_*` columns of a session (kept as events are written,
    `store.page_facts`) or the annotations of
    `with_turn_tokens`."""

    input: int
    output: int
    cached: int
    cost: Decimal | None

    @classmethod
    def of(cls, row: Any, model: str) -> TokenTotals:
        """The totals of an annotated row, priced for `model`."""
        values = (int(row.tokens_input), int(row.tokens_output), int(row.tokens_cached))
        return cls(*values, cost=cost_of(model, *values))

    @property
    def total(self) -> int:
        """Input plus output tokens."""
        return self.input + self.output


def session_token_totals(session: Any) -> TokenTotals:
    """The token totals of `session`'s active events, priced for its model (the session
    page's header): the session row's kept sums (`store.page_facts`), no query."""
    values = (session.tokens_input, session.tokens_output, session.tokens_cached)
    return TokenTotals(*values, cost=cost_of(session.model, *values))
