"""What the benchmarks run in subprocesses, as real modules (linted and type-checked).

Each Django child has a ``main(argv)`` that sets Django up (on the ``DATABASE_URL`` its
parent gives it, a scratch database, never the dev one), measures, and prints one JSON
object as its last line of output; parents run them as
``python -m sessions_app.benchmarks.children.<module> ARGS`` through
`sessions_app.benchmarks.run_django_child` or `run_json_process`:

- `import_child`: `bench import`, the timed import of one transcript file;
- `page_child`: `bench page`, the pages of one generated session;
- `live_child`: `bench live`, watcher latency and fan-out on one channel layer;
- `append_child`: `bench append`, our store's durable appends.

`adk_append_peer` is the exception: the peer's side of `bench append`, run by the python
of google-adk's own virtual environment, where this project is not installed, as
``python path/to/adk_append_peer.py ARGS``; it imports nothing from this project.

Nothing here is imported by `load_all` (it imports only this package's modules one level
up), so registering benchmarks never touches Django or google-adk.
"""
