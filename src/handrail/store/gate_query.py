"""The one query of the events a gate decision reads (runs/gate_store.py), shared by
every store and by the hook's light SQLite path, so it imports nothing.

Each part is found through an index, whatever the length of the run's log: the run's
last `recent` events (the primary key), its first (the folders the run was started
with), its accepted steps and its latest session bindings (the partial indexes of
store/schema.py). The LIKE term is the partial index's own, written out, so that both
planners see the index applies. The rows come in no order (an ORDER BY over the
union would make SQLite read the accepted steps along the primary key): the caller
sorts them by `seq`.
"""

from __future__ import annotations

BINDINGS_READ = 8  # a run is rebound once per session that takes it over: the latest few

_COLUMNS = "seq, type, at, actor, step_id, data, hash"
_QUERY = (
    f"SELECT {_COLUMNS} FROM run_events "
    "WHERE run_id = {mark} AND seq > (SELECT events FROM runs WHERE id = {mark}) - {mark} "
    f"UNION SELECT {_COLUMNS} FROM run_events WHERE run_id = {{mark}} AND seq = 1 "
    f"UNION SELECT {_COLUMNS} FROM run_events WHERE run_id = {{mark}} AND type = 'accepted' "
    f"UNION SELECT * FROM (SELECT {_COLUMNS} FROM run_events "
    "WHERE run_id = {mark} AND type = 'gate' AND data LIKE '{pct}\"bind\":true{pct}' "
    "ORDER BY seq DESC LIMIT {bindings}) AS binds"
)


def gate_events_query(mark: str) -> str:
    """The query with `mark` as its placeholder (`?` or psycopg's `%s`, which takes a
    literal percent sign doubled)."""
    pct = "%%" if mark == "%s" else "%"
    return _QUERY.format(mark=mark, pct=pct, bindings=BINDINGS_READ)


def gate_events_values(run_id: str, recent: int) -> tuple[str | int, ...]:
    return (run_id, run_id, recent, run_id, run_id, run_id)
