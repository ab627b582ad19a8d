"""The dashboard's pages about sessions, one module per page.

- `sessions`: the sessions list (GET /sessions/), filtered by URL.
- `session`: the session page (timeline of turns), the lazily loaded chunks of a turn's
  events, and the raw JSON of one event.
- `context`: what the next turn's agent would be sent (the product projection explained).
- `protocol`: unanswered tool calls, and recording what became of one (admins).
- `find`: find within one session (its events holding the words, with `snippets`).
- `docs`: the project's own documentation (`docs/*.md`) at /docs/.
- `presenters`: stored events turned into what the pages show (tool calls paired with
  their results, and how long they took; images in results by `images`); `rendering`:
  untrusted model output made safe (Markdown, JSON).

Views are thin function views: queries live on the model querysets, access checks in
`sessions_app.access`, presentation in `presenters`. A view that answers an htmx request
with a partial (`template.html#fragment`) and a normal request with the whole page says
so with `Vary: HX-Request`. `sessions_app.urls` imports the views from their modules;
other rooms use `presenters` (the live updates render events with it).
"""

from __future__ import annotations

from sessions_app.pages import presenters

__all__ = ["presenters"]
